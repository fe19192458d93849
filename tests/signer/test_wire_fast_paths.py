"""The socket path's fast checks decide exactly as the definitions they replace.

Each piece here runs on every request or reply, so it avoids a regex or a second validation pass;
these properties pin it to the plain definition it stands for."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import uvloop
from hypothesis import given, settings, strategies as st

from signer.wire.client import MAX_QUEUED, SignerClient
from signer.wire.exchange import MAX_REPLY_BYTES, SignerReplyError
from signer.wire.protocol import MAX_UINT256, _uint256
from signer.wire.sign_replies import SignReply

GOOD_SIGN = {
    "status": "signed",
    "request_id": "req_" + "a" * 32,
    "summary": "send 1000 wei",
    "tx_hash": "0x" + "b" * 64,
}

_DECIMAL = re.compile(r"[0-9]{1,78}")


def _uint256_by_regex(value: Any) -> int:
    """The definition: ints or 1-78 ASCII decimal digits, within 0..2**256-1; never floats or bools."""
    if isinstance(value, bool) or isinstance(value, float):
        raise ValueError("float or bool")
    if isinstance(value, str):
        if not _DECIMAL.fullmatch(value):
            raise ValueError("not decimal")
        value = int(value)
    if not isinstance(value, int):
        raise ValueError("not an integer")
    if not 0 <= value <= MAX_UINT256:
        raise ValueError("out of range")
    return value


def _outcome(fn: Any, value: Any) -> Any:
    try:
        return ("ok", fn(value))
    except ValueError:
        return ("refused",)


_DIGITS = "0123456789"
_TRICKY = "٠١٢³²¹①𝟘𝟙０１\n \t+-_.eE"  # other scripts' digits, superscripts, full-width, signs

amounts = st.one_of(
    st.text(alphabet=_DIGITS, max_size=90),
    st.text(alphabet=_DIGITS + _TRICKY, max_size=82),
    st.text(max_size=20),
    st.integers(min_value=-(2**260), max_value=2**260),
    st.sampled_from(
        [
            MAX_UINT256,
            MAX_UINT256 + 1,
            str(MAX_UINT256),
            str(MAX_UINT256 + 1),
            "9" * 78,
            "0" * 78,
            "0" * 79,
            "",
            True,
            False,
            1.0,
            float("nan"),
            None,
            b"1",
            [1],
        ]
    ),
    st.floats(),
)


@settings(max_examples=3000, deadline=None)
@given(value=amounts)
def test_uint256_accepts_and_refuses_exactly_what_the_regex_definition_does(value: Any) -> None:
    assert _outcome(_uint256, value) == _outcome(_uint256_by_regex, value)


@pytest.mark.parametrize("value", ["١٢٣", "１２", "²", "12\n", " 12", "+1", "1_000", "1e3", "0" * 79])
def test_uint256_refuses_strings_that_only_look_decimal(value: str) -> None:
    with pytest.raises(ValueError):
        _uint256(value)


# ---- the clients' reply parser ---------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**300), max_value=2**300)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=25,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same JSON types all the way down (1 and 1.0 and True are not the same reply)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@settings(max_examples=1500, deadline=None)
@given(
    result=json_values,
    req_id=st.integers(min_value=0, max_value=2**53),
    ascii_only=st.booleans(),
    spaced=st.booleans(),
)
def test_a_reply_line_reads_as_the_same_values_json_loads_gives(
    result: Any, req_id: int, ascii_only: bool, spaced: bool
) -> None:
    """checked_reply parses with pydantic-core: for any JSON a signer can write (compact or spaced,
    escaped or raw UTF-8, big integers, any float), the same values as the standard library's parser."""
    import json

    from signer.wire.exchange import checked_reply

    frame = {"jsonrpc": "2.0", "id": req_id, "result": result}
    separators = (", ", ": ") if spaced else (",", ":")
    line = json.dumps(frame, ensure_ascii=ascii_only, separators=separators).encode() + b"\n"
    assert _same(checked_reply("status", req_id, line), json.loads(line))


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"result":"\\ud800"}\n',  # a lone surrogate: no signer writes one
        b"\xef\xbb\xbf" + b'{"jsonrpc":"2.0","id":1,"result":1}\n',  # a BOM
        '{"jsonrpc":"2.0","id":1,"result":1}\n'.encode("utf-16"),
        b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 5000 + b"]" * 5000 + b"}\n",  # a nesting bomb
        b'{"jsonrpc":"2.0","id":1,"result":1} x\n',
        b'{"jsonrpc":"2.0","id":1,"result":\xff}\n',
    ],
)
def test_a_reply_line_that_is_not_plain_utf8_json_is_refused_not_crashed_on(line: bytes) -> None:
    from signer.wire.exchange import SignerReplyError, checked_reply

    with pytest.raises(SignerReplyError, match="not JSON"):
        checked_reply("status", 1, line)


# ---- the async client's reading: bounded whatever the signer sends ------------------------------------


def _flooding_signer(path: str, sent: list[int], stopped: threading.Event) -> socket.socket:
    """Answers `auth`, then answers the next request and floods unasked-for lines until its writes block
    (or it has sent far more than a client may keep); then sets `stopped`."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, conn.makefile("rb") as lines:
            for line in lines:
                frame = json.loads(line)
                result: Any = {"client": "cli", "scope": "sign"} if frame["method"] == "auth" else GOOD_SIGN
                conn.sendall(
                    json.dumps({"jsonrpc": "2.0", "id": frame["id"], "result": result}).encode() + b"\n"
                )
                if frame["method"] != "auth":
                    break
            conn.settimeout(2.0)
            junk = b'{"jsonrpc":"2.0","id":999,"result":{}}\n' * 4096
            try:
                while sent[0] < 64 * MAX_REPLY_BYTES:
                    conn.sendall(junk)
                    sent[0] += len(junk)
            except OSError:
                pass  # blocked: the client stopped reading
            stopped.set()
            lines.read(1)  # hold the connection until the client closes it

    threading.Thread(target=serve, daemon=True).start()
    return listener


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_lines_the_client_did_not_ask_for_pause_its_reading_instead_of_filling_memory(tmp_path, loop) -> None:
    """A signer that floods lines after a reply: the client keeps at most MAX_QUEUED (plus one read) of
    them, the sender blocks, and the next call reads the first stale line and refuses it."""
    sent = [0]
    path = str(tmp_path / "s.sock")
    stopped = threading.Event()
    listener = _flooding_signer(path, sent, stopped)

    async def run() -> tuple[int, bool, str]:
        client = SignerClient(Path(path), "x" * 32, timeout=5)
        await client.connect()
        reply = await client.call("sign.request", {})
        assert isinstance(reply, SignReply)
        deadline = time.monotonic() + 30
        while not stopped.is_set():  # the flood runs until the sender blocks (its 2 s timeout)
            assert time.monotonic() < deadline, "the flooding signer never stopped"
            await asyncio.sleep(0.02)
        replies = client._replies
        assert replies is not None
        queued, paused = replies._queued, replies._paused
        with pytest.raises(SignerReplyError) as refused:
            await client.call("status")
        return queued, paused, str(refused.value)

    try:
        queued, paused, refused = (uvloop.run if loop == "uvloop" else asyncio.run)(run())
    finally:
        listener.close()
    assert paused and queued <= MAX_QUEUED + (1 << 20)
    assert sent[0] < 64 * MAX_REPLY_BYTES  # the sender was blocked, not drained into memory
    assert "not a JSON-RPC reply to it" in refused
