"""A bridge that drops an approval keeps a transaction it can send: the companion journals every
approval it signs, tells the user which are outstanding, and settles one only when a nonce quote
signed by the signer shows its nonce used. Real signer, bridge and anvil; the bridge is made to
misbehave from inside its own thread."""

from __future__ import annotations

import asyncio
import json
import stat
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from bot.devchain import DevChainError, free_port
from companion_bridge.companion import cli as companion_cmd
from companion_bridge.companion.client import Choice, Companion, CompanionError
from companion_bridge.companion.journal import Entry, Journal
from companion_bridge.companion.wallet import CompanionWallet
from policies.kernel.keccak import keccak256
from signer.wire.messages import NONCE_DOMAIN, signed_message
from tests.companion.conftest import MAIN_PASS, Tier1, bridge_of, request_for, transfer
from tests.conftest import FRIEND, balance, rpc, wait_receipt

pytestmark = [pytest.mark.chain]
OVER_LIMIT = 2 * 10**16


@pytest.fixture()
def tier1(shared_tier1):
    return shared_tier1


def tx_hash(raw_hex: str) -> str:
    return "0x" + keccak256(bytes.fromhex(raw_hex[2:])).hex()


@dataclass
class Tamper:
    """The bridge's call handler, wrapped inside the bridge's own thread. `answer`: None (honest),
    "error" (drop the approval, report an error), "silent" (drop it, say nothing), "fake_signed"
    (drop it, reply "signed" with its hash, as the signer would), "garbled" (drop it, reply with a
    status no signer sends). `quote`: rewrites the
    `approvals.state` reply on its way to the companion. `held`: raw transactions it kept."""

    honest: Callable
    answer: str | None = None
    quote: Callable[[dict], dict] | None = None
    held: list[str] = field(default_factory=list)
    forwarded: list[str] = field(default_factory=list)

    async def call(self, device_id: str, message: dict[str, Any]) -> dict[str, Any]:
        method, params, reply_id = message.get("method"), message.get("params") or {}, message.get("id")
        raw = params.get("raw_tx") if method == "approvals.answer" else None
        if raw and self.answer:
            self.held.append(raw)
            if self.answer == "error":
                return {
                    "type": "reply",
                    "id": reply_id,
                    "ok": False,
                    "error": {"code": -32603, "message": "signer unavailable, try again later"},
                }
            if self.answer == "silent":  # a reply to no call: the companion hears nothing
                return {"type": "reply", "id": None, "ok": False, "error": {"code": 0, "message": ""}}
            if self.answer == "garbled":  # a reply no signer sends: a status outside RequestStatus
                return {
                    "type": "reply",
                    "id": reply_id,
                    "ok": True,
                    "result": {
                        "request_id": params["request_id"],
                        "status": "approved_by_bridge",
                        "tx_hash": tx_hash(raw),
                    },
                }
            return {
                "type": "reply",
                "id": reply_id,
                "ok": True,
                "result": {"request_id": params["request_id"], "status": "signed", "tx_hash": tx_hash(raw)},
            }
        if raw:
            self.forwarded.append(raw)
        reply = await self.honest(device_id, message)
        if method == "approvals.state" and self.quote is not None and reply.get("ok"):
            reply = {**reply, "result": self.quote(reply["result"])}
        return reply


@pytest.fixture()
def tamper(tier1, monkeypatch) -> Tamper:
    bridge = bridge_of(tier1)
    wrapper = Tamper(bridge._call)
    monkeypatch.setattr(bridge, "_call", wrapper.call)
    return wrapper


async def escalate(tier1: Tier1, companion: Companion) -> dict:
    [pending] = await tier1.submit(transfer(FRIEND, OVER_LIMIT))
    assert pending["status"] == "pending_approval"
    return await request_for(companion, pending["request_id"])


def main_nonce(tier1: Tier1, wallet: CompanionWallet) -> int:
    return int(rpc(tier1.anvil.url, "eth_getTransactionCount", [wallet.main_address, "latest"]), 16)


