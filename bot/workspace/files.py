"""Create a workspace from templates and load its context files for the system prompt.

Context files are user-editable and go into every prompt, so each is capped: an oversized file
keeps its head and tail (where instructions and recent notes usually sit) with a visible marker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from policies.kernel.files import PathNotAllowed, is_within, ensure_private_dir, read_regular_text, write_new_private
from bot.workspace.templates import CONTEXT_FILE_NAMES, TEMPLATES

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
    return f"{text[:head]}\n[… trimmed {cut} chars …]\n{text[len(text) - tail:]}"


def load_context_files(path: Path, cap: int = MAX_CONTEXT_CHARS) -> list[ContextFile]:
    """Read the known context files in fixed order; skip missing ones and anything not a plain file inside."""
    root = Path(path)
    loaded: list[ContextFile] = []
    for name in CONTEXT_FILE_NAMES:
        file = root / name
        if not file.exists() and not file.is_symlink():
            continue
        if not is_within(file, root):
            continue
        try:
            text = read_regular_text(file)
        except (PathNotAllowed, OSError):
            continue
        loaded.append(ContextFile(name=name, content=trim_text(text, cap), original_chars=len(text)))
    return loaded
