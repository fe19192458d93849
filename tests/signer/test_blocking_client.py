"""The blocking client (signer.wire.blocking) and the asyncio client (signer.wire.client) are one protocol:
for any reply line a signer (or something posing as one) sends, both return the same reply model or raise
the same error with the same words, and both drop a connection whose reply they refused. Run against a
real socket served by a thread, then against the real signer on anvil."""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import uvloop
from hypothesis import HealthCheck, given, settings, strategies as st

from signer.wire.blocking import BlockingSignerClient
from signer.wire.client import SignerClient
from signer.wire.exchange import MAX_REPLY_BYTES, SignerError, SignerUnavailable
from signer.wire.replies import StatusReply
from signer.wire.sign_replies import AuthReply, PolicyShowReply, SignReply

FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
AUTH = {"client": "cli", "scope": "sign"}
GOOD_SIGN = {
    "status": "signed",
    "request_id": "req_" + "a" * 32,
    "summary": "send 1000 wei",
    "tx_hash": "0x" + "b" * 64,
    "decision": {
        "outcome": "allow",
        "rule_id": "r",
        "reason": "ok",
        "findings": [],
        "spends": [{"chain_id": 1, "asset": "native", "amount": "1000", "usd_micros": None}],
        "new_recipients": [],
    },
}
Answer = Callable[[dict[str, Any]], "bytes | None"]  # the bytes to send for a request; None: hang up


class ScriptedSigner:
    """A Unix socket served by a thread, one connection at a time: `auth` is answered properly, every
    other request with `answer(frame)`. It records the frames it was sent."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.frames: list[dict[str, Any]] = []
        self.dir = Path(tempfile.mkdtemp(prefix="ow"))
        self.path = self.dir / "s.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        self._listener.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            with conn, conn.makefile("rb") as lines:
                for line in lines:
                    frame = json.loads(line)
                    self.frames.append(frame)
                    if frame["method"] == "auth":
                        out: bytes | None = _result(frame["id"], AUTH)
                    else:
                        out = self.answer(frame)
                    if out is None:
                        break
                    try:
                        conn.sendall(out)
                    except OSError:
                        break

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (closing alone does not)
        except OSError:
            pass
        self._listener.close()
        self._thread.join(timeout=10)
        self.path.unlink(missing_ok=True)
        self.dir.rmdir()


@pytest.fixture
def scripted():
    made: list[ScriptedSigner] = []

    def make(answer: Answer) -> ScriptedSigner:
        made.append(ScriptedSigner(answer))
        return made[-1]

    yield make
    for signer in made:
        signer.close()


def _result(req_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": req_id, "result": result}).encode() + b"\n"


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a call came to: the reply (as its type and JSON) or the error (its type, words, code, data)."""
    try:
        reply = call()
    except SignerError as exc:
        return "error", (type(exc).__name__, str(exc), exc.code, exc.data)
    return "reply", (type(reply).__name__, reply.model_dump(mode="json"))


def blocking_call(
    path: Path, method: str, params: dict[str, Any] | None = None, *, timeout: float = 5
) -> tuple[tuple[str, Any], bool]:
    """The blocking client's outcome, and whether it still holds its connection afterwards."""
    client = BlockingSignerClient(path, "x" * 32, timeout=timeout)
    try:
        client.connect()
        result = outcome(lambda: client.call(method, params))
        return result, client._sock is not None
    finally:
        client.close()


def async_call(
    path: Path, method: str, params: dict[str, Any] | None = None, *, timeout: float = 5
) -> tuple[tuple[str, Any], bool]:
    async def run() -> tuple[tuple[str, Any], bool]:
        client = SignerClient(path, "x" * 32, timeout=timeout)
        try:
            await client.connect()
            try:
                reply = await client.call(method, params)
            except SignerError as exc:
                return (
                    "error",
                    (type(exc).__name__, str(exc), exc.code, exc.data),
                ), client._writer is not None
            return (
                "reply",
                (type(reply).__name__, reply.model_dump(mode="json")),
            ), client._writer is not None
        finally:
            await client.close()

    on_asyncio = asyncio.run(run())
    assert uvloop.run(run()) == on_asyncio  # the bot's loop and asyncio's own read replies alike
    return on_asyncio


def both(
    path: Path, method: str, params: dict[str, Any] | None = None, *, timeout: float = 5
) -> tuple[str, Any]:
    blocking = blocking_call(path, method, params, timeout=timeout)
    assert blocking == async_call(path, method, params, timeout=timeout)
    return blocking[0]


# ---- the same answer to the same line ---------------------------------------------------------------