def approve_into_a_failed_answer(tier1: Tier1) -> CompanionWallet:
    """A paired companion approves an escalation; the (tampered) bridge answers with an error."""

    async def approve() -> CompanionWallet:
        companion = await tier1.paired()
        try:
            request = await escalate(tier1, companion)
            with pytest.raises(CompanionError):
                await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            return companion.wallet
        finally:
            await companion.close()

    return asyncio.run(approve())


def outstanding_cli(wallet: CompanionWallet, *args: str):
    return CliRunner().invoke(companion_cmd.app, ["outstanding", "--dir", str(wallet.home), *args])


def void(tier1: Tier1, wallet: CompanionWallet, nonce: int, request: dict) -> None:
    """What the user does from a wallet of their own: a 0-value transfer to themselves at that nonce."""
    tx = {
        **request["tx"],
        "to": wallet.main_address,
        "value": "0",
        "data": "0x",
        "nonce": nonce,
        "gas_limit": 21000,
    }
    raw = "0x" + wallet.sign_transaction(tx, bytearray(MAIN_PASS)).hex()
    wait_receipt(tier1.anvil, rpc(tier1.anvil.url, "eth_sendRawTransaction", [raw]))


def test_an_approval_the_bridge_drops_is_outstanding_until_someone_uses_its_nonce(tier1, tamper, anvil):
    """The bridge reports an error and keeps the transaction. The companion says so at once, and
    `outstanding` lists it (exit 3). The danger is real: the held transaction, broadcast later by
    whoever has it, is mined. Then a signed quote shows the nonce used and the entry settles."""
    tamper.answer = "error"
    warnings: list[str] = []

    async def approve() -> tuple[CompanionWallet, dict, int]:
        companion = await tier1.paired()
        companion.warn = warnings.append
        try:
            request = await escalate(tier1, companion)
            nonce = main_nonce(tier1, companion.wallet)
            with pytest.raises(CompanionError, match="signer unavailable"):
                await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            return companion.wallet, request, nonce
        finally:
            await companion.close()

    wallet, request, nonce = asyncio.run(approve())
    [held] = tamper.held
    [entry] = wallet_journal(wallet)
    assert (entry.request_id, entry.nonce, entry.tx_hash, entry.chain_id) == (
        request["request_id"],
        nonce,
        tx_hash(held),
        31337,
    )
    assert (entry.to, entry.value, entry.settled) == (FRIEND, str(OVER_LIMIT), False)
    assert entry.reply.startswith("error: signer unavailable") and entry.quoted_at is not None
    shown = "\n".join(warnings)
    assert "OUTSTANDING SIGNED TRANSACTION" in shown and f"nonce: {nonce}" in shown and tx_hash(held) in shown
    assert f"with nonce {nonce}" in shown and "0.02 ETH" in shown

    out = outstanding_cli(wallet)
    assert out.exit_code == 3, out.output
    assert f"nonce: {nonce}" in out.output and tx_hash(held) in out.output and FRIEND in out.output
    assert (
        "checked against your signer's nonce quote" in out.output and "1 outstanding, 0 settled" in out.output
    )
    # `run` warns as it connects. The request is still open on the signer (it never saw the answer):
    # denying it now does not void the transaction the bridge holds.
    out = CliRunner().invoke(
        companion_cmd.app, ["run", "--dir", str(wallet.home), "--once", "--answers", "deny"]
    )
    assert out.exit_code == 0, out.output
    banner, request_shown = (
        out.output.index("OUTSTANDING SIGNED TRANSACTION"),
        out.output.index("APPROVAL REQUEST"),
    )
    assert banner < request_shown and f"with nonce {nonce}" in out.output and "deny: denied" in out.output
    assert outstanding_cli(wallet).exit_code == 3

    tamper.answer = None
    before = balance(anvil, FRIEND)
    assert main_nonce(tier1, wallet) == nonce  # nothing was sent...
    wait_receipt(
        anvil, rpc(anvil.url, "eth_sendRawTransaction", [held])
    )  # ...until whoever holds it sends it
    assert balance(anvil, FRIEND) - before == OVER_LIMIT and main_nonce(tier1, wallet) == nonce + 1

    out = outstanding_cli(wallet)
    assert out.exit_code == 0, out.output
    assert "0 outstanding, 1 settled" in out.output and f"nonce {nonce} on chain 31337 is used" in out.output
    [entry] = wallet_journal(wallet, settled=True)
    assert entry.settled_by["main_nonce_mined"] == nonce + 1


