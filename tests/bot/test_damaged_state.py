"""A damaged state file, as a real `owlia` process meets it: a worded `error:` naming the file and what
to do (never a traceback), nothing written over it, and nothing more allowed than before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.bot.test_cli_misuse import ROOT, owlia, worded
from tests.fakes.llm_server import FakeLLMServer, Reply, ScriptedToolCall


def chat_session(home: Path, typed: str) -> subprocess.CompletedProcess:
    """`owlia chat` (interactive: the banner is shown) with `typed` on its stdin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "chat"],
        input=typed,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


GARBAGE = b"my notes, not a database\n" * 20


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    assert owlia(home, "init").returncode == 0
    return home


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("cron.db", ("cron", "list")),
        ("cron.db", ("cron", "add", "--every", "1h", "--remind", "x")),
        ("access.sqlite3", ("pair", "list")),
    ],
)
def test_a_database_that_is_not_sqlite_is_refused_and_kept(
    home: Path, name: str, argv: tuple[str, ...]
) -> None:
    db = home / "state" / name
    db.parent.mkdir(mode=0o700)
    db.write_bytes(GARBAGE)
    worded(owlia(home, *argv), str(db), "not a SQLite database", "mv ")
    assert db.read_bytes() == GARBAGE


SESSION = "console%3Aroot.jsonl"


@pytest.mark.parametrize("damage", [b"hello, not JSON\n", b'{"t": "meta"}\n{"t": "meta"}\n'])
def test_a_damaged_session_is_refused_and_kept(home: Path, damage: bytes) -> None:
    assert owlia(home, "chat", "-m", "/help").returncode == 0  # writes the console session
    session = home / "sessions" / SESSION
    body = damage + session.read_bytes()
    session.write_bytes(body)
    worded(owlia(home, "chat", "-m", "/help"), str(session), "damaged session", "mv ")
    assert session.read_bytes() == body


def test_a_file_where_logs_goes_is_named(home: Path) -> None:
    logs = home / "logs"
    logs.write_text("mine")
    worded(owlia(home, "chat", "-m", "/help"), f"cannot use {logs} as a private directory", "move it aside")
    assert logs.read_text() == "mine"


@pytest.mark.parametrize(
    ("folder", "name", "argv", "section"),
    [
        ("skills", "registry.json", ("skill", "list"), "skills"),
        ("mcp", "servers.json", ("mcp", "list"), "servers"),
        ("mcp", "servers.json", ("mcp", "add", "x", "--", "/bin/true"), "servers"),
    ],
)
def test_a_registry_of_another_version_is_refused_not_read_as_empty(
    home: Path, folder: str, name: str, argv: tuple[str, ...], section: str
) -> None:
    registry = home / folder / name
    registry.parent.mkdir(mode=0o700)
    body = '{"version": 99, "%s": {}, "kept": "what a newer owlia wrote"}' % section
    registry.write_text(body)
    worded(owlia(home, *argv), str(registry))
    assert registry.read_text() == body


@pytest.mark.parametrize(
    ("name", "damage", "words"),
    [
        ("SOUL.md", "not utf-8", "is not UTF-8"),
        ("USER.md", "directory", "leaves it out"),
        ("IDENTITY.md", "symlink out", "leaves it out"),
    ],
)
def test_a_context_file_the_bot_cannot_use_is_named_by_chat_and_doctor(
    home: Path, name: str, damage: str, words: str
) -> None:
    file = home / "workspace" / name
    file.unlink()
    if damage == "not utf-8":
        file.write_bytes(b"I am \xff\xfe your owl")
    elif damage == "directory":
        file.mkdir()
    else:
        file.symlink_to("/etc/hostname")
    chat = chat_session(home, "/quit\n")
    assert chat.returncode == 0 and "Traceback" not in chat.stderr, chat.stderr[-2000:]
    assert f"warning: {file} " in chat.stdout and words in chat.stdout, chat.stdout
    doctor = owlia(home, "doctor")
    assert f"{file} " in doctor.stdout and words in doctor.stdout, doctor.stdout[-3000:]


