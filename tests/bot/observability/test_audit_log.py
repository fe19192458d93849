"""The bot's hash-chained audit logs stay one unbroken chain with more than one writer.

`skills-audit.jsonl` has several: the skills host and the MCP host of one bot, and `owlia skill` /
`owlia mcp` in another process while the bot runs. Each writer used to link its record to the last
one it wrote itself, so the second writer's first record broke the chain, and `verify_audit`
reported tampering that never happened.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from bot.observability.audit import BotAudit, skills_audit_path, verify_audit

ROOT = Path(__file__).resolve().parents[3]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@settings(max_examples=40, deadline=None)
@given(order=st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=30))
def test_writers_in_one_process_keep_one_chain(
    tmp_path_factory: pytest.TempPathFactory, order: list[int]
) -> None:
    path = skills_audit_path(tmp_path_factory.mktemp("home"))
    writers = [BotAudit(path) for _ in range(3)]  # the skills host, the MCP host, a CLI decision
    for step, which in enumerate(order):
        writers[which].record("skill.call", step=step, writer=which)
    assert verify_audit(path) == (True, len(order), "")
    assert [r["step"] for r in records(path)] == list(range(len(order)))


def test_a_writer_that_started_before_the_log_existed_links_to_what_another_wrote(tmp_path: Path) -> None:
    path = skills_audit_path(tmp_path)
    early = BotAudit(path)  # the bot, started on an empty home
    BotAudit(path).record("skill.installed", name="echo")  # `owlia skill install` meanwhile
    entry = early.record("skill.call", name="echo")
    assert entry["prev"] == records(path)[0]["hash"]
    assert verify_audit(path) == (True, 2, "")


APPENDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from bot.observability.audit import BotAudit
    audit = BotAudit(Path(sys.argv[1]))
    for n in range(int(sys.argv[3])):
        audit.record("mcp.call", writer=sys.argv[2], n=n)
""")


def test_two_processes_appending_at_once_keep_one_chain(tmp_path: Path) -> None:
    path = skills_audit_path(tmp_path)
    each = 150
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(path), name, str(each)], cwd=ROOT)
        for name in ("bot", "cli")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    written = records(path)
    assert verify_audit(path) == (True, 2 * each, "")
    for name in ("bot", "cli"):  # nothing lost, each writer's records in its own order
        assert [r["n"] for r in written if r["writer"] == name] == list(range(each))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_record_after_a_torn_line_starts_a_new_line_and_the_torn_line_stays_visible(tmp_path: Path) -> None:
    path = skills_audit_path(tmp_path)
    audit = BotAudit(path)
    first = audit.record("skill.call", n=1)
    with open(path, "ab") as handle:  # a writer that died in the middle of its record
        handle.write(b'{"kind": "skill.call", "n": 2, "pr')
    second = BotAudit(path).record("skill.call", n=3)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["n"] == 3  # not glued onto the fragment
    assert second["prev"] == first["hash"]  # the chain goes on from the last whole record
    assert verify_audit(path) == (False, 1, "line 2: not an audit record")  # and the tear is reported


def test_a_record_longer_than_the_first_tail_read_is_still_linked(tmp_path: Path) -> None:
    path = skills_audit_path(tmp_path)
    big = BotAudit(path).record("mcp.result", numbers=list(range(60_000)))
    assert path.stat().st_size > 4 * 65536  # past the first tail read, and its first doubling
    after = BotAudit(path).record("mcp.call", n=2)
    assert after["prev"] == big["hash"]
    assert verify_audit(path) == (True, 2, "")


def test_the_log_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    path = skills_audit_path(tmp_path)
    path.parent.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("")
    path.symlink_to(elsewhere)
    with pytest.raises(OSError):
        BotAudit(path).record("skill.call", n=1)
    assert elsewhere.read_text() == ""