def wallet_journal(wallet: CompanionWallet, *, settled: bool = False) -> list[Entry]:
    entries = Journal(wallet.home).entries()
    return [e for e in entries if e.settled] if settled else [e for e in entries if not e.settled]


def test_a_silent_bridge_is_caught_by_the_run_loop_and_a_void_transfer_settles_it(tier1, tamper, anvil):
    """The bridge swallows the approval and says nothing. `run` reports the silence and the warning;
    the user voids the transaction with a 0-value transfer to themselves at that nonce; the held one
    can then never be mined, and the next signed quote settles the entry."""
    tamper.answer = "silent"

    async def scenario() -> None:
        companion = await tier1.paired()
        companion.answer_timeout = 1.5
        try:
            request = await escalate(tier1, companion)
            while not companion.requests.empty():  # only ours goes to `run`
                companion.requests.get_nowait()
            companion.requests.put_nowait(request)
            nonce = main_nonce(tier1, companion.wallet)
            lines: list[str] = []

            async def decide(req: dict, text: str) -> Choice:
                return Choice("approve", bytearray(MAIN_PASS))

            await companion.run(decide, once=True, report=lines.append)
            shown = "\n".join(lines)
            assert "approve: no reply from the bridge within 1.5 s" in shown
            assert "OUTSTANDING SIGNED TRANSACTION" in shown and f"with nonce {nonce}" in shown
            [entry] = await companion.check_outstanding(warn=False)
            assert entry.nonce == nonce and entry.reply == "no reply within 1.5 s"

            before = balance(anvil, FRIEND)
            void(tier1, companion.wallet, nonce, request)
            with pytest.raises(DevChainError, match="nonce"):
                rpc(anvil.url, "eth_sendRawTransaction", [tamper.held[0]])  # void for good
            assert balance(anvil, FRIEND) == before
            assert await companion.check_outstanding() == []
            assert companion.journal.entries()[0].settled_by["main_nonce_mined"] == nonce + 1
        finally:
            await companion.close()

    asyncio.run(scenario())


def test_a_normal_approval_leaves_nothing_outstanding(tier1, tamper, anvil):
    async def scenario() -> CompanionWallet:
        companion = await tier1.paired()
        warnings: list[str] = []
        companion.warn = warnings.append
        try:
            request = await escalate(tier1, companion)
            before = balance(anvil, FRIEND)
            result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            assert result["status"] == "signed"
            [entry] = companion.journal.entries()
            assert entry.settled and entry.tx_hash == result["tx_hash"] == tx_hash(tamper.forwarded[-1])
            assert entry.reply == f"signed {result['tx_hash']}"
            assert await companion.check_outstanding() == [] and warnings == []
            assert balance(anvil, FRIEND) - before == OVER_LIMIT
            return companion.wallet
        finally:
            await companion.close()

    wallet = asyncio.run(scenario())
    out = outstanding_cli(wallet)
    assert out.exit_code == 0 and "0 outstanding, 1 settled" in out.output, out.output


def forgeries(tier1: Tier1) -> list[tuple[str, Callable[[dict], dict]]]:
    rogue = Ed25519PrivateKey.generate()

    def bumped(state: dict) -> dict:
        return {**state, "main_nonce": {k: v + 1 for k, v in state["main_nonce"].items()}}

    def resigned(state: dict) -> dict:
        body = {
            "main_account": state["main_account"],
            "main_nonce": bumped(state)["main_nonce"],
            "ts": state["ts"],
        }
        return {**state, **body, "nonce_sig": rogue.sign(signed_message(NONCE_DOMAIN, body)).hex()}

    return [
        ("a higher nonce under the signer's signature", bumped),
        ("a higher nonce, unsigned", lambda s: {k: v for k, v in bumped(s).items() if k != "nonce_sig"}),
        ("a higher nonce signed by another key", resigned),
        ("garbage for a signature", lambda s: {**bumped(s), "nonce_sig": "zz"}),
    ]