def test_a_good_reply_is_the_same_model() -> None:
    signer = ScriptedSigner(lambda frame: _result(frame["id"], GOOD_SIGN))
    try:
        kind, (model, body) = both(signer.path, "sign.request", {})
        assert kind == "reply" and model == "SignReply" and body["status"] == "signed"
    finally:
        signer.close()


def test_an_error_reply_is_the_same_signer_error_and_the_connection_stays(scripted) -> None:
    signer = scripted(
        lambda frame: (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": frame["id"],
                    "error": {"code": -32010, "message": "denied by policy", "data": {"rule_id": "x"}},
                }
            ).encode()
            + b"\n"
        )
    )
    blocking, still_connected = blocking_call(signer.path, "sign.request", {})
    assert blocking == ("error", ("SignerError", "denied by policy (code -32010)", -32010, {"rule_id": "x"}))
    assert still_connected and async_call(signer.path, "sign.request", {}) == (blocking, True)


@pytest.mark.parametrize(
    "line",
    [
        b"this is not json\n",
        b'{"jsonrpc":"2.0","id":999,"result":{}}\n',  # an answer to another call
        b'{"jsonrpc":"2.0","id":%d}\n',  # neither result nor error
        b'{"jsonrpc":"2.0","id":%d,"result":{},"error":{}}\n',  # both
        b"[1, 2]\n",
        b'{"jsonrpc":"2.0","id":%d,"result":{"status":"approved_by_attacker"}}\n',  # does not match the model
    ],
)
def test_a_reply_that_is_not_one_is_refused_alike_and_the_connection_dropped(scripted, line) -> None:
    signer = scripted(lambda frame: line.replace(b"%d", str(frame["id"]).encode()))
    blocking, still_connected = blocking_call(signer.path, "sign.request", {})
    assert blocking[0] == "error" and blocking[1][0] == "SignerReplyError" and "refused" in blocking[1][1]
    assert not still_connected
    assert async_call(signer.path, "sign.request", {}) == (blocking, False)


def test_a_malformed_error_is_refused_alike(scripted) -> None:
    signer = scripted(
        lambda frame: json.dumps({"jsonrpc": "2.0", "id": frame["id"], "error": "no"}).encode() + b"\n"
    )
    assert (
        both(signer.path, "status")[1][1] == "the signer's error for 'status' is malformed: refused (code -2)"
    )


def test_a_hang_up_a_silence_and_an_overlong_line_are_the_same_lost_connection(scripted) -> None:
    hung_up = scripted(lambda frame: None)
    assert both(hung_up.path, "status") == (
        "error",
        ("SignerUnavailable", "the signer closed the connection (code -1)", -1, None),
    )
    silent = scripted(lambda frame: b"")
    assert both(silent.path, "status", timeout=0.3) == (
        "error",
        ("SignerUnavailable", "lost the signer connection (TimeoutError) (code -1)", -1, None),
    )
    flood = scripted(
        lambda frame: (
            b'{"jsonrpc":"2.0","id":'
            + str(frame["id"]).encode()
            + b',"result":"'
            + b"x" * (MAX_REPLY_BYTES + 10)
            + b'"}\n'
        )
    )
    assert both(flood.path, "status") == (
        "error",
        ("SignerUnavailable", "lost the signer connection (ValueError) (code -1)", -1, None),
    )
    partial = scripted(
        lambda frame: _result(frame["id"], {"status": "x"})[:-1] + b""
    )  # no newline, then silence
    assert (
        both(partial.path, "status", timeout=0.3)[1][1]
        == "lost the signer connection (TimeoutError) (code -1)"
    )


def test_a_line_up_to_the_limit_is_read(scripted) -> None:
    """The limit is the asyncio reader's: MAX_REPLY_BYTES before the newline are read, one byte more is not."""

    def sized(frame: dict[str, Any], size: int) -> bytes:  # `size` bytes, then the newline
        head = b'{"jsonrpc":"2.0","id":' + str(frame["id"]).encode() + b',"result":"'
        return head + b"x" * (size - len(head) - 2) + b'"}\n'

    at_limit = scripted(lambda frame: sized(frame, MAX_REPLY_BYTES))
    assert both(at_limit.path, "status")[1][0] == "SignerReplyError"  # read, and refused by its model
    over = scripted(lambda frame: sized(frame, MAX_REPLY_BYTES + 1))
    assert both(over.path, "status")[1][1] == "lost the signer connection (ValueError) (code -1)"


