"""What a compromised bot can do to the signer over its socket: nothing beyond its scope."""

from __future__ import annotations

import json
import os
import select
import socket
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.protocol import ErrorCode, Scope
from tests.conftest import FRIEND

pytestmark = pytest.mark.chain


def frame(req_id, method: str, params=None) -> bytes:
    """One request as a line of NDJSON."""
    body = {"jsonrpc": "2.0", "id": req_id, "method": method}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode() + b"\n"


class Raw:
    """A bare socket speaking NDJSON: nothing between the attacker and the daemon."""

    def __init__(self, path, timeout: float = 10) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def reply(self) -> dict:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def replies(self, n: int) -> list[dict]:
        return [self.reply() for _ in range(n)]

    def call(self, method: str, params=None, req_id=1) -> dict:
        self.send(frame(req_id, method, params))
        return self.reply()

    def close(self) -> None:
        self.sock.close()


def _sign_params(value: int = 10**15) -> dict:
    return {
        "idempotency_key": new_idempotency_key(),
        "intent": {"chain_id": 31337, "to": FRIEND, "value": str(value)},
    }


def _code(stack, token, method, params=None) -> int:
    with pytest.raises(SignerError) as err:
        stack.call_sync(token, method, params)
    return err.value.code


def test_read_token_cannot_sign_or_administer(stack):
    read = stack.client_token("reader", Scope.READ)
    assert _code(stack, read, "sign.request", _sign_params()) == ErrorCode.FORBIDDEN
    assert (
        _code(
            stack, read, "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
        )
        == ErrorCode.FORBIDDEN
    )
    assert stack.call_sync(read, "status")["client"]["scope"] == "read"  # what it may do, it can