def test_a_bridge_cannot_settle_an_entry_with_a_forged_quote_or_a_faked_signed_reply(tier1, tamper, anvil):
    """The bridge drops the approval but answers "signed" with the right hash, as the signer would,
    and then bumps the nonce in every quote: none of it settles the entry (the signer does not sign
    its answers, and the quotes do not verify). A genuine quote after the nonce is used does."""
    tamper.answer = "fake_signed"

    async def scenario() -> None:
        companion = await tier1.paired()
        warnings: list[str] = []
        companion.warn = warnings.append
        try:
            request = await escalate(tier1, companion)
            nonce = main_nonce(tier1, companion.wallet)
            result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            assert result["status"] == "signed" and result["tx_hash"] == tx_hash(tamper.held[0])  # the lie
            [entry] = companion.journal.unsettled()
            assert entry.nonce == nonce and entry.reply == f"signed {result['tx_hash']}"
            assert any("OUTSTANDING SIGNED TRANSACTION" in w for w in warnings)
            for what, forge in forgeries(tier1):
                tamper.quote = forge
                assert [e.tx_hash for e in await companion.check_outstanding(warn=False)] == [
                    entry.tx_hash
                ], what
            tamper.quote = None
            assert len(await companion.check_outstanding(warn=False)) == 1  # honest, but the nonce is unused
            void(tier1, companion.wallet, nonce, request)
            tamper.quote = forgeries(tier1)[1][1]  # after the nonce is used, a forgery still proves nothing
            assert len(await companion.check_outstanding(warn=False)) == 1
            tamper.quote = None
            assert await companion.check_outstanding(warn=False) == []
        finally:
            await companion.close()

    asyncio.run(scenario())


def test_the_journal_is_private_and_holds_no_key_material(tier1, tamper):
    async def scenario() -> CompanionWallet:
        companion = await tier1.paired()
        try:
            tamper.answer = "error"
            dropped = await escalate(tier1, companion)
            with pytest.raises(CompanionError):
                await companion.answer(dropped, Choice("approve", bytearray(MAIN_PASS)))
            void(tier1, companion.wallet, dropped["tx"]["nonce"], dropped)
            tamper.answer = None
            done = await escalate(tier1, companion)
            assert (await companion.answer(done, Choice("approve", bytearray(MAIN_PASS))))[
                "status"
            ] == "signed"
            assert len(companion.journal.entries()) == 2
            return companion.wallet
        finally:
            await companion.close()

    wallet = asyncio.run(scenario())
    home = wallet.home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("journal.json", ".journal.lock"):
        assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    text = (home / "journal.json").read_text().lower()
    keystore = json.loads((home / "keystore.json").read_text())
    secrets = {
        "main key": tier1.main_key.hex(),
        "device key": (home / "device.key").read_text().strip().lower(),
        "keystore ciphertext": keystore["crypto"]["ciphertext"].lower(),
        "passphrase": MAIN_PASS.decode().lower(),
    }
    for raw in tamper.held + tamper.forwarded[-1:]:
        secrets[f"raw tx {raw[:12]}"] = raw[2:].lower()
        secrets[f"signature of {raw[:12]}"] = raw[-128:].lower()  # the signature's tail
    for what, secret in secrets.items():
        assert secret not in text, what
    assert set(json.loads(text)["entries"][0]) == {
        "request_id",
        "chain_id",
        "nonce",
        "tx_hash",
        "to",
        "value",
        "summary",
        "signed_at",
        "reply",
        "quoted_at",
        "seen_ts",
        "settled_at",
        "settled_by",
        "confirmed",
    }


