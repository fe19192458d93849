"""Typed replies (signer.wire.replies): every method has a model, the real daemon's replies match it,
and a client refuses a reply that does not.

The forged replies come from a small Unix-socket server in this test that speaks the signer's framing:
it stands for a signer that is not ours (a compromised or mismatched one), so the real client is the
thing under test there, not a stand-in of it.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from policies.decision import Outcome
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerReplyError, new_idempotency_key
from signer.wire.protocol import KeyStatus, RequestStatus, Scope
from signer.wire.replies import (
    REPLIES,
    ApprovalsStateReply,
    ApprovalsWaitReply,
    PolicyCheckReply,
    SessionKeyCreateReply,
    SessionKeyRetireReply,
    SignerState,
    StatusReply,
    TopUpReply,
)
from signer.wire.sign_replies import AuthReply, SignReply, dump_reply, parse_reply
from tests.conftest import FRIEND, InProcessSigner

pytestmark = pytest.mark.chain


def test_every_method_of_the_daemon_has_a_reply_model(tmp_path, anvil):
    """The table the daemon serves (Tier 1 and policy reload included) and the models name the same methods."""
    home = InProcessSigner(tmp_path, anvil.url)

    async def served() -> set[str]:
        daemon = home.daemon()
        await daemon.start()
        try:
            return set(daemon.server.methods)
        finally:
            await daemon.stop()

    methods = asyncio.run(served())
    assert "approvals.answer" in methods and "policy.reload" in methods  # the whole table, not the core only
    assert methods | {"auth"} == set(REPLIES)


def _strict_round_trip(method: str, raw: Any) -> None:
    """What the daemon sent validates without the tolerant mode (no field the model does not name),
    and the model writes it back exactly (unset fields absent, numbers and strings unchanged)."""
    model = REPLIES[method].model_validate(raw)
    assert json.loads(dump_reply(model)) == raw, method


def test_the_daemons_replies_match_their_models(stack):
    admin = stack.admin_token
    sign = stack.client_token("bot", Scope.SIGN)
    bridge = stack.client_token("bridge", Scope.BRIDGE)
    seen: dict[str, Any] = {}

    async def run() -> None:
        async with (
            SignerClient(stack.socket, admin) as a,
            SignerClient(stack.socket, sign) as s,
            SignerClient(stack.socket, bridge) as b,
        ):
            assert isinstance(a.identity, AuthReply) and a.identity.scope is Scope.ADMIN

            async def both(client: SignerClient, method: str, params: dict[str, Any] | None = None) -> Any:
                raw = await client.call_json(method, params)
                _strict_round_trip(method, raw)
                seen[method] = parse_reply(method, raw)
                return seen[method]

            created = await both(
                a, "session_key.create", {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337}
            )
            assert (
                isinstance(created, SessionKeyCreateReply) and created.session_key.status is KeyStatus.ACTIVE
            )
            topped = await both(
                a,
                "session_key.topup",
                {"idempotency_key": new_idempotency_key("t"), "key_id": created.session_key.key_id},
            )
            assert isinstance(topped, TopUpReply) and topped.funded and topped.amount and topped.amount > 0
            await both(a, "session_key.list")
            await both(s, "addresses")
            await both(s, "balance", {"chain_id": 31337})
            await both(s, "policy.show")
            await both(s, "policy.validate", {"text": "not: [a, policy"})
            check = await both(s, "policy.check", {"intent": {"chain_id": 31337, "to": FRIEND, "value": "1"}})
            assert isinstance(check, PolicyCheckReply) and check.decision.outcome is Outcome.ALLOW

            signed = await s.sign({"chain_id": 31337, "to": FRIEND, "value": "1000"})
            assert type(signed) is SignReply and signed.status is RequestStatus.SIGNED and signed.tx_hash
            assert signed.decision is not None and signed.decision.outcome is Outcome.ALLOW
            replay_key = new_idempotency_key("t")
            body = {
                "idempotency_key": replay_key,
                "intent": {"chain_id": 31337, "to": FRIEND, "value": "1000"},
            }
            first = await both(s, "sign.request", body)
            again = await s.call_as(SignReply, "sign.request", body)
            assert again.replayed and not first.replayed and again.tx_hash == first.tx_hash
            escalated = await both(
                s,
                "sign.request",
                {
                    "idempotency_key": new_idempotency_key("t"),
                    "intent": {"chain_id": 31337, "to": FRIEND, "value": str(10**22)},
                },
            )
            assert escalated.status in (RequestStatus.PENDING, RequestStatus.DENIED)
            assert escalated.decision.outcome in (Outcome.ESCALATE, Outcome.DENY)
            await both(s, "sign.status", {"request_id": escalated.request_id})
            status = await both(s, "status")
            assert isinstance(status, StatusReply) and status.client.scope is Scope.SIGN
            assert status.in_flight.transactions is None  # only the admin sees which transactions

            state = await both(b, "approvals.state", {"witness_seq": 1})
            assert isinstance(state, ApprovalsStateReply) and state.audit_checkpoint.at is not None
            waited = await both(b, "approvals.wait", {"after": 0, "timeout": 0})
            assert isinstance(waited, ApprovalsWaitReply)
            await both(b, "companion.devices")
            await both(a, "companion.list")
            await both(a, "companion.pair_begin", {"name": "phone", "ttl_seconds": 60})
            await both(a, "audit.tail", {"n": 50})
            await both(a, "audit.verify")
            await both(a, "status")  # the admin's: with the transactions in flight
            rotated = await both(
                a,
                "session_key.rotate",
                {"idempotency_key": new_idempotency_key("t"), "key_id": created.session_key.key_id},
            )
            assert isinstance(rotated, SessionKeyRetireReply) and rotated.retired.status is KeyStatus.RETIRED
            assert rotated.session_key is not None and rotated.sweep_hint
            frozen = await both(a, "signer.freeze")
            assert isinstance(frozen, SignerState) and frozen.frozen

    asyncio.run(run())
    assert len(seen) >= 20, sorted(seen)


# ---- a signer that is not ours ------------------------------------------------------------------


class ForgingSigner:
    """A Unix socket that answers `auth` properly and every other call with `forge(method, id)`."""

    def __init__(self, forge: Callable[[str, Any], bytes]) -> None:
        self.forge = forge
        self.dir = Path(tempfile.mkdtemp(prefix="ow"))
        self.path = self.dir / "s.sock"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            frame = json.loads(line)
            if frame["method"] == "auth":
                writer.write(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": frame["id"], "result": {"client": "bot", "scope": "sign"}}
                    ).encode()
                    + b"\n"
                )
            else:
                writer.write(self.forge(frame["method"], frame["id"]))
            await writer.drain()
        writer.close()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        server = await asyncio.start_unix_server(self.handle, path=str(self.path))
        try:
            async with SignerClient(self.path, "x" * 32, timeout=5) as client:
                try:
                    return await client.call(method, params)
                except SignerReplyError:
                    assert client._writer is None  # a signer that garbled a reply is not asked again
                    raise
        finally:
            server.close()
            await server.wait_closed()


def _result(req_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": req_id, "result": result}).encode() + b"\n"


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

FORGERIES = {
    "an unknown status": {**GOOD_SIGN, "status": "approved_by_attacker"},
    "no request id": {k: v for k, v in GOOD_SIGN.items() if k != "request_id"},
    "an outcome that is not one": {**GOOD_SIGN, "decision": {**GOOD_SIGN["decision"], "outcome": "sure"}},
    "a float amount": {
        **GOOD_SIGN,
        "decision": {
            **GOOD_SIGN["decision"],
            "spends": [{"chain_id": 1, "asset": "native", "amount": 1000.5, "usd_micros": None}],
        },
    },
    "a list for an object": [GOOD_SIGN],
    "a string for a bool": {**GOOD_SIGN, "replayed": "yes"},
}


@pytest.mark.parametrize("what", sorted(FORGERIES))
def test_a_forged_sign_reply_is_refused_with_a_clear_error(what):
    signer = ForgingSigner(lambda method, req_id: _result(req_id, FORGERIES[what]))
    with pytest.raises(SignerReplyError) as raised:
        asyncio.run(signer.call("sign.request", {}))
    message = str(raised.value)
    assert "'sign.request'" in message and "refused" in message and "does not match its model" in message


def test_a_good_reply_with_fields_from_a_newer_signer_is_read_and_the_extras_dropped():
    newer = {**GOOD_SIGN, "gas_used": "21000", "decision": {**GOOD_SIGN["decision"], "score": 7}}
    reply = asyncio.run(ForgingSigner(lambda method, req_id: _result(req_id, newer)).call("sign.request", {}))
    assert isinstance(reply, SignReply) and reply.status is RequestStatus.SIGNED
    assert reply.decision is not None and reply.decision.spends[0].amount == 1000
    assert "gas_used" not in reply.model_dump() and "score" not in reply.decision.model_dump()


@pytest.mark.parametrize(
    "frame",
    [
        b"this is not json\n",
        b'{"jsonrpc":"2.0","id":999,"result":{}}\n',  # an answer to some other call
        b'{"jsonrpc":"2.0","id":%d}\n',  # neither result nor error
    ],
)
def test_a_reply_that_is_not_json_rpc_to_this_call_is_refused(frame):
    signer = ForgingSigner(lambda method, req_id: frame.replace(b"%d", str(req_id).encode()))
    with pytest.raises(SignerReplyError, match="refused"):
        asyncio.run(signer.call("status"))


def test_a_method_the_client_has_no_model_for_is_refused():
    signer = ForgingSigner(lambda method, req_id: _result(req_id, {"anything": 1}))
    with pytest.raises(SignerReplyError, match="no reply model"):
        asyncio.run(signer.call("wallet.drain"))


_REQUIRED = [k for k, f in SignReply.model_fields.items() if f.is_required()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(sorted(GOOD_SIGN)),
    junk=st.one_of(
        st.none(),
        st.booleans(),
        st.floats(allow_nan=True),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    ),
)
def test_any_field_of_the_wrong_type_is_refused_never_coerced_into_meaning(field, junk):
    """A signed reply with one field replaced by junk of another JSON type is refused, or (for an optional
    field set to null) read as absent: never a SignReply that says something the signer did not."""
    forged = {**GOOD_SIGN, field: junk}
    try:
        reply = parse_reply("sign.request", forged)
    except ValueError:
        return
    # accepted: only an optional field cleared, or the same value again
    assert field not in _REQUIRED and (junk is None or getattr(reply, field) == GOOD_SIGN[field]), (
        field,
        junk,
    )
