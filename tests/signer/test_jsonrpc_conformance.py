"""JSON-RPC 2.0 conformance of the signer's socket, by raw frames: what is not JSON is -32700, an id
that is not a string or an integer is -32600 and the request is never executed, and nothing a peer
sends (a lone surrogate included) drops the connection or leaves a traceback in the log."""

from __future__ import annotations

import pytest

from signer.wire.exchange import new_idempotency_key
from signer.wire.protocol import ErrorCode
from tests.conftest import FRIEND
from tests.signer.test_adversarial import Raw

pytestmark = pytest.mark.chain

NOT_JSON = [
    b'{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":NaN}}',
    b'{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":Infinity}}',
    b'{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":-Infinity}}',
    b'{"jsonrpc":"2.0","id":NaN,"method":"status"}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"status"}',  # a lone surrogate in the id
    b'{"jsonrpc":"2.0","id":1,"method":"sta\\udfffus"}',
    b'{"jsonrpc":"2.0","id":1,"method":"status","params":{"\\udc00":1}}',
]
BAD_IDS = [
    "{}",
    "[]",
    "[1]",
    '{"a":1}',
    "1.5",
    "1.0",
    "1e3",
    "true",
    "false",
    "null",
    str(2**53),
    str(-(2**60)),
    '"' + "x" * 129 + '"',
]


def _still_works(raw: Raw, token: str) -> None:
    assert raw.call("auth", {"token": token})["result"]["client"] == "admin"


@pytest.mark.parametrize("frame", NOT_JSON)
def test_what_is_not_json_is_a_parse_error_and_the_connection_lives(stack, frame):
    raw = Raw(stack.socket)
    try:
        raw.send(frame + b"\n")
        reply = raw.reply()
        assert reply["error"]["code"] == ErrorCode.PARSE and reply["id"] is None, reply
        _still_works(raw, stack.admin_token)
    finally:
        raw.close()
    assert "Traceback" not in stack.log.read_text(errors="replace")


@pytest.mark.parametrize("req_id", BAD_IDS)
def test_an_id_that_is_not_a_string_or_integer_is_refused_and_not_executed(stack, req_id):
    raw = Raw(stack.socket)
    try:
        # `auth` has an effect on the connection: had it run, `status` would answer.
        raw.send(
            b'{"jsonrpc":"2.0","id":%s,"method":"auth","params":{"token":"%s"}}\n'
            % (req_id.encode(), stack.admin_token.encode())
        )
        reply = raw.reply()
        assert reply["error"]["code"] == ErrorCode.INVALID_REQUEST and reply["id"] is None, reply
        assert "id must be" in reply["error"]["message"]
        assert raw.call("status")["error"]["code"] == ErrorCode.UNAUTHENTICATED
        _still_works(raw, stack.admin_token)
    finally:
        raw.close()


def test_a_sign_request_with_a_float_id_is_not_executed(stack):
    """Had it run, its idempotency key would be taken and a different request under it would conflict."""
    token = stack.client_token("bot")
    raw = Raw(stack.socket)
    try:
        assert raw.call("auth", {"token": token})["result"]["client"] == "bot"
        key = new_idempotency_key()
        intent = '{"chain_id":31337,"to":"%s","value":"1"}' % FRIEND
        raw.send(
            b'{"jsonrpc":"2.0","id":7.5,"method":"sign.request","params":{"idempotency_key":"%s","intent":%s}}\n'
            % (key.encode(), intent.encode())
        )
        assert raw.reply()["error"]["code"] == ErrorCode.INVALID_REQUEST
        other = {"idempotency_key": key, "intent": {"chain_id": 31337, "to": FRIEND, "value": "2"}}
        reply = raw.call("sign.request", other, req_id="s-1")
        assert "result" in reply and reply["id"] == "s-1", reply  # no conflict: the first never ran
    finally:
        raw.close()


def test_good_ids_are_echoed(stack):
    raw = Raw(stack.socket)
    try:
        for req_id in (0, -1, 2**53 - 1, "", "abc", "é😀", "x" * 128):
            reply = raw.call("auth", {"token": stack.admin_token}, req_id=req_id)
            assert reply["id"] == req_id and "result" in reply
    finally:
        raw.close()