def test_no_signer_is_the_same_unreachable_signer(tmp_path) -> None:
    nothing = tmp_path / "no.sock"
    with pytest.raises(SignerUnavailable) as blocking:
        BlockingSignerClient(nothing, "x" * 32).connect()

    async def connect() -> None:
        await SignerClient(nothing, "x" * 32).connect()

    with pytest.raises(SignerUnavailable) as in_loop:
        asyncio.run(connect())
    assert str(blocking.value) == str(in_loop.value)
    assert (
        "cannot reach the signer" in blocking.value.message and "FileNotFoundError" in blocking.value.message
    )


def test_both_send_the_same_sign_request(scripted) -> None:
    signer = scripted(lambda frame: _result(frame["id"], GOOD_SIGN))
    intent = {"chain_id": 31337, "to": FRIEND, "value": "1000"}
    with BlockingSignerClient(signer.path, "x" * 32) as client:
        assert isinstance(client.identity, AuthReply)
        client.sign(intent, idempotency_key="key-00000001", reason="rent", source="cli")

    async def run() -> None:
        async with SignerClient(signer.path, "x" * 32) as client:
            await client.sign(intent, idempotency_key="key-00000001", reason="rent", source="cli")

    asyncio.run(run())
    blocking_frames, async_frames = signer.frames[:2], signer.frames[2:]
    assert blocking_frames == async_frames
    assert blocking_frames[1]["params"] == {
        "idempotency_key": "key-00000001",
        "intent": intent,
        "source": "cli",
        "reason": "rent",
    }


# Reply lines from the well formed to the forged: for each, both clients agree.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def reply_lines(draw: st.DrawFn) -> Callable[[dict[str, Any]], bytes]:
    kind = draw(st.sampled_from(["sign", "mutated", "error", "envelope", "bytes"]))
    id_kind = draw(st.sampled_from(["same", "same", "same", "none", "other", "text"]))
    body: dict[str, Any]
    if kind == "sign":
        body = {"result": GOOD_SIGN}
    elif kind == "mutated":
        field = draw(st.sampled_from(sorted(GOOD_SIGN) + ["extra"]))
        body = {"result": {**GOOD_SIGN, field: draw(JSON_VALUES)}}
    elif kind == "error":
        body = {
            "error": draw(
                st.one_of(
                    JSON_VALUES,
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "code": st.integers(-40000, 0),
                            "message": st.text(max_size=10),
                            "data": JSON_VALUES,
                        },
                    ),
                )
            )
        }
    elif kind == "envelope":
        body = draw(st.dictionaries(st.sampled_from(["result", "error", "jsonrpc"]), JSON_VALUES, max_size=3))
    else:
        raw = draw(st.binary(max_size=40)).replace(b"\n", b" ") + b"\n"
        return lambda frame: raw

    def line(frame: dict[str, Any]) -> bytes:
        req_id = {"same": frame["id"], "none": None, "other": frame["id"] + 1, "text": str(frame["id"])}[
            id_kind
        ]
        return json.dumps({"jsonrpc": "2.0", "id": req_id, **body}).encode() + b"\n"

    return line


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=reply_lines())
def test_any_reply_line_gets_the_same_answer_from_both_clients(line) -> None:
    signer = ScriptedSigner(line)
    try:
        both(signer.path, "sign.request", {})
    finally:
        signer.close()


# ---- the real signer ---------------------------------------------------------------------------------


def test_the_real_signer_answers_both_alike(stack) -> None:
    stack.funded_session_key()
    token = stack.client_token("cli")
    with BlockingSignerClient(stack.socket, token) as client:
        assert client.identity is not None and client.identity.client == "cli"
        assert isinstance(client.call("status"), StatusReply)
        assert isinstance(client.call_as(PolicyShowReply, "policy.show"), PolicyShowReply)
        signed = client.sign({"chain_id": 31337, "to": FRIEND, "value": "1000"}, source="cli")
        assert isinstance(signed, SignReply) and signed.signed and signed.tx_hash
        with pytest.raises(SignerError) as refused:
            client.call("session_key.create", {"idempotency_key": "k" * 12, "chain_id": 31337})
        assert refused.value.code < 0 and client._sock is not None  # a refusal is not a broken connection
        again = client.sign({"chain_id": 31337, "to": FRIEND, "value": "1000"}, source="cli")
        assert again.signed and again.request_id != signed.request_id

    async def in_loop() -> str:
        async with SignerClient(stack.socket, token) as client:
            try:
                await client.call("session_key.create", {"idempotency_key": "k" * 12, "chain_id": 31337})
            except SignerError as exc:
                return str(exc)
        return "no error"

    assert asyncio.run(in_loop()) == str(refused.value)
