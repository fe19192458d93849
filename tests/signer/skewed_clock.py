"""`python -m tests.signer.skewed_clock <owlia args>`: the real CLI, with the system clock set off.

`--home H signer serve ...` runs the program `owlia signer serve` becomes (signer.serve) in this
process, so that the patch below holds in the daemon too.

The process's wall clock (`time.time`) reads the real time plus the seconds written in the file
named by OWLIA_TEST_CLOCK_OFFSET, re-read on every call, so a test can set the clock back or
forward under a running signer as NTP or an operator would. It is patched before any signer
module is imported, so every part of the signer sees the same skewed clock; the monotonic
clock is left alone, as a change of the system time leaves it alone.

With OWLIA_TEST_BOOT_ID naming a file, the signer reads its boot id from there instead of
/proc/sys/kernel/random/boot_id, so a test can make a restart look like a reboot.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

OFFSET_ENV = "OWLIA_TEST_CLOCK_OFFSET"
BOOT_ID_ENV = "OWLIA_TEST_BOOT_ID"


def set_offset(path: Path, seconds: float) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(repr(float(seconds)))
    os.replace(tmp, path)  # atomic: the signer never reads half a number


def _install(path: str) -> None:
    real = time.time

    def skewed() -> float:
        with open(path, encoding="ascii") as f:
            return real() + float(f.read())

    time.time = skewed


if __name__ == "__main__":
    _install(os.environ[OFFSET_ENV])
    if os.environ.get(BOOT_ID_ENV):
        import signer.clock

        signer.clock.BOOT_ID_PATH = Path(os.environ[BOOT_ID_ENV])
    args = sys.argv[1:]
    if args[2:4] == ["signer", "serve"] and args[0] == "--home":
        # `owlia signer serve` execs `python -m signer.serve`, which would drop the patch: run that
        # program here instead, with the same arguments the command would give it.
        from signer.serve import main as serve

        sys.exit(serve(["--home", args[1], *args[4:]]))
    from bot.cli.app import main

    sys.argv = ["owlia", *args]
    main()
