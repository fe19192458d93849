"""Reading the shell blocks of README.md and docs/*.md, and running them the way a reader would: a fresh
HOME, none of the host's OwliaBot, chat or model settings, `owlia` on PATH. Shared by the tests that run
the documented commands (tests/ops/test_documented_commands.py, tests/ops/test_docs_commands.py)."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGS = frozenset({"bash", "sh", "shell", "console", "zsh"})
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*$")
# The line just before a block that is shown but not run: "*Example only, needs a real Telegram account.*"
MARK = re.compile(r"^\*Example only\b(?P<rest>.*?)\*\s*$")
MARK_REASON = re.compile(r"^,?\s*needs\s+(?P<reason>.*?)[.:]?$")


def isolated_env(home: Path) -> dict[str, str]:
    """The environment of a reader with a fresh HOME: no OWLIA_/TELEGRAM_/DISCORD_ settings, no model key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OWLIA_", "TELEGRAM_", "DISCORD_"))}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1")
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    return env


def reader_env(home: Path) -> dict[str, str]:
    """isolated_env with this checkout's `owlia` first on PATH, as after installing it."""
    env = isolated_env(home)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def fenced_after(heading: str, text: str) -> str:
    """The first ```bash block after a heading, exactly as a reader copies it."""
    section = text.split(heading, 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1).strip()


def section_blocks(guide: str, heading: str) -> list[str]:
    """Every ```bash block of one `## ` section, in order, exactly as a reader copies them."""
    section = guide.split(heading, 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


@dataclass(frozen=True)
class DocBlock:
    """One fenced block of a doc: where it starts, its language, its text and the mark before it, if any."""

    doc: str  # relative to the checkout, e.g. docs/bot.md
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    mark: str | None  # the line before the block when it starts with "*Example only"

    @property
    def is_shell(self) -> bool:
        return self.lang in SHELL_LANGS

    @property
    def mark_reason(self) -> str:
        """What the marked example needs ("" when the mark gives no reason)."""
        found = MARK.match(self.mark or "")
        reason = MARK_REASON.match(found["rest"].strip()) if found else None
        return reason["reason"].strip() if reason else ""

    @property
    def commands(self) -> list[str]:
        """The commands a reader runs, one per logical line: `\\` continuations joined, comment lines and
        blank lines left out (a command's own trailing comment stays: bash ignores it)."""
        out: list[str] = []
        current: list[str] = []
        for raw in self.text.splitlines():
            if self.lang == "console" and not current:  # a transcript: commands after "$ ", the rest output
                if not raw.startswith("$ "):
                    continue
                raw = raw[2:]
            if not current and (not raw.strip() or raw.lstrip().startswith("#")):
                continue
            current.append(raw)
            if raw.rstrip().endswith("\\"):
                continue
            out.append("\n".join(current).strip())
            current = []
        if current:
            out.append("\n".join(current).strip())
        return out

    @property
    def first(self) -> str:
        commands = self.commands
        return commands[0] if commands else ""

    def where(self) -> str:
        return f"{self.doc}:{self.line} (```{self.lang} block starting {self.first[:60]!r})"


def doc_blocks(doc: str, text: str | None = None) -> list[DocBlock]:
    """Every fenced block of a doc (its file, or `text` given for it), in order."""
    lines = (text if text is not None else (ROOT / doc).read_text(encoding="utf-8")).splitlines()
    blocks: list[DocBlock] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        before = next((lines[i].strip() for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        blocks.append(
            DocBlock(
                doc=doc,
                line=index + 1,
                lang=opening["lang"].lower(),
                text="\n".join(lines[index + 1 : end]),
                mark=before if before.startswith("*Example only") else None,
            )
        )
        index = end + 1
    return blocks


def documented_docs() -> list[str]:
    """README.md and every docs/*.md, relative to the checkout."""
    return ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


class Lines:
    """A process's output lines, read by a thread, so a test can wait for one without hanging."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.ended = False

        def pump() -> None:
            for line in proc.stdout:
                self._queue.put(line)
            self._queue.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, text: str, timeout: float, times: int = 1) -> None:
        """Until `times` lines holding `text` have been printed."""
        deadline = time.monotonic() + timeout
        while sum(text in line for line in self.seen) < times:
            try:
                line = self._queue.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"no {text!r} within {timeout:.0f} s:\n" + "".join(self.seen[-40:])
                ) from None
            if line is None:
                self.ended = True
                raise AssertionError(f"ended before {text!r}:\n" + "".join(self.seen[-40:]))
            self.seen.append(line)

    def drain(self, timeout: float) -> str:
        """Everything the process printed, once it has ended (or `timeout` passed)."""
        deadline = time.monotonic() + timeout
        while not self.ended:
            try:
                line = self._queue.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                self.ended = True
            else:
                self.seen.append(line)
        return "".join(self.seen)
