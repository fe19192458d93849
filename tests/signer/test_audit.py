import copy
import json
import re
import sqlite3

import pytest
from hypothesis import given, settings, strategies as st

from signer.store.audit import AuditKeys, AuditLog, AuditSecretError, canonical, prepare, tail, verify
from signer.store.db import connect, ensure_schema

KEYS = AuditKeys(chain=b"c" * 32, anchor=b"a" * 32)  # in a home: derived from the master key


@pytest.fixture()
def log(tmp_path):
    conn = connect(tmp_path / "signer.db")
    ensure_schema(conn)
    audit = AuditLog(conn, tmp_path / "audit.anchor", keys=KEYS)
    for i in range(5):
        _committed(conn, audit, "test.event", {"i": i, "tx_hash": "0x" + "ab" * 32}, ts=1000.0 + i)
    yield conn, audit, tmp_path / "audit.anchor"
    conn.close()


def _committed(conn, audit, kind, body, ts=None):
    """One record in its own transaction, then the anchor: what every writer of the log does."""
    conn.execute("BEGIN IMMEDIATE")
    audit.append(kind, body, ts=ts)
    conn.execute("COMMIT")
    audit.write_anchor()


def _unlocked(conn):
    """What an attacker with write access to the file can do: drop the guard triggers."""
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("DROP TRIGGER audit_no_delete")


def test_intact_log_verifies(log):
    conn, audit, anchor = log
    report = verify(conn, anchor, keys=KEYS)
    assert report.ok, report.problems
    assert report.records == 5 and report.head_hash == audit.head[1]


def test_append_only_at_the_database_level(log):
    conn, _, _ = log
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit SET body='{}' WHERE seq=2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM audit WHERE seq=5")


def test_edited_record_fails(log):
    conn, _, anchor = log
    _unlocked(conn)
    conn.execute("UPDATE audit SET body=? WHERE seq=3", (json.dumps({"i": 99}),))
    report = verify(conn, anchor, keys=KEYS)
    assert not report.ok and any("record 3" in p and "edited" in p for p in report.problems)


def test_deleted_record_fails(log):
    conn, _, anchor = log
    _unlocked(conn)
    conn.execute("DELETE FROM audit WHERE seq=2")
    report = verify(conn, anchor, keys=KEYS)
    assert not report.ok and any("missing" in p for p in report.problems)


def test_reordered_records_fail(log):
    conn, _, anchor = log
    _unlocked(conn)
    rows = {r[0]: r for r in conn.execute("SELECT * FROM audit WHERE seq IN (2,3)")}
    conn.execute("DELETE FROM audit WHERE seq IN (2,3)")
    conn.execute("INSERT INTO audit VALUES(2,?,?,?,?,?)", rows[3][1:])
    conn.execute("INSERT INTO audit VALUES(3,?,?,?,?,?)", rows[2][1:])
    assert not verify(conn, anchor, keys=KEYS).ok


def test_truncated_tail_fails_through_the_anchor(log):
    conn, _, anchor = log
    _unlocked(conn)
    conn.execute("DELETE FROM audit WHERE seq=5")
    report = verify(conn, anchor, keys=KEYS)
    assert not report.ok and any("truncated" in p for p in report.problems)
    assert not verify(conn, anchor.with_name("absent"), keys=KEYS).ok  # no anchor for a non-empty log


def test_rewritten_chain_fails_through_the_anchor(log, tmp_path):
    conn, _, anchor = log
    _unlocked(conn)
    conn.execute("DELETE FROM audit")
    forged = AuditLog(
        conn, anchor, keys=AuditKeys(chain=b"x" * 32, anchor=b"y" * 32)
    )  # not the signer's keys
    for i in range(5):
        forged.append("test.event", {"i": i * 10}, ts=1000.0 + i)
    forged.write_anchor()  # over the signer's anchor: self-consistent, but under the wrong keys
    report = verify(conn, anchor, keys=KEYS)
    assert not report.ok
    assert any("MAC does not match" in p for p in report.problems)
    assert any("anchor" in p and "not authentic" in p for p in report.problems)


def test_rollback_then_reload_keeps_chain(log):
    conn, audit, anchor = log
    conn.execute("BEGIN")
    audit.append("discarded", {})
    conn.execute("ROLLBACK")
    audit.reload()
    _committed(conn, audit, "kept", {})
    assert verify(conn, anchor, keys=KEYS).ok
    assert [e.kind for e in tail(conn, 2)] == ["test.event", "kept"]


def test_secret_shaped_values_are_refused_or_redacted(log):
    conn, audit, _ = log
    key = "0x" + "11" * 32
    with pytest.raises(AuditSecretError):
        audit.append("oops", {"private": key})
    with pytest.raises(AuditSecretError):
        audit.append("oops", {"nested": [{"x": "owl_0123456789ab_" + "A" * 43}]})
    audit.reload()
    conn.execute("BEGIN")
    audit.append(
        "ok", {"agent_reason_unverified": f"pay {key} now", "request_hash": "ab" * 32, "amount": str(10**63)}
    )  # 64 decimal digits: an amount, not a key
    conn.execute("COMMIT")
    body = tail(conn, 1)[0].body
    assert key not in body["agent_reason_unverified"] and "[redacted hex]" in body["agent_reason_unverified"]


def test_tail_filters(log):
    conn, _, _ = log
    entries = tail(conn, 3)
    assert [e.seq for e in entries] == [3, 4, 5]
    assert tail(conn, 10, kind="nothing") == []
    assert [e.seq for e in tail(conn, 10, since_seq=4)] == [5]


