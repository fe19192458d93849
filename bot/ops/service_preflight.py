"""What `owlia service install` checks before it writes anything: the users the units run as can
start the interpreter they name and import OwliaBot from where it is installed.

A unit whose user cannot execute its `ExecStart` fails only at `systemctl start`, after users,
units and homes were written; a venv under /root (0700) is the usual way to get there. Where the
user exists and we are root, the check is a real trial: `PYTHON -m bot.cli --help` run as that user.
A user yet to be created belongs to no group that owns anything, so for it the "other" permission
bits decide: every directory on the way must let others in, the interpreter must be executable by
them and OwliaBot's packages readable.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

TRIAL_TIMEOUT = 120


def trial_as(user: str, python: str) -> str | None:
    """Why `user` cannot run `python -m bot.cli --help`, or None. As root only (else: not judged)."""
    entry = pwd.getpwnam(user)
    groups = os.getgrouplist(entry.pw_name, entry.pw_gid)
    try:
        done = subprocess.run(
            [python, "-m", "bot.cli", "--help"],
            user=entry.pw_uid,
            group=entry.pw_gid,
            extra_groups=groups,
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONDONTWRITEBYTECODE": "1"},
            timeout=TRIAL_TIMEOUT,
        )
    except PermissionError:
        return f"it may not execute {python}"
    except OSError as exc:
        return f"{python}: {exc.strerror}"
    except subprocess.TimeoutExpired:
        return f"{python} -m bot.cli --help did not finish in {TRIAL_TIMEOUT} s"
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or ["exit status " + str(done.returncode)])[-1]
    return f"{python} -m bot.cli --help fails as {user}: {last[:300]}"


def _shut_to_others(path: Path, need: int) -> str | None:
    """The first place on the way to `path` that other users may not pass, or `path` lacking `need`."""
    try:
        for parent in reversed(path.parents):
            if not os.stat(parent).st_mode & 0o001:
                return f"{parent} is closed to other users"
        if os.stat(path).st_mode & need != need:
            return f"{path} is not {'executable' if need == 0o001 else 'readable'} by other users"
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    return None


def packages() -> list[Path]:
    """Where the interpreter that runs this finds OwliaBot and its dependencies (located, not imported:
    the signer's code stays out of the bot's process)."""
    found = []
    for name in ("bot", "signer", "policies", "typer"):
        spec = find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            found.append(Path(location).resolve())
    return list(dict.fromkeys(found))


def others_problem(python: str) -> str | None:
    """For a user still to be created: why other users could not run `python` with OwliaBot, or None."""
    binary = Path(python)
    for path, need in ((binary, 0o001), (binary.resolve(), 0o001)):
        if problem := _shut_to_others(path, need):
            return problem
    if (
        Path(python).resolve() == Path(sys.executable).resolve()
    ):  # the packages this process imports: the unit's
        for package in packages():
            if problem := _shut_to_others(package, 0o005):
                return problem
    return None
