"""Every tool answers at once; all but `quiet` and `child` leave something running after the call."""

import os
import signal
import subprocess
import threading
import time

import owlia_skill
from owlia_skill import tool


def _burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


@tool("quiet")
def quiet(args):
    return "ok"


@tool("child")
def child(args):
    return str(subprocess.run(["/usr/bin/true"]).returncode)


@tool("relay")
def relay(args):
    # each member burns 0.3 s of CPU, forks its successor and exits: none reaches RLIMIT_CPU
    if os.fork() == 0:
        os.setsid()
        while True:
            _burn(0.3)
            if os.fork() != 0:
                os._exit(0)
    return "ok"


@tool("flicker")
def flicker(args):
    if os.fork() == 0:
        while True:
            if os.fork() != 0:
                os._exit(0)
    return "ok"


@tool("sleeper")
def sleeper(args):
    if os.fork() == 0:
        hoard = bytearray(32 << 20)
        for i in range(0, len(hoard), 4096):
            hoard[i] = 1
        time.sleep(3600)
    return "ok"


@tool("thread")
def spin_thread(args):
    threading.Thread(target=_burn, args=(3600,), daemon=True).start()
    return "ok"


@tool("timer")
def timer(args):
    signal.signal(signal.SIGALRM, lambda *_: _burn(0.02))
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
    return "ok"


@tool("noise")
def noise(args):
    chunk = b"n" * 65536
    signal.signal(signal.SIGALRM, lambda *_: os.write(2, chunk))
    signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
    return "ok"


@tool("deep")
def deep(args):
    owlia_skill._rpc_out.write(b"[" * 200_000 + b"\n")
    owlia_skill._rpc_out.flush()
    time.sleep(5)
    return "never"


_SEND = owlia_skill._send
_AFTER_REPLY = {"burst": False}


def _send_then_work(message):
    """Answer; once `after` asked for it, wait out the host's post-call look, then burn CPU in two
    children and reap them, all well before the first idle look (0.25 s)."""
    _SEND(message)
    if _AFTER_REPLY["burst"] and "result" in message:
        _AFTER_REPLY["burst"] = False
        time.sleep(0.03)
        kids = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                _burn(0.1)
                os._exit(0)
            kids.append(pid)
        for pid in kids:
            os.waitpid(pid, 0)


owlia_skill._send = _send_then_work


@tool("after")
def after(args):
    _AFTER_REPLY["burst"] = True
    return "ok"