def test_sign_token_cannot_change_keys_policy_or_read_audit(stack):
    stack.funded_session_key()
    sign = stack.client_token("bot", Scope.SIGN)
    key_id = stack.call_sync(sign, "session_key.list")["session_keys"][0]["key_id"]
    for method, params in [
        ("session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}),
        ("session_key.revoke", {"idempotency_key": new_idempotency_key(), "key_id": key_id}),
        ("session_key.rotate", {"idempotency_key": new_idempotency_key(), "key_id": key_id}),
        ("session_key.topup", {"idempotency_key": new_idempotency_key(), "key_id": key_id}),
        ("audit.tail", {"n": 5}),
    ]:
        assert _code(stack, sign, method, params) == ErrorCode.FORBIDDEN, method
    for method in ("session_key.export", "policy.set", "policy.load", "key.export", "debug.eval"):
        assert _code(stack, sign, method, {}) == ErrorCode.METHOD_NOT_FOUND, method
    # policy.validate only parses text; the running policy is untouched.
    before = stack.call_sync(sign, "policy.show")["policy_hash"]
    loose = stack.call_sync(sign, "policy.validate", {"text": "version: 1\nchains: []\nassets: []\n"})
    assert stack.call_sync(sign, "policy.show")["policy_hash"] == before
    assert "valid" in loose
    # Over the limit is not signed, whatever the token.
    over = stack.call_sync(sign, "sign.request", _sign_params(value=10**18))
    assert over["status"] != "signed" and over["rule_id"] == "limit.per_tx"


def test_replies_never_carry_key_material(stack):
    key = stack.funded_session_key()
    admin = stack.admin_token
    texts = [json.dumps(stack.call_sync(admin, m)) for m in ("status", "addresses", "session_key.list")]
    texts.append(json.dumps(stack.call_sync(admin, "audit.tail", {"n": 1000})))
    conn = sqlite3.connect(stack.paths.db)
    sealed = [row[0] for row in conn.execute("SELECT sealed FROM session_keys")]
    conn.close()
    assert sealed and all(len(s) > 32 for s in sealed)
    for text in texts:
        assert key["address"] in text or "entries" in text
        for blob in sealed:
            assert blob.hex() not in text
    assert "sealed" not in " ".join(texts)


def test_an_rpc_url_with_an_api_key_never_reaches_a_client_or_the_audit_log(tmp_path):
    from bot.devchain import free_port
    from tests.conftest import SignerStack

    secret = "v3/SECRETAPIKEY0123456789"
    stack = SignerStack(tmp_path, f"http://127.0.0.1:{free_port()}/{secret}").start()  # nothing listens there
    try:
        with pytest.raises(SignerError) as err:
            stack.call_sync(
                stack.client_token("reader", Scope.READ), "balance", {"chain_id": 31337, "address": FRIEND}
            )
        assert "chain 31337 (anvil)" in err.value.message and "SECRETAPIKEY" not in err.value.message
        stack.call_sync(
            stack.admin_token,
            "session_key.create",
            {"idempotency_key": new_idempotency_key(), "chain_id": 31337},
        )
        reply = stack.call_sync(
            stack.client_token("bot"),
            "sign.request",
            {
                "idempotency_key": new_idempotency_key(),
                "intent": {"chain_id": 31337, "to": FRIEND, "value": "1"},
            },
        )
        assert reply["status"] == "failed" and "chain 31337 (anvil)" in json.dumps(
            reply
        )  # simulation unreachable
        assert "SECRETAPIKEY" not in json.dumps(reply)
        assert "SECRETAPIKEY" not in json.dumps(stack.call_sync(stack.admin_token, "audit.tail", {"n": 1000}))
    finally:
        stack.close()


def test_authentication_is_required_and_checked(stack):
    raw = Raw(stack.socket)
    try:
        assert raw.call("status")["error"]["code"] == ErrorCode.UNAUTHENTICATED
        bad = "owl_" + "0" * 12 + "_" + "A" * 43
        assert raw.call("auth", {"token": bad})["error"]["code"] == ErrorCode.UNAUTHENTICATED
        assert raw.call("auth", {"token": "x" * 5000})["error"]["code"] in (
            ErrorCode.UNAUTHENTICATED,
            ErrorCode.INVALID_PARAMS,
        )
        token = stack.client_token("bot")
        assert raw.call("auth", {"token": token})["result"]["client"] == "bot"
        assert "result" in raw.call("status")
        stack.owlia("signer", "client", "revoke", "bot", "--passphrase-file", str(stack.passfile))
        assert raw.call("status")["error"]["code"] == ErrorCode.UNAUTHENTICATED  # revocation bites at once
    finally:
        raw.close()


@pytest.mark.parametrize(
    "frame, code",
    [
        (b"{not json\n", ErrorCode.PARSE),
        (b"[1,2,3]\n", ErrorCode.INVALID_REQUEST),
        (b'"just a string"\n', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"1.0","id":1,"method":"status"}\n', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":"status"}\n', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":"status","params":[1]}\n', ErrorCode.INVALID_PARAMS),
        (b"\xff\xfe\xfd\n", ErrorCode.PARSE),
        (b"[" * 60000 + b"\n", ErrorCode.PARSE),
        (b'{"jsonrpc":"2.0","id":1,"method":"auth","params":{"token":1}}\n', ErrorCode.INVALID_PARAMS),
    ],
)
def test_malformed_frames_get_clear_errors(stack, frame, code):
    raw = Raw(stack.socket)
    try:
        raw.send(frame)
        reply = raw.reply()
        assert reply["error"]["code"] == code and reply["error"]["message"]
        assert raw.call("auth", {"token": stack.admin_token})["result"]  # the same connection still works
    finally:
        raw.close()


def test_bad_sign_params_name_the_field(stack):
    raw = Raw(stack.socket)
    try:
        raw.call("auth", {"token": stack.client_token("bot")})
        for intent, field in [
            ({"chain_id": 31337, "to": FRIEND, "value": 0.5}, "value"),
            ({"chain_id": 31337, "to": FRIEND, "value": "-1"}, "value"),
            ({"chain_id": 31337, "to": FRIEND, "value": str(2**256)}, "value"),
            ({"chain_id": 31337, "to": FRIEND.replace("C", "c", 1)[:41] + "D", "value": "1"}, "to"),
            ({"chain_id": 31337, "to": "0x1234", "value": "1"}, "to"),
            ({"chain_id": 31337, "to": FRIEND, "value": "1", "data": "0xzz"}, "data"),
            ({"chain_id": 31337, "to": FRIEND, "value": "1", "description": "trust me"}, "description"),
            ({"chain_id": True, "to": FRIEND, "value": "1"}, "chain_id"),  # not chain 1
            ({"chain_id": "31337", "to": FRIEND, "value": "1"}, "chain_id"),
        ]:
            reply = raw.call("sign.request", {"idempotency_key": new_idempotency_key(), "intent": intent})
            assert reply["error"]["code"] == ErrorCode.INVALID_PARAMS, intent
            assert field in reply["error"]["message"], reply
        # the reason is shown on the companion's screen: a terminal escape could rewrite the recipient
        reply = raw.call(
            "sign.request",
            {
                "idempotency_key": new_idempotency_key(),
                "reason": "ok\x1b[3A",
                "intent": {"chain_id": 31337, "to": FRIEND, "value": "1"},
            },
        )
        assert reply["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert "reason" in reply["error"]["message"] and "U+001B" in reply["error"]["message"]
    finally:
        raw.close()


def test_a_pipeline_of_costly_frames_does_not_stall_other_clients(stack):
    """Twenty pipelined policy.validate calls with hostile YAML, then someone else asks for status."""
    import threading
    import time

    hostile = (
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "policy.validate",
                "params": {"text": "[" * 30_000 + "]" * 30_000},
            }
        ).encode()
        + b"\n"
    )
    raw = Raw(stack.socket)
    raw.call("auth", {"token": stack.client_token("reader", Scope.READ)})
    sender = threading.Thread(target=raw.send, args=(hostile * 20,))
    sender.start()
    replies = [raw.reply()]  # the daemon has answered the first: it is working through the rest
    started = time.monotonic()
    stack.call_sync(stack.admin_token, "status")
    waited = time.monotonic() - started
    sender.join()
    replies += [raw.reply() for _ in range(19)]
    raw.close()
    assert all(r["result"]["valid"] is False for r in replies)
    assert waited < 1.0, waited


