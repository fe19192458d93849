"""Frames from the bridge are checked for shape before anything is read out of them (review R2):
a malformed one is a worded CompanionError or is ignored, never a KeyError that stops `run`."""

from __future__ import annotations

import asyncio
import json
import types

import aiohttp
import pytest

from companion_bridge.companion import frames
from companion_bridge.companion.client import Companion
from companion_bridge.companion.errors import CompanionError


@pytest.mark.parametrize(
    "reply, message",
    [
        ({"type": "reply", "id": 1, "result": "x"}, "malformed reply"),
        ({"type": "reply", "id": 1, "ok": "true", "result": {}}, "malformed reply"),
        ({"type": "reply", "id": 1, "ok": False, "error": "boom"}, "malformed error reply"),
        ({"type": "reply", "id": 1, "ok": True, "result": [1]}, "result is not an object"),
        ({"type": "reply", "id": 1, "ok": True}, "result is not an object"),
        ([1, 2], "malformed reply"),
    ],
)
def test_a_malformed_reply_is_a_worded_error(reply, message):
    with pytest.raises(CompanionError, match=message):
        frames.reply_result(reply)


def test_an_error_reply_is_collapsed_and_capped():
    padded = "signer unavailable" + " " * 300 + "settled: nothing to do " + "x" * 400
    with pytest.raises(CompanionError) as caught:
        frames.reply_result({"ok": False, "error": {"code": "7", "message": padded}})
    assert caught.value.code is None and len(caught.value.message) <= 200
    assert "  " not in caught.value.message and caught.value.message.startswith("signer unavailable settled")
    assert frames.reply_result({"ok": True, "result": {"status": "signed"}}) == {"status": "signed"}


@pytest.mark.parametrize("welcome", ["[1]", "7", "not json", '{"state": [1]}', "[" * 300_000])
def test_a_malformed_welcome_is_a_worded_error(welcome):
    with pytest.raises(CompanionError, match="malformed welcome"):
        frames.welcome_state(welcome)
    assert frames.welcome_state('{"type": "welcome", "state": {"frozen": false}}') == {"frozen": False}


class FakeSocket:
    """What `Companion._read` iterates over: text frames, then the end of the connection."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.closed = False
        self.close_code = None

    def __aiter__(self):
        return self._messages()

    async def _messages(self):
        for text in self.texts:
            yield types.SimpleNamespace(type=aiohttp.WSMsgType.TEXT, data=text)


def test_the_reader_survives_frames_of_any_shape(tmp_path):
    wallet = types.SimpleNamespace(home=tmp_path, state={}, main_address="0x" + "11" * 20, device_id="dev_x")
    companion = Companion(wallet, "http://127.0.0.1:1")
    warnings: list[str] = []
    companion.warn = warnings.append
    texts = [
        "[1, 2]",
        "not json",
        "[" * 300_000,
        '{"type": "requests", "requests": "x"}',
        '{"type": "requests", "requests": [1, "a", null]}',
        '{"type": "request"}',
        '{"type": "state", "state": []}',
        '{"type": "resolved", "request_id": {}}',
        '{"type": "reply", "id": [1]}',
        json.dumps({"type": "resolved", "request_id": "req_last"}),
    ]
    companion._ws = FakeSocket(texts)

    async def read() -> None:
        await companion._read()

    asyncio.run(read())
    assert companion.resolved == {"req_last"}  # it read to the end
    assert companion.requests.empty() and len(companion.forged) == 4  # 1, "a", null, and none at all
    assert all("not a request" in w for w in warnings)


def test_an_http_reply_from_the_bridge_is_checked_too():
    assert frames.http_body(b'{"token": "t"}', 200) == {"token": "t"}
    for raw in (b"[1]", b"not json", b"[" * 300_000):
        with pytest.raises(CompanionError, match="malformed reply"):
            frames.http_body(raw, 200)
    with pytest.raises(CompanionError, match="^unknown code$") as caught:
        frames.http_body(b'{"detail": "unknown\\n\\n   code"}', 403)
    assert caught.value.code == 403
    with pytest.raises(CompanionError, match="HTTP 502"):
        frames.http_body(b"", 502)
    with pytest.raises(CompanionError, match="no token"):
        frames.text({"token": 7}, "token")