def test_past_50_unsettled_approvals_the_companion_signs_nothing_more(tier1, tamper):
    """Never drop an unsettled entry to make room: refuse, before the main key is touched."""

    async def scenario() -> None:
        companion = await tier1.paired()
        for i in range(50):  # on a chain the signer quotes no nonce for: they stay unsettled
            companion.journal.record(Entry(f"req_old{i}", 999, i, f"0x{i:064x}", FRIEND, "1", "old", 0.0))
        signed: list = []
        real_sign = companion.wallet.sign_transaction
        companion.wallet.sign_transaction = lambda tx, p: signed.append(tx) or real_sign(tx, p)
        try:
            request = await escalate(tier1, companion)
            passphrase = bytearray(MAIN_PASS)
            with pytest.raises(CompanionError, match="50 approvals you signed are still unsettled"):
                await companion.answer(request, Choice("approve", passphrase))
            assert signed == [] and tamper.held == [] and tamper.forwarded == []
            assert passphrase == bytearray(len(MAIN_PASS))  # wiped all the same
            assert len(companion.journal.entries()) == 50
            assert (await companion.answer(request, Choice("deny")))[
                "status"
            ] == "denied"  # denying still works
        finally:
            await companion.close()

    asyncio.run(scenario())


def test_outstanding_offline_reads_the_journal_and_fails_loudly_on_a_broken_one(tier1):
    wallet = tier1.new_wallet("offline")
    out = outstanding_cli(wallet, "--offline")
    assert out.exit_code == 0 and "0 outstanding, 0 settled" in out.output, out.output
    Journal(wallet.home).record(Entry("req_x", 31337, 4, "0x" + "ab" * 32, FRIEND, "5", "send 5 wei", 0.0))
    out = outstanding_cli(wallet, "--offline")
    assert (
        out.exit_code == 3
        and "nonce: 4" in out.output
        and "no nonce quote signed by your signer" in out.output
    )
    body = json.loads((wallet.home / "journal.json").read_text())
    body["entries"][0]["value"] = "lots"  # review R7: a traceback, before
    (wallet.home / "journal.json").write_text(json.dumps(body))
    out = outstanding_cli(wallet, "--offline")
    assert out.exit_code == 1 and "entry 0: value is not an amount of wei" in out.output, out.output
    (wallet.home / "journal.json").write_text("{broken")
    out = outstanding_cli(wallet, "--offline")
    assert out.exit_code == 1 and "unreadable" in out.output, out.output


# ---- regressions from the internal review (tests/companion/test_review_*.py there) -----------------


def test_R1_a_request_redelivered_after_a_failed_answer_is_never_paid_twice(tier1, tamper, anvil):
    """The bridge reports an error for approval #1, keeps the transaction, broadcasts it itself, and
    delivers the same (signer-signed, still open) request again. Before, the companion showed it as
    new and signed it at the next nonce: paid twice. Now the screen says it was approved already,
    and the companion signs it only at the journaled nonce: once that is used, it signs nothing."""
    tamper.answer = "error"

    async def scenario():
        companion = await tier1.paired()
        try:
            request = await escalate(tier1, companion)
            n0 = main_nonce(tier1, companion.wallet)
            before = balance(anvil, FRIEND)
            with pytest.raises(CompanionError):
                await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            [held] = tamper.held
            wait_receipt(
                anvil, rpc(anvil.url, "eth_sendRawTransaction", [held])
            )  # the bridge sends it itself
            tamper.answer = None
            shown: list[str] = []

            async def decide(req: dict, text: str) -> Choice:
                shown.append(text)
                return Choice("approve", passphrase)

            passphrase = bytearray(MAIN_PASS)
            lines: list[str] = []
            companion.requests.put_nowait(request)  # ...and redelivers the request
            await companion.run(decide, once=True, report=lines.append)
            assert (
                f"ALREADY APPROVED as tx {tx_hash(held)}" in shown[0]
                and f"nonce {n0} on chain 31337" in shown[0]
            )
            assert shown[0].index("ALREADY APPROVED") < shown[0].index("APPROVAL REQUEST")
            refused = " ".join(row.removeprefix("    | ") for line in lines for row in line.splitlines())
            assert "approve refused:" in refused and "already approved on this companion" in refused
            assert passphrase == bytearray(len(MAIN_PASS))  # wiped all the same
            assert balance(anvil, FRIEND) - before == OVER_LIMIT  # once
            assert main_nonce(tier1, companion.wallet) == n0 + 1
            [entry] = companion.journal.entries()
            assert (entry.nonce, entry.tx_hash, entry.settled) == (n0, tx_hash(held), True)
        finally:
            await companion.close()

    asyncio.run(scenario())