def test_oversized_frames_are_refused_and_the_daemon_keeps_serving(stack):
    raw = Raw(stack.socket)
    try:
        huge = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "auth", "params": {"token": "A" * 200_000}})
        raw.send(huge.encode() + b"\n")
        assert raw.reply()["error"]["code"] == ErrorCode.TOO_LARGE
        assert raw.call("auth", {"token": stack.admin_token})["result"]["scope"] == "admin"
    finally:
        raw.close()
    assert stack.call_sync(stack.admin_token, "status")["unlocked"] is True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(min_size=0, max_size=400), min_size=1, max_size=5))
def test_fuzzed_frames_never_break_the_daemon(stack, frames):
    raw = Raw(stack.socket)
    try:
        for frame in frames:
            raw.send(frame.replace(b"\n", b" ") + b"\n")
            if frame.replace(b"\n", b" ").strip():
                reply = raw.reply()
                assert "error" in reply  # never authenticated, so nothing can succeed
    finally:
        raw.close()
    assert stack.call_sync(stack.admin_token, "status")["unlocked"] is True


def test_tampered_audit_log_fails_verify(stack):
    stack.funded_session_key()
    stack.call_sync(stack.client_token("bot"), "sign.request", _sign_params())
    stack.stop()
    assert stack.owlia("audit", "verify").returncode == 0
    conn = sqlite3.connect(stack.paths.db)
    conn.execute("DROP TRIGGER audit_no_update")
    row = conn.execute("SELECT seq, body FROM audit WHERE kind='sign.decided'").fetchone()
    conn.execute("UPDATE audit SET body=? WHERE seq=?", (row[1].replace('"allow"', '"deny"'), row[0]))
    conn.commit()
    conn.close()
    result = stack.owlia("audit", "verify")
    assert result.returncode == 1
    assert any("edited" in p for p in json.loads(result.stdout)["problems"])


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another local user")
def test_a_user_holding_every_connection_it_can_leaves_room_for_the_others(make_stack):
    """A compromised bot (uid `nobody` here) opens connections until refused and holds them."""
    import time

    from signer.server import AUTH_DEADLINE

    stack = make_stack(signer={"allowed_uids": [65534], "max_connections": 8}).start()
    os.chmod(stack.socket, 0o666)
    os.chmod(stack.sockdir, 0o755)
    report_r, report_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: become `nobody`, take every connection it may, report, hold them
        try:
            os.setgid(65534)
            os.setuid(65534)
            opened, held, refusals = [], [], set()
            for _ in range(12):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(str(stack.socket))
                opened.append(s)
            # wait until the daemon has answered all it will refuse (a refusal makes its socket readable;
            # one it admits stays silent), or the deadline: then the parent sees the count that came
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                readable, _, _ = select.select(opened, [], [], 0.1)
                if len(readable) >= len(opened) - 4:  # it admits at most max_connections // 2 per user
                    break
            for s in opened:
                s.setblocking(False)
                try:
                    refusals.add(json.loads(s.recv(65536).split(b"\n")[0])["error"]["message"])
                except BlockingIOError:  # nothing said: admitted
                    held.append(s)
            os.write(report_w, json.dumps({"held": len(held), "refusals": sorted(refusals)}).encode())
            os.read(done_r, 1)
        except BaseException as exc:  # noqa: BLE001 - report to the parent
            os.write(report_w, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(0)
    try:
        child = json.loads(os.read(report_r, 65536))
        assert child == {"held": 4, "refusals": ["too many connections from this user (at most 4)"]}, child
        assert stack.call_sync(stack.admin_token, "status")["frozen"] is False  # the owner still gets in
        raw = Raw(stack.socket)  # a connection that never authenticates is closed at the deadline
        raw.sock.settimeout(AUTH_DEADLINE + 5)
        started = time.monotonic()
        assert "authenticate within" in raw.reply()["error"]["message"]
        assert AUTH_DEADLINE - 0.5 <= time.monotonic() - started <= AUTH_DEADLINE + 3
        raw.close()
    finally:
        os.write(done_w, b"x")
        os.waitpid(pid, 0)
        for fd in (report_r, report_w, done_r, done_w):
            os.close(fd)


def test_other_local_users_are_refused_by_peer_uid(stack):
    """Even if the socket's mode were opened up, SO_PEERCRED keeps other users out."""
    os.chmod(stack.socket, 0o666)
    os.chmod(stack.sockdir, 0o755)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: become `nobody`, then knock
        try:
            os.setgid(65534)
            os.setuid(65534)
            replies = set()
            for _ in range(20):  # the request is already sent when the refusal comes: no reset, the reason
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(10)
                s.connect(str(stack.socket))
                s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"status"}\n')
                replies.add(s.makefile("rb").readline())
                s.close()
            os.write(write_end, b"".join(replies) if len(replies) == 1 else repr(replies).encode())
        except BaseException as exc:  # noqa: BLE001 - report to the parent
            os.write(write_end, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    out = os.read(read_end, 65536).decode()
    os.close(read_end)
    reply = json.loads(out)
    assert reply["error"]["code"] == ErrorCode.FORBIDDEN
    assert "may not use the signer" in reply["error"]["message"]
