"""Create a workspace from templates and load its context files for the system prompt.

Context files are user-editable and go into every prompt, so each is capped: an oversized file
keeps its head and tail (where instructions and recent notes usually sit) with a visible marker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.workspace.templates import CONTEXT_FILE_NAMES, TEMPLATES
from policies.kernel.files import (
    PathNotAllowed,
    ensure_private_dir,
    is_within,
    read_regular_text,
    write_new_private,
)

MAX_CONTEXT_CHARS = 20_000
HEAD_SHARE = 0.70
TAIL_SHARE = 0.20
MEMORY_DIR = "memory"


@dataclass(frozen=True)
class ContextFile:
    name: str
    content: str
    original_chars: int

    @property
    def trimmed(self) -> bool:
        return len(self.content) < self.original_chars


def default_workspace(owlia_home: Path) -> Path:
    return Path(owlia_home) / "workspace"


def create_workspace(path: Path) -> list[str]:
    """Write missing template files (0600) in a 0700 workspace; never overwrite. Returns names written."""
    root = ensure_private_dir(Path(path))
    ensure_private_dir(root / MEMORY_DIR)
    return [name for name, text in TEMPLATES.items() if write_new_private(root / name, text)]


def trim_text(text: str, cap: int = MAX_CONTEXT_CHARS) -> str:
    """Keep the first 70% and last 20% of `cap` characters with a marker naming what was cut."""
    if len(text) <= cap:
        return text
    head = int(cap * HEAD_SHARE)
    tail = int(cap * TAIL_SHARE)
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… trimmed {cut} chars …]\n{text[len(text) - tail :]}"


def _read_context(file: Path, root: Path) -> str | None:
    """The file's text; None if it is absent, outside `root` or not a plain file (it is skipped then)."""
    if not file.exists() and not file.is_symlink():
        return None
    if not is_within(file, root):
        return None
    try:
        return read_regular_text(file)
    except (PathNotAllowed, OSError):
        return None


def load_context_files(path: Path, cap: int = MAX_CONTEXT_CHARS) -> list[ContextFile]:
    """Read the known context files in fixed order; skip missing ones and anything not a plain file inside."""
    root = Path(path)
    loaded: list[ContextFile] = []
    for name in CONTEXT_FILE_NAMES:
        text = _read_context(root / name, root)
        if text is not None:
            loaded.append(ContextFile(name=name, content=trim_text(text, cap), original_chars=len(text)))
    return loaded


def context_file_problems(path: Path) -> list[str]:
    """What keeps a present context file out of the prompt (or garbles it), one worded line each, so the
    user learns their persona or instructions are not in use instead of the bot quietly going without."""
    root = Path(path)
    problems: list[str] = []
    for name in CONTEXT_FILE_NAMES:
        file = root / name
        if not file.exists() and not file.is_symlink():
            continue
        text = _read_context(file, root)
        if text is None:
            problems.append(
                f"{file} is not a plain file inside the workspace (a symlink, a directory or "
                "unreadable), so the bot leaves it out; make it a regular file there"
            )
        elif "\ufffd" in text and _not_utf8(file):
            problems.append(
                f"{file} is not UTF-8, so the bot reads its bad bytes as U+FFFD; save it as UTF-8"
            )
    return problems


def _not_utf8(file: Path) -> bool:
    try:
        file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False