def test_unreadable_registries_keep_every_skill_and_server_out_and_chat_says_so(home: Path) -> None:
    """Fail closed and say it: a registry the bot cannot read enables nothing, and the chat names it."""
    (home / "skills").mkdir(mode=0o700)
    (home / "mcp").mkdir(mode=0o700)
    skills, servers = home / "skills" / "registry.json", home / "mcp" / "servers.json"
    skills.write_text("{oops")
    servers.write_text('{"version": 99, "servers": {}}')
    chat = chat_session(home, "/quit\n")
    assert chat.returncode == 0 and "Traceback" not in chat.stderr, chat.stderr[-2000:]
    assert f"warning: {skills} is corrupt; refusing to load any skill" in chat.stdout, chat.stdout
    assert f"warning: {servers} is corrupt; refusing to load any MCP server" in chat.stdout, chat.stdout
    assert "Nothing was changed" in chat.stdout
    assert skills.read_text() == "{oops" and servers.read_text() == '{"version": 99, "servers": {}}'


@pytest.mark.parametrize("name", ["access.sqlite3", "cron.db"])
def test_owlia_start_refuses_a_database_that_is_not_sqlite(home: Path, name: str) -> None:
    """The bot does not run (so no stranger is admitted past a pairing store it cannot read) and says why."""
    config = home / "config.yaml"
    config.write_text(config.read_text().replace("port: 8787", "port: 0"))
    db = home / "state" / name
    db.parent.mkdir(mode=0o700)
    db.write_bytes(GARBAGE)
    worded(owlia(home, "start"), str(db), "not a SQLite database", "mv ")
    assert db.read_bytes() == GARBAGE


# ---- memory notes, through the model's tools (a local server speaking Anthropic's wire protocol) ----


def _with_model(home: Path, server: FakeLLMServer) -> dict[str, str]:
    config = home / "config.yaml"
    text = config.read_text().replace(
        "- {name: anthropic, model: sonnet}",
        f'- {{name: anthropic, model: sonnet, base_url: "{server.url}"}}',
    )
    config.write_text(text.replace("      - {name: openai, model: gpt}\n", ""))
    return {"ANTHROPIC_API_KEY": "sk-ant-test-key"}


def _chat_once(home: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")} | env_extra
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "chat", "-m", "what about root?"],
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _tool_results(server: FakeLLMServer) -> list[dict]:
    return [
        block
        for request in server.requests
        for block in request.body["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


@pytest.mark.parametrize("damage", ["huge", "directory"])
def test_a_damaged_memory_note_neither_stalls_nor_breaks_the_bot(home: Path, damage: str) -> None:
    """A 20 MiB note held every message for minutes (indexed on each search); a directory named like a
    note made memory_get an internal error. Now: search leaves the big one out and says so, once; the
    directory is a worded tool error; the other notes still answer, and no note is changed."""
    memory = home / "workspace" / "memory"
    note = memory / "2026-01-01.md"
    if damage == "huge":
        note.write_bytes(b"root " * (4 * 1024 * 1024))
    else:
        note.mkdir()
    (memory / "small.md").write_text("root is the admin\n")
    with FakeLLMServer() as server:
        env = _with_model(home, server)
        server.enqueue(Reply(tool_calls=[ScriptedToolCall("t1", "memory_search", ('{"query": "root"}',))]))
        server.enqueue(
            Reply(tool_calls=[ScriptedToolCall("t2", "memory_get", ('{"path": "memory/2026-01-01.md"}',))])
        )
        server.enqueue(Reply(text=["ok"]))
        done = _chat_once(home, env)
        results = _tool_results(server)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "memory/small.md" in results[0]["content"], results
    if damage == "huge":
        assert f"memory note {note} is 20971520 bytes" in done.stderr and "split it" in done.stderr, (
            done.stderr
        )
        assert note.stat().st_size == 20971520
    else:
        assert results[1]["is_error"] and "is not a regular file" in results[1]["content"], results
        assert "internal error" not in results[1]["content"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.integers(min_value=-64, max_value=64))
def test_the_note_size_limit_is_exact(tmp_path: Path, extra: int) -> None:
    """Notes up to MAX_NOTE_BYTES are searchable; one byte more and search leaves the note out."""
    from bot.memory.index import MAX_NOTE_BYTES, MemoryIndex

    workspace = tmp_path / f"ws{extra + 64}"
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    size = MAX_NOTE_BYTES + extra
    (workspace / "memory" / "big.md").write_bytes(b"owl " + b"x" * (size - 5) + b"\n")
    with MemoryIndex(workspace, workspace / "memory.db") as index:
        index.reindex()
        found = [hit.path for hit in index.search("owl")]
    assert ("memory/big.md" in found) == (size <= MAX_NOTE_BYTES), (size, found)