def test_a_redelivered_request_not_yet_sent_is_signed_again_as_the_same_transaction(tier1, tamper, anvil):
    """The bridge reports an error and keeps approval #1 without sending it, then redelivers the
    request (or it was honest and failed for a moment). Approving again signs at the journaled nonce
    n whatever nonce it is handed: the same transaction, byte for byte, so the signer records and
    sends the very one the bridge holds, and there is never a second payment to hold."""
    tamper.answer = "error"

    async def scenario():
        companion = await tier1.paired()
        try:
            request = await escalate(tier1, companion)
            n0 = main_nonce(tier1, companion.wallet)
            with pytest.raises(CompanionError):
                await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            [held] = tamper.held
            tamper.answer = None
            retry = companion.build_answer(request, Choice("approve", bytearray(MAIN_PASS)), nonce=n0 + 7)
            assert retry["raw_tx"] == held  # deterministic signing, at the journaled nonce
            result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            assert (
                result["status"] == "signed" and result["tx_hash"] == tx_hash(held) and result["nonce"] == n0
            )
            [entry] = companion.journal.entries()
            assert entry.tx_hash == tx_hash(held)
        finally:
            await companion.close()

    asyncio.run(scenario())


MALFORMED = [
    ("no ok", lambda reply: {"type": "reply", "id": reply.get("id"), "result": "x"}),
    (
        "error as a string",
        lambda reply: {"type": "reply", "id": reply.get("id"), "ok": False, "error": "boom"},
    ),
    (
        "a list for a result",
        lambda reply: {"type": "reply", "id": reply.get("id"), "ok": True, "result": [1]},
    ),
    ("ok as a string", lambda reply: {"type": "reply", "id": reply.get("id"), "ok": "yes", "result": {}}),
]


