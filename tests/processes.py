"""Ending a process a test or a bench started (`owlia start` and the like): SIGTERM, as a service
manager stops it, then SIGKILL if it has not exited within the grace, so no run leaves one behind."""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, grace: float = 30.0) -> int:
    """SIGTERM `proc`, wait up to `grace` seconds, then kill it; its exit status."""
    proc.terminate()
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def race(argvs: list[list[str]], *, cwd: object = None, timeout: float = 120.0) -> list[tuple[int, str, str]]:
    """Start one process per argv, wait until each has printed "ready", then write "go" to all of them
    at once, so their work overlaps; (exit status, stdout, stderr) of each. None is left running."""
    procs = [
        subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for argv in argvs
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [(proc.returncode, out, err) for proc, (out, err) in zip(procs, outputs)]
