"""What runs inside a bubblewrap sandbox, read from the host's /proc without entering it.

Rlimits are per process, so a skill that leaves work behind after a call (a relay of forked CPU
burners, a thread, a signal timer in the SDK process itself) would use the machine until the
sandbox dies. Between calls a sandbox must therefore be idle: bwrap, bwrap's init (pid 1 inside)
and the SDK (pid 2 inside, one thread) blocked reading its next request, nothing else. Two checks:

* the process tree under bwrap: any other process (a zombie too) or a second SDK thread is a stray;
* counters that only move when something runs: CPU time, scheduler runs and page faults of the SDK
  and of init, including those of reaped children. A fork-and-exit relay whose members live for
  microseconds can slip past any single scan, but init reaps each member and its counters move; a
  signal handler runs inside the SDK process and moves the SDK's.

Everything here is read-only and works for any uid: `stat`, `status`, `schedstat` and `children`
are world-readable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_PROCESSES = 4096
"""A tree larger than this is not walked further: it is strays either way."""
_HAS_CHILDREN_FILE = Path(f"/proc/self/task/{os.getpid()}/children").exists()


@dataclass(frozen=True)
class Snapshot:
    """`strays`: what should not be in an idle sandbox (empty when all is well); `counters`: equal
    in two snapshots of an idle sandbox, different as soon as anything in it ran in between."""

    strays: tuple[str, ...]
    counters: tuple[int, ...]


@dataclass(frozen=True)
class _Proc:
    pid: int
    state: str
    threads: int
    counters: tuple[int, ...]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _proc(pid: int) -> _Proc | None:
    """One process's state, thread count and run counters (None once it is gone)."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None or ")" not in stat:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # fields[0] is field 3 (state) of proc(5)
    try:
        # minflt cminflt majflt cmajflt utime stime cutime cstime (fields 10-17)
        counters = tuple(int(v) for v in fields[7:15])
        threads = int(fields[17])
    except (IndexError, ValueError):
        return None
    sched = _read(f"/proc/{pid}/schedstat")  # ns on CPU, ns waiting, times run: absent without schedstats
    extra = tuple(int(v) for v in sched.split()[:3]) if sched and sched.split()[:3] else ()
    return _Proc(pid, fields[0], threads, counters + extra)


def _nspid(pid: int) -> int | None:
    """The process's pid in its innermost pid namespace."""
    for line in (_read(f"/proc/{pid}/status") or "").splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return None


def _children(pid: int) -> list[int]:
    """Direct children of every thread of `pid` (orphans inside the sandbox are reparented to its
    init, which is itself under bwrap, so walking children from bwrap finds the whole sandbox)."""
    if not _HAS_CHILDREN_FILE:  # a kernel without CONFIG_PROC_CHILDREN: scan every process's parent
        return _scan_children(pid)
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        found += [int(c) for c in (_read(f"/proc/{pid}/task/{tid}/children") or "").split()]
    return found


def _scan_children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        stat = _read(f"/proc/{entry}/stat") if entry.isdigit() else None
        if stat and ")" in stat and stat.rsplit(")", 1)[1].split()[1] == str(pid):
            found.append(int(entry))
    return found


def snapshot(root: int) -> Snapshot:
    """The sandbox under bwrap's host pid `root`, as strays and counters (a vanished or unreadable
    sandbox is reported as a stray, so the caller kills rather than trusts it)."""
    inits = _children(root)
    init = _proc(inits[0]) if len(inits) == 1 and _nspid(inits[0]) == 1 else None
    if init is None:
        return Snapshot(("bwrap's init is missing or not alone",), ())
    below = _children(init.pid)
    sdk_pid = next((pid for pid in below if _nspid(pid) == 2), None)
    sdk = _proc(sdk_pid) if sdk_pid is not None else None
    if sdk is None:
        return Snapshot(("the SDK process is gone",), ())
    strays: list[str] = []
    if sdk.threads != 1:
        strays.append(f"the SDK process runs {sdk.threads} threads")
    todo = [pid for pid in below if pid != sdk.pid] + _children(sdk.pid)
    seen = 0
    while todo and seen < MAX_PROCESSES:
        pid = todo.pop()
        seen += 1
        found = _proc(pid)
        if found is None:  # listed, then gone before it could be read: it was there all the same
            strays.append("a process that exited while it was being looked at")
            continue
        strays.append(f"pid {_nspid(pid) or '?'} ({found.state})")
        todo += _children(pid)
    return Snapshot(tuple(strays), init.counters + sdk.counters)


@dataclass(frozen=True)
class Usage:
    """A long-lived sandbox (an MCP server) between calls: which processes it holds (pids inside)
    and the CPU ticks all of them used so far, reaped children included."""

    pids: frozenset[int]
    cpu_ticks: int


def usage(root: int) -> Usage | None:
    """Every process under bwrap's host pid `root` and their CPU time; None once the sandbox is gone."""
    todo = _children(root)
    if not todo:
        return None
    pids: set[int] = set()
    ticks = 0
    while todo and len(pids) < MAX_PROCESSES:
        pid = todo.pop()
        found = _proc(pid)
        if found is None:
            pids.add(-pid)  # listed, then gone: a process all the same, never part of a baseline
            continue
        pids.add(_nspid(pid) or -pid)
        ticks += sum(found.counters[4:8])  # utime stime cutime cstime
        todo += _children(pid)
    return Usage(frozenset(pids), ticks)


PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_bytes(root: int) -> int | None:
    """The resident memory of every process under bwrap's host pid `root` together (None once it is
    gone): what a sandbox without a memory cgroup is held to, by polling."""
    todo = _children(root)
    if not todo:
        return None
    total, seen = 0, 0
    while todo and seen < MAX_PROCESSES:
        pid = todo.pop()
        seen += 1
        statm = _read(f"/proc/{pid}/statm")
        fields = statm.split() if statm else []
        if len(fields) > 1 and fields[1].isdigit():
            total += int(fields[1]) * PAGE
        todo += _children(pid)
    return total
