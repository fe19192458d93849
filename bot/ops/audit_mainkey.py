"""OWL-MAIN-001: the main key (the companion's keystore) is never on the signer's host.

The companion holds the main key; the signer holds only session keys, bounded on chain by Tier 3.
A thief of the signer's host gets whatever that host holds: a main-key keystore there (in the
OwliaBot home or the signer user's home), with the passphrase file that usually sits beside it,
hands over every fund and makes Tier 3 bound nothing. Elsewhere on the machine (another user's
desktop companion), the keystore must at least be unreadable by the signer's user.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator
from pathlib import Path

from bot.ops.checks import Finding, Severity, Skip
from bot.ops.context import OpsContext, readable_by

COMPANION_FILES = ("companion.json", "keystore.json")  # what `owlia companion init` writes, together
SCAN_DEPTH = 4
SCAN_LIMIT = 20_000  # directories visited per root: a home full of checkouts must not stall the audit
SKIPPED_DIRS = frozenset(
    {
        ".venv",
        "node_modules",
        ".git",
        ".cache",
        ".npm",
        ".cargo",
        ".rustup",
        ".pyenv",
        "__pycache__",
        "site-packages",
        "sessions",
        "logs",
        "memory",
        "workspace",
    }
)


def companion_dirs(root: Path) -> Iterator[Path]:
    """Directories under `root` (a few levels deep) holding a companion's keystore."""
    seen = 0
    stack = [(root, 0)]
    while stack and seen < SCAN_LIMIT:
        directory, depth = stack.pop()
        seen += 1
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        names = {e.name for e in entries}
        if all(name in names for name in COMPANION_FILES):
            yield Path(directory)
        if depth < SCAN_DEPTH:
            stack.extend(
                (Path(e.path), depth + 1)
                for e in entries
                if e.name not in SKIPPED_DIRS and e.is_dir(follow_symlinks=False)
            )


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _move_hint(directory: Path) -> str:
    return (
        f"move the main key off this host: import {directory / 'keystore.json'} into the companion web app on "
        'your phone (docs/companion.md, "The main key") or into `owlia companion init` as another user on '
        "another machine, check it shows the same main account, then delete it here "
        f"(`shred -u {directory / 'keystore.json'} {directory / 'device.key'}`)"
    )


def check_main_key_placement(ctx: OpsContext) -> Iterator[Finding]:
    """A main-key keystore under the OwliaBot home or the signer user's home, or one the signer's
    user can read (`--companion-dir`), is critical."""
    paths = ctx.signer_paths()
    try:
        signer_uid: int | None = paths.home.stat().st_uid
    except FileNotFoundError:
        signer_uid = None
    except PermissionError:
        raise Skip(f"{paths.home} is hidden from this user: run as the signer's user or root") from None
    roots = {"the OwliaBot home": ctx.home}
    if signer_uid is not None:
        try:
            roots["the signer user's home"] = Path(pwd.getpwuid(signer_uid).pw_dir)
        except KeyError:
            pass
    found: dict[Path, str] = {}
    for where, root in roots.items():
        if root.is_dir() and root != Path("/"):
            for directory in companion_dirs(root):
                found.setdefault(directory.resolve(), where)
    for directory, where in sorted(found.items()):
        yield Finding(
            "OWL-MAIN-001",
            Severity.CRITICAL,
            f"the main key's keystore {directory / 'keystore.json'} is on the signer's host, in {where}: "
            "whoever steals this host gets it (and the passphrase file beside it), and Tier 3 then bounds "
            "nothing",
            _move_hint(directory),
        )
    for directory in ctx.companion_dirs:
        keystore = directory / "keystore.json"
        if directory.resolve() in found or not keystore.exists():
            continue
        if signer_uid is None:
            raise Skip(f"no signer home at {paths.home}: cannot tell the signer's user")
        if readable_by(keystore, signer_uid):
            yield Finding(
                "OWL-MAIN-001",
                Severity.CRITICAL,
                f"the signer's user (uid {signer_uid}) can read the main key's keystore {keystore}",
                f"{_move_hint(directory)}; at the least keep it owned by another user: "
                f"`chmod 700 {directory}; chmod 600 {keystore}`",
            )
