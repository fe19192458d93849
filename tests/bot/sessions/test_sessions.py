"""Session files: format, torn lines, windowing, /new, /compact, dedupe, usage and locks."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from bot.sessions import (
    SUMMARY_HEADER,
    SessionCorrupt,
    SessionStore,
    history,
    session_filename,
    session_lock,
)
from bot.sessions.records import MessageRecord


def text(t: str) -> list[dict]:
    return [{"type": "text", "text": t}]


def call(cid: str, name: str = "balance") -> list[dict]:
    return [{"type": "tool_call", "id": cid, "name": name, "args": {}}]


def result(cid: str, name: str = "balance", content: str = "ok") -> list[dict]:
    return [{"type": "tool_result", "call_id": cid, "name": name, "content": content}]


@pytest.fixture
def store(tmp_path):
    return SessionStore(tmp_path / "sessions")


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_file_format_and_permissions(store):
    s = store.open("telegram:123", model="m1")
    s.append("user", text("hi"), message_id="u1")
    s.append("assistant", call("c1"))
    s.append("tool", result("c1"))
    assert stat.S_IMODE(os.stat(store.directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(s.path).st_mode) == 0o600
    recs = lines(s.path)
    assert recs[0]["type"] == "meta" and recs[0]["key"] == "telegram:123" and recs[0]["model"] == "m1"
    assert recs[0]["version"] == 1 and "created_at" in recs[0]
    assert [r["role"] for r in recs[1:]] == ["user", "assistant", "tool"]
    assert recs[1]["id"] == "u1" and recs[2]["parts"][0]["type"] == "tool_call" and "ts" in recs[3]
    reopened = store.open("telegram:123")
    assert [m.id for m in reopened.messages] == [m.id for m in s.messages]


@pytest.mark.parametrize("key", ["telegram", ":x", "Tele:1", "a:../b", "a:b/c", "a:", "a:b c", "a:b\n"])
def test_bad_keys_rejected(store, key):
    with pytest.raises(ValueError):
        store.open(key)


def test_filenames_are_distinct_and_flat():
    names = {session_filename(k) for k in ["console:local", "telegram:123", "telegram:1.23", "tele-gram:123"]}
    assert len(names) == 4 and all("/" not in n for n in names)


@pytest.mark.parametrize("torn", [b'{"type":"message","id":"x","ro', b"\xff\xfe", b'{"type": "nope"}\n'])
def test_torn_last_line_is_dropped_and_reported(store, torn, caplog):
    s = store.open("console:local")
    s.append("user", text("one"))
    with open(s.path, "ab") as handle:
        handle.write(torn)
    again = store.open("console:local")
    assert again.torn_tail_dropped and "torn" in caplog.text
    assert [m.parts for m in again.messages] == [text("one")]
    again.append("user", text("two"))
    assert [m.parts for m in store.open("console:local").messages] == [text("one"), text("two")]


def test_torn_meta_line_starts_fresh(store):
    path = store.directory / session_filename("console:local")
    path.write_bytes(b'{"type":"me')
    s = store.open("console:local")
    assert s.torn_tail_dropped and s.messages == []
    assert lines(s.path)[0]["type"] == "meta"


def test_corruption_in_the_middle_fails_closed(store):
    s = store.open("console:local")
    s.append("user", text("one"))
    s.append("user", text("two"))
    raw = s.path.read_bytes().split(b"\n")
    raw[1] = b"garbage"
    s.path.write_bytes(b"\n".join(raw))
    with pytest.raises(SessionCorrupt):
        store.open("console:local")


def test_window_keeps_last_turns_and_tool_pairs(store):
    s = store.open("console:local")
    for i in range(5):
        s.append("user", text(f"u{i}"))
        s.append("assistant", call(f"c{i}"))
        s.append("tool", result(f"c{i}"))
        s.append("assistant", text(f"a{i}"))
    hist = s.history(max_turns=2)
    assert hist[0].parts == text("u3") and len(hist) == 8
    assert s.history(max_turns=50) == s.messages
    assert s.history(max_turns=0) == []


def test_window_never_orphans_a_late_result(store):
    s = store.open("console:local")
    s.append("user", text("send 5 to bob"))
    s.append("assistant", call("c1", "transfer"))
    s.append("user", text("still there?"))
    s.append("tool", result("c1", "transfer", "approved"))
    hist = s.history(max_turns=1)
    assert [m.parts[0].get("id") or m.parts[0].get("call_id") or m.parts[0]["text"] for m in hist] == [
        "c1",
        "still there?",
        "c1",
    ]


def _msg(i: int, role: str, parts: list[dict]) -> MessageRecord:
    return MessageRecord(id=f"m{i}", role=role, parts=parts, ts=float(i))


@given(st.lists(st.sampled_from(["user", "call", "result", "text"]), max_size=40), st.integers(0, 6))
def test_window_property_no_orphan_results(kinds, max_turns):
    msgs, open_calls, n = [], [], 0
    for i, kind in enumerate(kinds):
        if kind == "user":
            msgs.append(_msg(i, "user", text("u")))
        elif kind == "call":
            n += 1
            open_calls.append(f"c{n}")
            msgs.append(_msg(i, "assistant", call(f"c{n}")))
        elif kind == "result" and open_calls:
            msgs.append(_msg(i, "tool", result(open_calls.pop(0))))
        else:
            msgs.append(_msg(i, "assistant", text("a")))
    hist = history(msgs, max_turns)
    ids_in = {p["id"] for m in hist for p in m.parts if p["type"] == "tool_call"}
    assert all(p["call_id"] in ids_in for m in hist for p in m.parts if p["type"] == "tool_result")
    users_in = sum(1 for m in hist if m.role == "user")
    assert users_in >= min(max_turns, sum(1 for m in msgs if m.role == "user"))
    assert hist == msgs[len(msgs) - len(hist) :]  # a contiguous suffix when nothing is pinned


def test_new_archives_and_keeps_dedupe(store):
    s = store.open("telegram:9")
    assert s.seen("inbound-1") is False
    s.append("user", text("old"))
    archived = s.new()
    assert archived.exists() and "old" in archived.read_text()
    assert stat.S_IMODE(os.stat(archived).st_mode) == 0o600
    fresh = store.open("telegram:9")
    assert fresh.messages == []
    assert fresh.seen("inbound-1") is True


def test_seen_persists_across_restart(store):
    assert store.seen("telegram:1", "42") is False
    assert store.seen("telegram:1", "42") is True
    assert store.seen("telegram:2", "42") is False  # per session


def test_compact_summary_is_marked_user_note_and_keeps_must_keep(store):
    s = store.open("console:local")
    s.append("user", text("hello"))
    s.append("assistant", text("chatter"))
    s.append("assistant", text("pending approval #7"), keep=True)
    s.append("user", text("sign it"))
    s.append("assistant", call("c9", "contract_call"))
    s.append("tool", result("c9", "contract_call", "tx 0xdead"))
    s.append("assistant", call("c10", "balance"))
    s.append("tool", result("c10", "balance", "1 ETH"))
    s.append("user", text("recent"))
    before = {m.id: m for m in s.messages}
    archived = s.compact("We said hello.", keep_turns=1)
    assert archived.exists()
    msgs = store.open("console:local").messages
    note = msgs[0]
    assert note.role == "user" and note.kind == "summary"
    assert note.parts[0]["text"].startswith(SUMMARY_HEADER) and "We said hello." in note.parts[0]["text"]
    bodies = [m.parts for m in msgs[1:]]
    assert bodies == [
        text("pending approval #7"),
        call("c9", "contract_call"),
        result("c9", "contract_call", "tx 0xdead"),
        text("recent"),
    ]
    assert all(before[m.id] == m for m in msgs[1:])  # verbatim
    assert all(m.role != "system" for m in msgs)
    assert s.history(max_turns=1)[0].kind == "summary"


def test_usage_counters_last_wins(store):
    s = store.open("console:local", model="m1")
    s.add_usage(10, 3)
    s.add_usage(5, 2, model="m2")
    again = store.open("console:local")
    assert (again.usage.input_tokens, again.usage.output_tokens) == (15, 5)
    assert again.state.model == "m2"
    again.compact("x")
    assert store.open("console:local").usage.input_tokens == 15


def test_session_lock_serializes_per_key():
    events: list[str] = []

    async def handle(key: str, tag: str) -> None:
        async with session_lock(key):
            events.append(f"start {tag}")
            await asyncio.sleep(0.01)
            events.append(f"end {tag}")

    async def main() -> None:
        await asyncio.gather(handle("k:1", "a"), handle("k:1", "b"), handle("k:2", "c"))

    asyncio.run(main())
    a_or_b = [e for e in events if not e.endswith("c")]
    assert a_or_b in (["start a", "end a", "start b", "end b"], ["start b", "end b", "start a", "end a"])
    assert events.index("start c") < events.index("end a")  # other keys run concurrently


def test_store_reuses_a_parsed_session_only_while_the_file_is_unchanged(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    first = store.open("console:alice")
    first.append("user", [{"type": "text", "text": "one"}])
    assert store.open("console:alice") is first  # nothing else wrote: no re-parse

    other_process = SessionStore(tmp_path / "sessions")  # e.g. a concurrent `owlia chat -m`
    other_process.open("console:alice").append("user", [{"type": "text", "text": "two"}])
    reread = store.open("console:alice")
    assert reread is not first
    assert [m.parts[0]["text"] for m in reread.messages] == ["one", "two"]

    other_process.open("console:alice").new()  # a rewrite replaces the file
    assert store.open("console:alice").messages == []


def test_store_cache_is_bounded(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    for i in range(SessionStore.CACHE_SIZE + 10):
        store.open(f"console:u{i}")
    assert len(store._cache) == SessionStore.CACHE_SIZE


def test_seen_ids_stay_bounded_in_memory_and_on_reload(tmp_path):
    """A long conversation remembers the last MAX_SEEN_CARRIED inbound ids, not every id it ever
    saw (which grew the bot by one entry per message, forever)."""
    from bot.sessions.store import MAX_SEEN_CARRIED

    store = SessionStore(tmp_path / "sessions")
    s = store.open("telegram:7")
    total = MAX_SEEN_CARRIED + 200
    for i in range(total):
        assert s.seen(f"m{i}") is False
    assert len(s.state.seen) == MAX_SEEN_CARRIED
    assert (
        s.seen(f"m{total - 1}") is True and s.seen(f"m{total - MAX_SEEN_CARRIED}") is True
    )  # recent: dropped
    reloaded = SessionStore(tmp_path / "sessions").open("telegram:7")  # the file still has every id
    assert len(reloaded.state.seen) == MAX_SEEN_CARRIED
    assert reloaded.seen(f"m{total - 1}") is True


def test_a_long_conversation_keeps_only_the_recent_window_parsed(tmp_path):
    """Memory for one chat stays bounded however long it runs; the file keeps every record."""
    from bot.sessions.store import TRIM_AT_TURNS

    s = SessionStore(tmp_path / "sessions").open("telegram:8")
    turns = 3 * TRIM_AT_TURNS
    for i in range(turns):
        s.append("user", text(f"q{i}"))
        s.append("assistant", text(f"a{i}"))
    assert len(s.state.messages) <= 2 * TRIM_AT_TURNS
    assert len(s.messages) == 2 * turns  # read back from the file
    assert [m.parts[0]["text"] for m in s.history(2)] == [
        f"q{turns - 2}",
        f"a{turns - 2}",
        f"q{turns - 1}",
        f"a{turns - 1}",
    ]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(["user", "keep", "call", "sign", "result", "text"]), max_size=60),
    st.integers(0, 9),
)
def test_trimmed_sessions_answer_exactly_like_the_whole_transcript(tmp_path_factory, kinds, max_turns):
    """With older records dropped from memory, history, messages and compact see what they would
    with the whole transcript parsed: summaries, kept records and sign results survive."""
    import bot.sessions.store as store_module
    from bot.sessions.window import must_keep, window_start

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_module, "PARSED_TURNS", 3)
        patch.setattr(store_module, "TRIM_AT_TURNS", 6)
        s = SessionStore(tmp_path_factory.mktemp("s")).open("telegram:9")
        open_calls, n = [], 0
        for kind in kinds:
            if kind in ("user", "keep"):
                s.append("user", text("u"), keep=kind == "keep")
            elif kind in ("call", "sign"):
                n += 1
                open_calls.append((f"c{n}", "transfer" if kind == "sign" else "balance"))
                s.append("assistant", call(*open_calls[-1]))
            elif kind == "result" and open_calls:
                s.append("tool", result(*open_calls.pop(0)))
            else:
                s.append("assistant", text("a"))
        full = store_module._load(s.path)[0].messages
        users = lambda msgs: sum(1 for m in msgs if m.role == "user" and m.kind == "normal")  # noqa: E731
        # at most TRIM_AT_TURNS, or the window history(PARSED_TURNS) needs when a call reaches back further
        assert users(s.state.messages) <= max(6, users(full[window_start(full, 3) :])) + sum(
            1 for m in full if m.keep
        )
        assert [m.id for m in s.messages] == [m.id for m in full]
        assert [m.id for m in s.history(max_turns)] == [m.id for m in history(full, max_turns)]
        start = window_start(full, 2)
        expected = {m.id for m in must_keep(full[:start])} | {m.id for m in full[start:]}
        s.compact("summary", keep_turns=2)
        assert expected <= {m.id for m in store_module._load(s.path)[0].messages}


def test_a_result_whose_call_was_trimmed_brings_the_call_back(tmp_path):
    """A tool call made before the window and answered after a trim (found by the property above):
    the result must not reach the model without its call, exactly as with the whole transcript."""
    import bot.sessions.store as store_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_module, "PARSED_TURNS", 3)
        patch.setattr(store_module, "TRIM_AT_TURNS", 6)
        s = SessionStore(tmp_path).open("telegram:9")
        for _ in range(8):
            s.append("user", text("u"))
        s.append("assistant", call("c1", "balance"))
        for _ in range(3):
            s.append("user", text("u"))  # the third trims the call away: its result has not come yet
        s.append("tool", result("c1", "balance"))
        full = store_module._load(s.path)[0].messages
        assert [m.id for m in s.history(1)] == [m.id for m in history(full, 1)]
        assert s.history(1)[0].parts[0]["type"] == "tool_call"
        assert (
            sum(1 for m in s.state.messages if m.role == "user") < 12
        )  # still trimmed: not the whole transcript