def test_records_another_connection_appended_are_followed(log, tmp_path):
    """The daemon's log notices a local admin command's commit (PRAGMA data_version) and chains after it."""
    conn, audit, anchor = log
    other = connect(tmp_path / "signer.db")
    cli = AuditLog(other, anchor, keys=KEYS)
    _committed(other, cli, "client.added", {"name": "cli"})
    cli.close()
    other.close()
    _committed(conn, audit, "after", {})  # no reload() call: the head must be re-read on its own
    assert verify(conn, anchor, keys=KEYS).ok
    assert [e.kind for e in tail(conn, 2)] == ["client.added", "after"]


def test_several_prepared_records_chain_in_one_write(log):
    conn, audit, anchor = log
    conn.execute("BEGIN")
    seq = audit.write(prepare("first", {"a": 1}), prepare("second", {"b": 2}, ts=5.0))
    conn.execute("COMMIT")
    audit.write_anchor()
    assert seq == 7 and verify(conn, anchor, keys=KEYS).ok
    assert [(e.kind, e.ts) for e in tail(conn, 2)][1] == ("second", 5.0)


def test_a_secret_is_refused_while_preparing_before_any_write(log):
    conn, audit, _ = log
    with pytest.raises(AuditSecretError):
        prepare("oops", {"private": "0x" + "22" * 32})
    assert audit.head[0] == 5


_HEX = st.text("0123456789abcdef", min_size=64, max_size=64)
_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=40), _HEX.map(lambda h: f"pay {h}")
)
_BODIES = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["note", "reason", "amount", "to", "items"]), inner, max_size=4),
    ),
    max_leaves=20,
)


@given(body=st.dictionaries(st.sampled_from(["note", "reason", "amount", "items"]), _BODIES, max_size=4))
@settings(max_examples=300, deadline=None)
def test_scrubbing_never_changes_its_input_and_redacts_free_text(body):
    from signer.store.audit import _scrub

    before = copy.deepcopy(body)
    try:
        clean = _scrub(body)
    except AuditSecretError:  # a hex run outside a free-text key: refused, and still nothing changed
        assert body == before
        return
    assert body == before
    assert not any(re.search("[0-9a-f]{64}", text) for text in _free_text(clean))
    if "[redacted hex]" not in canonical(clean):
        assert clean is body  # nothing to redact: the same object back, no copy made


def _free_text(value, key=""):
    """Every string the audit log treats as free text (under "note" or "reason", or a list there)."""
    if isinstance(value, str):
        if key in ("note", "reason"):
            yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _free_text(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _free_text(v, key)


def test_verify_on_a_running_signer_never_reports_a_truncation_that_is_not_there(log, tmp_path):
    """A record committed (and anchored) while verify walks its snapshot is simply not in the walk."""
    conn, audit, anchor = log
    reader = connect(tmp_path / "signer.db", readonly=True)
    appended = []

    def commit_during_the_walk() -> int:
        if not appended:
            appended.append(True)
            _committed(conn, audit, "test.event", {"i": "during"})
        return 0

    reader.set_progress_handler(commit_during_the_walk, 50)
    try:
        report = verify(reader, anchor, keys=KEYS)
    finally:
        reader.set_progress_handler(None, 0)
        reader.close()
    assert appended and report.ok, report.problems
    assert verify(conn, anchor, keys=KEYS).ok


_SECRET_PARTS = st.sampled_from(
    ["owl_", "0123456789abcdef" * 4, "0x", "_", "-", "A" * 20, "é", "deadbeef" * 9, "owl_0123456789ab_"]
)


@given(
    text=st.lists(st.one_of(_SECRET_PARTS, st.text(max_size=30)), max_size=6).map("".join),
    key=st.sampled_from(["note", "reason", "agent_reason_unverified", "to", "tx_hash", "summary", ""]),
)
@settings(max_examples=500, deadline=None)
def test_a_string_the_scrub_skips_is_one_it_would_return_unchanged(text, key):
    """The shortcut taken before the regular expressions (strings too short for a hex secret and
    without `owl_`) skips only strings the full check returns as they are, under any key."""
    from signer.store.audit import _cannot_hold_secret, _scrub_text

    if _cannot_hold_secret(text):
        assert _scrub_text(text, key) == text


def _reference_scrub(value, key=""):
    """The audit scrub's rules written plainly (no copy on write, no shortcuts): the oracle."""
    from signer.store.audit import _scrub_text

    if isinstance(value, str):
        return _scrub_text(value, key)
    if isinstance(value, dict):
        return {k: _reference_scrub(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_reference_scrub(v, key) for v in value]
    return value


_ANY_TEXT = st.lists(st.one_of(_SECRET_PARTS, st.text(max_size=12)), max_size=5).map("".join)
_NESTED = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _ANY_TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(
            st.sampled_from(["note", "reason", "agent_reason_unverified", "to", "tx_hash", "items", "x"]),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=25,
)


@given(
    body=st.dictionaries(st.sampled_from(["note", "items", "tx_hash", "context", "x"]), _NESTED, max_size=4)
)
@settings(max_examples=400, deadline=None)
def test_the_scrub_refuses_and_redacts_exactly_what_its_plain_rules_do(body):
    from signer.store.audit import _scrub

    try:
        expected = _reference_scrub(body)
    except AuditSecretError:
        with pytest.raises(AuditSecretError):
            _scrub(body)
        return
    assert canonical(_scrub(body)) == canonical(expected)


@given(body=st.dictionaries(st.text(max_size=8), _NESTED, max_size=5))
@settings(max_examples=200, deadline=None)
def test_canonical_text_is_what_json_dumps_writes(body):
    """Records are serialized with one shared encoder: the same text as `json.dumps` with the same options."""
    assert canonical(body) == json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