@pytest.mark.parametrize("what, malform", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_R2_a_malformed_reply_never_crashes_outstanding_or_run(tier1, tamper, what, malform):
    """Review R2: a reply to approvals.state with no `ok` raised KeyError through `outstanding`
    (which should fall back to the journal) and through `run`."""
    tamper.answer = "error"

    wallet = approve_into_a_failed_answer(tier1)
    honest = tamper.honest

    async def broken(device_id, message):
        reply = await honest(device_id, message)
        return malform(reply) if message.get("method") == "approvals.state" else reply

    tamper.honest, tamper.answer = broken, None
    out = outstanding_cli(wallet)
    assert out.exception is None or isinstance(out.exception, SystemExit), repr(out.exception)
    assert out.exit_code == 3 and "1 outstanding" in out.output, out.output
    out = CliRunner().invoke(
        companion_cmd.app, ["run", "--dir", str(wallet.home), "--once", "--answers", "deny"]
    )
    assert out.exception is None or isinstance(out.exception, SystemExit), repr(out.exception)
    assert out.exit_code == 0 and "OUTSTANDING SIGNED TRANSACTION" in out.output, out.output


@pytest.mark.parametrize("replay", [False, True], ids=["honest quotes", "a replayed quote"])
def test_R8_R9_a_held_transaction_in_a_mempool_does_not_settle_its_entry(tier1, tamper, anvil, replay):
    """Review R8/R9: the bridge keeps approval T (nonce n) and puts it in the node's mempool, where
    it is not mined; the signer's quote counted the mempool (next nonce n + 1) and settled T. T is
    then evicted (anvil_dropTransaction stands in for eviction, underpricing or a reorg): nonce n
    is free again and T can be sent at any time, while `outstanding` said 0. Only the mined count
    settles now, and a replayed quote says nothing about an entry that has seen a newer one."""
    tamper.answer = "error"

    wallet = approve_into_a_failed_answer(tier1)
    [held] = tamper.held
    n = main_nonce(tier1, wallet)
    saved: list[dict] = []
    rpc(anvil.url, "evm_setAutomine", [False])
    try:
        h = rpc(anvil.url, "eth_sendRawTransaction", [held])
        tamper.answer = None
        if replay:
            tamper.quote = lambda q: (saved.append(q) or q) if not saved else saved[0]
        out = outstanding_cli(wallet)
        assert out.exit_code == 3 and "1 outstanding" in out.output, out.output  # in a mempool: not mined
        if replay:
            assert saved[0]["main_nonce"]["31337"] == n + 1 and saved[0]["main_nonce_mined"]["31337"] == n
        rpc(anvil.url, "anvil_dropTransaction", [h])
    finally:
        rpc(anvil.url, "evm_setAutomine", [True])
    assert (
        int(rpc(anvil.url, "eth_getTransactionCount", [wallet.main_address, "pending"]), 16) == n
    )  # nonce free
    out = outstanding_cli(wallet)
    assert out.exit_code == 3 and "1 outstanding" in out.output and f"with nonce {n}" in out.output, (
        out.output
    )
    before = balance(anvil, FRIEND)
    wait_receipt(anvil, rpc(anvil.url, "eth_sendRawTransaction", [held]))  # it really is still live
    assert balance(anvil, FRIEND) - before == OVER_LIMIT
    tamper.quote = None
    out = outstanding_cli(wallet)
    assert out.exit_code == 0 and "0 outstanding, 1 settled" in out.output and "re-checked" in out.output, (
        out.output
    )


def test_an_unreachable_bridge_is_reported_under_a_label_and_the_journal_still_read(tier1):
    wallet = tier1.new_wallet("unreachable")
    Journal(wallet.home).record(Entry("req_x", 31337, 4, "0x" + "ab" * 32, FRIEND, "5", "send 5 wei", 0.0))
    out = outstanding_cli(wallet, "--bridge", "http://127.0.0.1:9")
    assert out.exit_code == 3 and "nonce: 4" in out.output, out.output
    lines = out.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("could not reach the bridge"))
    assert lines[at + 1].startswith("    | ") and all(len(line) <= 80 for line in lines[at : at + 4])


def test_run_reports_an_unreachable_bridge_instead_of_a_traceback(tier1):
    async def paired() -> CompanionWallet:
        companion = await tier1.paired()
        await companion.close()
        return companion.wallet

    wallet = asyncio.run(paired())
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    out = CliRunner().invoke(
        companion_cmd.app,
        ["run", "--dir", str(wallet.home), "--once", "--answers", "deny", "--bridge", closed],
    )
    assert out.exit_code == 1 and "could not reach the bridge" in out.output, out.output
    assert isinstance(out.exception, SystemExit)  # a worded stop, not an uncaught error


def test_a_reply_the_signer_would_not_send_is_refused_and_the_approval_stays_outstanding(
    tier1, tamper, anvil
):
    """The bridge relays an answer whose status is not a RequestStatus, and a state with the nonce
    signature missing: the companion refuses both against the signer's reply models (no caller reads
    them), and the approval it signed stays in the journal until its nonce is proven used."""
    tamper.answer = "garbled"

    async def scenario() -> CompanionWallet:
        companion = await tier1.paired()
        try:
            request = await escalate(tier1, companion)
            with pytest.raises(CompanionError, match="would not send.*approvals.answer.*status"):
                await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            tamper.quote = lambda state: {k: v for k, v in state.items() if k != "nonce_sig"}
            with pytest.raises(CompanionError, match="would not send.*approvals.state.*nonce_sig"):
                await companion.call("approvals.state")
            return companion.wallet
        finally:
            await companion.close()

    wallet = asyncio.run(scenario())
    assert len(tamper.held) == 1 and len(wallet_journal(wallet)) == 1  # signed, so outstanding until proven
