"""Process plumbing: running, spawning and stopping processes, and reading their memory from /proc.
Every peer runs in its own session/process group and is registered in CHILDREN, so that it and every
descendant seen can be killed on exit, timeout or Ctrl-C; this module owns that registry, the process-tree
memory readings (VmRSS, Pss, VmHWM), short-command timing, `du` and the progress log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from stats import summary

CHILDREN: set[subprocess.Popen] = set()  # peer processes to kill on the way out


def log(*parts: Any) -> None:
    print("[measure_peers]", *parts, file=sys.stderr, flush=True)


def run(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 900,
    check: bool = True,
) -> subprocess.CompletedProcess:
    log("$", " ".join(map(str, cmd)))
    proc = subprocess.run(
        [str(c) for c in cmd],
        env=env,
        cwd=cwd,
        timeout=timeout,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    if check and proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:])
        raise RuntimeError(f"command failed ({proc.returncode}): {cmd}")
    return proc


def du_bytes(path: Path) -> int:
    total = 0
    for root, dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, f))
                total += st.st_blocks * 512
    return total


# ---------------------------------------------------------------------------------------------
# process tree memory
# ---------------------------------------------------------------------------------------------


def _ppid_map() -> dict[int, int]:
    out: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            out[int(d)] = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError):
            pass
    return out


def descendants(pid: int) -> list[int]:
    ppids = _ppid_map()
    kids: dict[int, list[int]] = {}
    for p, pp in ppids.items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in ppids or p == pid:
            out.append(p)
        todo.extend(kids.get(p, []))
    return [p for p in out if p in ppids]


def _status_kb(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _pss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def tree_memory(pid: int) -> dict[str, Any]:
    """VmRSS summed over the process and all its descendants (plus PSS, which does not double-count
    pages shared between them, and the main process' VmHWM peak)."""
    procs = []
    for p in descendants(pid):
        rss = _status_kb(p, "VmRSS")
        if rss is None:  # kernel thread / gone
            continue
        try:
            comm = Path(f"/proc/{p}/comm").read_text().strip()
        except OSError:
            comm = "?"
        procs.append({"pid": p, "comm": comm, "rss_kb": rss, "pss_kb": _pss_kb(p) or 0})
    rss_total = sum(x["rss_kb"] for x in procs)
    pss_total = sum(x["pss_kb"] for x in procs)
    return {
        "rss_mib": round(rss_total / 1024, 1),
        "pss_mib": round(pss_total / 1024, 1),
        "main_rss_mib": round((_status_kb(pid, "VmRSS") or 0) / 1024, 1),
        "main_hwm_mib": round((_status_kb(pid, "VmHWM") or 0) / 1024, 1),
        "processes": [
            {
                "pid": x["pid"],
                "comm": x["comm"],
                "rss_mib": round(x["rss_kb"] / 1024, 1),
                "pss_mib": round(x["pss_kb"] / 1024, 1),
            }
            for x in procs
        ],
    }


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by the process and its live descendants, from
    /proc/<pid>/stat; a difference of two readings is what the tree spent in between."""
    ticks = 0
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except (OSError, ValueError, IndexError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------
# spawning and killing
# ---------------------------------------------------------------------------------------------


def spawn(cmd: list[str], env: dict[str, str], logfile: Path, cwd: Path) -> subprocess.Popen:
    out = open(logfile, "wb")  # noqa: SIM115 - closed in stop()
    proc = subprocess.Popen(
        [str(c) for c in cmd],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    proc._bench_log = out  # type: ignore[attr-defined]
    CHILDREN.add(proc)
    return proc


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group, wait, then SIGKILL the group and every descendant still alive
    (children that moved to another group/session included)."""
    seen = set(descendants(proc.pid)) if proc.poll() is None else set()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    seen |= set(descendants(proc.pid)) if proc.poll() is None else set()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for p in seen:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    deadline = time.time() + 5
    while time.time() < deadline and any(
        Path(f"/proc/{p}").exists() and _status_kb(p, "VmRSS") for p in seen
    ):
        time.sleep(0.05)
    with contextlib.suppress(Exception):
        proc._bench_log.close()  # type: ignore[attr-defined]
    CHILDREN.discard(proc)


def _cleanup_all(*_: Any) -> None:
    for p in list(CHILDREN):
        with contextlib.suppress(Exception):
            stop(p, grace=3)


def _on_signal(signum: int, _frame: Any) -> None:
    _cleanup_all()
    raise SystemExit(128 + signum)


def time_once(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 60) -> tuple[float, int]:
    """Wall time and exit code of one run of a short command (stdout/stderr to /dev/null)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(c) for c in cmd],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    # a blocking waitpid (Popen.wait(timeout=...) polls with sleeps of up to 50 ms, which would
    # quantize the result); a timer kills the group if it hangs
    killer = threading.Timer(timeout, lambda p=proc: _killpg_quiet(p.pid))
    killer.start()
    rc = proc.wait()
    dt = time.perf_counter() - t0
    killer.cancel()
    return dt, rc


def time_command(
    cmd: list[str], env: dict[str, str], runs: int, cwd: Path, timeout: float = 60
) -> dict[str, Any]:
    """Wall time of a short command: 1 warm-up, then `runs` timed runs."""
    times, rcs = [], []
    for i in range(runs + 1):
        dt, rc = time_once(cmd, env, cwd, timeout)
        if i:
            times.append(dt)
            rcs.append(rc)
    return {**summary(times), "exit_codes": sorted(set(rcs))}


def _killpg_quiet(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def idle_rss(cmd: list[str], wait: float) -> dict[str, Any]:
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    CHILDREN.add(proc)
    proc._bench_log = None  # type: ignore[attr-defined]
    try:
        time.sleep(wait)
        m = tree_memory(proc.pid)
        return {"rss_mib": m["rss_mib"], "pss_mib": m["pss_mib"]}
    finally:
        stop(proc, grace=2)
