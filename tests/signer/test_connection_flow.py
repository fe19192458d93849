"""How the signer's socket server paces a connection: replies in order, pipelined frames taking
turns, a client that never reads its replies, a half-closed or vanished client (signer.server)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from signer.wire.exchange import new_idempotency_key
from signer.wire.protocol import ErrorCode, Scope
from tests.conftest import FRIEND
from tests.signer.test_adversarial import Raw, frame
from tests.signer.test_idle_memory import _status_kb

pytestmark = pytest.mark.chain
# What the kernel holds for a stream socket by default, one way: its send buffer and the peer's receive buffer.
SOCKET_BUFFERS = sum(int(Path(f"/proc/sys/net/core/{b}mem_default").read_text()) for b in "wr")


def _authenticated(stack, token: str, timeout: float = 10) -> Raw:
    raw = Raw(stack.socket, timeout)
    assert "result" in raw.call("auth", {"token": token}, req_id=0)
    return raw


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["status", "nope", "garbage", "blank", "sign"]), min_size=1, max_size=40))
def test_pipelined_frames_are_answered_in_order_whether_they_wait_or_not(stack, kinds):
    """Sign requests wait (another connection is open, so each yields once before its commit); the
    rest are answered at once. Every frame with an id gets its reply, in the order sent."""
    token = stack.client_token(f"pipe{time.monotonic_ns()}", Scope.SIGN)
    other = _authenticated(stack, token)  # two connections: a sign request yields a turn before its commit
    raw = _authenticated(stack, token)
    try:
        frames, expected = b"", []
        for i, kind in enumerate(kinds, start=1):
            if kind == "blank":
                frames += b"   \n"  # no reply
            elif kind == "garbage":
                frames += b"{not json\n"
                expected.append((None, ErrorCode.PARSE))
            elif kind == "sign":
                frames += frame(
                    i,
                    "sign.request",
                    {
                        "idempotency_key": new_idempotency_key(),
                        "intent": {"chain_id": 31337, "to": FRIEND, "value": "1"},
                    },
                )
                expected.append((i, None))
            else:
                frames += frame(i, kind)
                expected.append((i, None if kind == "status" else ErrorCode.METHOD_NOT_FOUND))
        raw.send(frames)
        replies = raw.replies(len(expected))
        got = [(r["id"], r["error"]["code"] if "error" in r else None) for r in replies]
        # A sign request may be denied by the policy (a result) or fail for want of a session key (an
        # error): its id and place in the order are what matter here.
        assert [i for i, _ in got] == [i for i, _ in expected]
        assert [c for (_, c), (_, e) in zip(got, expected) if e is not None] == [
            e for _, e in expected if e is not None
        ]
    finally:
        raw.close()
        other.close()


def test_a_client_that_never_reads_its_replies_is_paused_and_others_are_served(stack):
    """Thousands of pipelined frames whose replies are never read: the daemon stops reading that
    connection once the replies fill its buffers (its memory stays bounded), serves everyone else,
    and answers every frame, in order, once the client reads again."""
    token = stack.client_token("flood", Scope.READ)
    raw = _authenticated(stack, token, timeout=20)
    n = 40_000
    frames = b"".join(frame(i, "status") for i in range(1, n + 1))
    assert len(frames) > 4 * SOCKET_BUFFERS  # more than every buffer on the way can hold
    rss_before = _status_kb(stack.process.pid, "VmRSS")
    sent = threading.Event()
    sender = threading.Thread(target=lambda: (raw.send(frames), sent.set()), daemon=True)
    sender.start()
    # Room for a daemon that kept reading to take every frame. Nothing happens when the daemon is
    # right, so there is no event to wait on; a loaded machine only makes the check weaker, not flaky.
    time.sleep(1.5)
    assert not sent.is_set(), "the daemon kept reading a connection whose replies nobody reads"
    started = time.monotonic()
    assert stack.call_sync(stack.admin_token, "status")["unlocked"] is True
    assert time.monotonic() - started < 2.0
    grown_mb = (_status_kb(stack.process.pid, "VmRSS") - rss_before) / 1024
    assert grown_mb < 8, f"the daemon buffered {grown_mb:.1f} MB for a client that reads nothing"
    replies = raw.replies(n)
    sender.join(timeout=30)
    raw.close()
    assert [r["id"] for r in replies] == list(range(1, n + 1))
    assert all("result" in r for r in replies)


def test_a_half_closed_client_gets_every_reply_then_the_connection_closes(stack):
    raw = _authenticated(stack, stack.admin_token)
    raw.send(b"".join(frame(i, "status") for i in range(1, 51)) + b'{"jsonrpc": "2.0", "id": 99')
    raw.sock.shutdown(socket.SHUT_WR)  # the trailing partial frame is never answered
    replies = raw.replies(50)
    assert [r["id"] for r in replies] == list(range(1, 51))
    assert raw.buf == b"" and raw.sock.recv(1) == b""  # closed by the daemon
    raw.close()


def test_a_client_gone_mid_pipeline_frees_its_connection_slot(make_stack):
    """max_connections 4 (two per user): connections dropped with frames unanswered are released."""
    stack = make_stack(signer={"max_connections": 4}).start()
    token = stack.client_token("gone", Scope.READ)
    for _ in range(10):
        for raw in [_authenticated(stack, token) for _ in range(2)]:
            raw.send(b"".join(frame(i, "status") for i in range(200)))
            raw.close()
    deadline = time.monotonic() + 5
    while True:  # the slots come back once the daemon has seen the hang-ups
        probe = [Raw(stack.socket) for _ in range(2)]
        try:
            for raw in probe:
                raw.send(frame(1, "auth", {"token": token}))
            replies = [raw.reply() for raw in probe]
        finally:
            for raw in probe:
                raw.close()
        if all("result" in r for r in replies) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert all("result" in r for r in replies), replies
