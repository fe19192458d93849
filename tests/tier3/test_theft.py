"""Tier 3 after a host theft, against real processes on anvil with the npm bytecode.

The thief holds the signer's host: its files (copied), the session key (from the keystore and the
database), and the signer process is gone. The owner holds the companion (main key, its own record of
the grants it signed). What must hold:
- the thief is bounded by the caveats, including no redelegation (Redeemer) and the lifetime totals;
- the owner revokes every grant from the companion alone (`owlia wallet revoke`, no signer, no signer
  home): one `incrementNonce`, after which the stolen key moves nothing (balances read on chain);
- a freeze then `authorize` revives no grant, and a new grant is taken after either.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import coincurve
import pytest

from bot.devchain import rpc
from companion_bridge.companion import tier3 as companion
from policies.intent import NATIVE
from policies.kernel.files import write_private_file
from policies.loader import load_policy
from signer.wire.delegation import Delegation, erc20_transfer_calldata, redeem_calldata, sign_digest
from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.grants import NONCE, derive_lanes
from signer.wire.txcodec import Eip1559Tx, address_of, sign_eip1559
from tests.conftest import DEV_POLICY, FRIEND, STRANGER, balance, wait_receipt
from tests.tier3.conftest import (
    CHAIN_ID,
    chain_time,
    fees,
    fund,
    new_main_account,
    nonce,
    send_raw,
    steal_session_key,
    tier3_stack,
)
from tests.tier3.test_grant_lifecycle import UNIT, deploy_token, token_balance, token_policy
from tests.tier3.test_stolen_host import CENT, DAY, send

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def redeem(
    chain, key: coincurve.PrivateKey, delegations: list[Delegation], to: str, value: int, data: bytes = b""
) -> tuple[str, str]:
    """Send redeemDelegations from `key`, bypassing any signer; (receipt status, eth_call's revert reason)."""
    sender = address_of(key)
    calldata = redeem_calldata(delegations, to, value, data)
    manager = chain.contracts["manager"]
    try:
        rpc(chain.url, "eth_call", [{"from": sender, "to": manager, "data": "0x" + calldata.hex()}, "latest"])
        reason = ""
    except Exception as exc:  # noqa: BLE001 - the node's revert text is what we check
        reason = str(exc)
    tx = Eip1559Tx(CHAIN_ID, nonce(chain, sender), 10**9, 20 * 10**9, 1_000_000, manager, 0, calldata)
    return send_raw(chain, sign_eip1559(tx, key).raw)["status"], reason


class Owner:
    """The owner's CLI companion: its own directory and passphrase file, run through `owlia`."""

    def __init__(self, stack, tmp_path: Path) -> None:
        self.stack = stack
        self.dir = tmp_path / "companion"
        self.passfile = tmp_path / "main.pass"
        write_private_file(self.passfile, b"main key passphrase for tests")
        made = stack.owlia(
            "companion",
            "init",
            "--dir",
            str(self.dir),
            "--passphrase-file",
            str(self.passfile),
            "--scrypt-n",
            "1024",
        )
        assert made.returncode == 0, made.stderr
        self.address = json.loads((self.dir / "companion.json").read_text())["main_address"]

    def wallet(self, *args: str, home: Path | None = None) -> subprocess.CompletedProcess:
        tail = ["wallet", *args, "--dir", str(self.dir), "--passphrase-file", str(self.passfile), "--yes"]
        if home is None:
            return self.stack.owlia(*tail)
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", "--home", str(home), *tail],
            text=True,
            capture_output=True,
            timeout=120,
        )

    def ok(self, *args: str, home: Path | None = None) -> str:
        done = self.wallet(*args, home=home)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def status(self, *args: str) -> str:
        shown = self.stack.owlia("wallet", "status", "--dir", str(self.dir), *args)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        return shown.stdout

    def record(self) -> list[dict]:
        path = self.dir / "grants.json"
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        return json.loads(path.read_text())["grants"]


def onchain_nonce(chain, account: str) -> int:
    from signer.wire.delegation import current_nonce_calldata

    data = current_nonce_calldata(chain.contracts["manager"], account)
    return int(
        rpc(
            chain.url,
            "eth_call",
            [{"to": chain.contracts["enforcers"][NONCE], "data": "0x" + data.hex()}, "latest"],
        ),
        16,
    )


def test_host_theft_owner_revokes_with_the_cli_companion_alone(make_stack, chain3, tmp_path):
    stack = tier3_stack(make_stack, chain3)
    owner = Owner(stack, tmp_path)
    fund(chain3, owner.address, 10**18)
    key = stack.funded_session_key()
    owner.ok("authorize")
    words = owner.ok("grant", "--days", "3")
    assert "only to dev-friend" in words and "0.15 ETH in all" in words, words

    # The companion's own record of what it signed: chain, salt, nonce, hashes, lanes in words.
    (entry,) = owner.record()
    assert entry["chain_id"] == CHAIN_ID and entry["delegate"] == key["address"] and entry["nonce"] == "0"
    assert int(entry["salt"]) >= 0 and entry["ended"] is None
    assert "0.01 ETH per transaction" in entry["words"][0]
    delegations = [Delegation.from_json(d) for d in entry["delegations"]]
    assert ["0x" + d.struct_hash().hex() for d in delegations] == entry["delegation_hashes"]
    native = delegations[0]

    bot = stack.client_token("bot")
    friend0 = balance(chain3, FRIEND)
    ok = send(stack, bot, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1", ok
    assert balance(chain3, FRIEND) - friend0 == CENT

    # The host is stolen: the thief copies the signer's files and takes the session key; the signer is gone.
    stolen = steal_session_key(stack, key["key_id"])
    loot = tmp_path / "thief"
    shutil.copytree(stack.home, loot)
    assert (loot / "signer.db").exists() or any(loot.rglob("*.db"))
    stack.kill9()

    # The thief is bounded by the caveats: per transaction, recipients, and no redelegation.
    main0, stranger0 = balance(chain3, owner.address), balance(chain3, STRANGER)
    status, reason = redeem(chain3, stolen, [native], FRIEND, 2 * CENT)
    assert status == "0x0" and "ValueLteEnforcer:value-too-high" in reason
    status, reason = redeem(chain3, stolen, [native], STRANGER, CENT)
    assert status == "0x0" and "AllowedTargetsEnforcer:target-address-not-allowed" in reason
    accomplice = coincurve.PrivateKey(b"\x07" * 32)
    fund(chain3, address_of(accomplice), 10**17)
    onward = Delegation(address_of(accomplice), address_of(stolen), (), 5, authority=native.struct_hash())
    onward = onward.signed(sign_digest(onward.signing_digest(CHAIN_ID, chain3.contracts["manager"]), stolen))
    status, reason = redeem(chain3, accomplice, [onward, native], FRIEND, CENT)
    assert status == "0x0" and "RedeemerEnforcer:unauthorized-redeemer" in reason
    assert balance(chain3, owner.address) == main0 and balance(chain3, STRANGER) == stranger0
    assert redeem(chain3, stolen, [native], FRIEND, CENT)[0] == "0x1"  # inside the caveats: bounded, not zero
    assert main0 - balance(chain3, owner.address) == CENT

    # The owner revokes from the CLI companion alone: a fresh home (no config.yaml, no signer), the record.
    bare = tmp_path / "owner-home"
    bare.mkdir(mode=0o700)
    from bot.devchain import free_port

    dead_node = owner.wallet("revoke", "--rpc-url", f"http://127.0.0.1:{free_port()}", home=bare)
    assert dead_node.returncode == 1 and "run `owlia wallet revoke` again" in dead_node.stderr, (
        dead_node.stderr
    )
    assert "Traceback" not in dead_node.stderr and onchain_nonce(chain3, owner.address) == 0
    out = owner.ok("revoke", home=bare)
    assert "dead on chain" in out and "revocation nonce now 1" in out and "dev-friend" in out, out
    assert "The signer was not told" in out
    assert onchain_nonce(chain3, owner.address) == 1
    assert owner.record()[0]["ended"].startswith("revoked on chain")

    # The stolen key now moves nothing, on any lane, inside every other limit.
    main1, friend1 = balance(chain3, owner.address), balance(chain3, FRIEND)
    status, reason = redeem(chain3, stolen, [native], FRIEND, CENT)
    assert status == "0x0" and "NonceEnforcer:invalid-nonce" in reason
    status, reason = redeem(chain3, stolen, [native], FRIEND, 1)
    assert status == "0x0" and "NonceEnforcer:invalid-nonce" in reason
    assert balance(chain3, owner.address) == main1 and balance(chain3, FRIEND) == friend1

    # The owner's signer, back up: its pre-check names the revocation, and a new grant is taken.
    stack.start()
    denied = send(stack, bot, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.revoked", denied
    assert "revoked every grant on chain" in denied["reason"]
    assert "ENDED ON CHAIN: the main key revoked every grant" in owner.status()
    # The stolen session key was used elsewhere: the signer will not sign with it again (its nonce moved).
    # The owner rotates: the old grant is dropped (revoked again on chain), a new key, a new grant.
    out = owner.ok("rotate", "--days", "1")
    assert "the signer dropped grant" in out and "new session key" in out, out
    assert [g["nonce"] for g in owner.record()] == ["0", "2"]
    assert owner.record()[1]["delegate"] != address_of(stolen)
    ok = send(stack, bot, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1", ok.get(
        "error"
    )
    assert balance(chain3, FRIEND) - friend1 == CENT
    status, reason = redeem(chain3, stolen, [native], FRIEND, CENT)  # and the thief still gets nothing
    assert status == "0x0" and "NonceEnforcer:invalid-nonce" in reason


def test_freeze_then_authorize_revives_no_grant_and_a_new_grant_works(make_stack, chain3, tmp_path):
    stack = tier3_stack(make_stack, chain3)
    owner = Owner(stack, tmp_path)
    fund(chain3, owner.address, 10**18)
    key = stack.funded_session_key()
    owner.ok("authorize")
    owner.ok("grant", "--days", "2")
    native = Delegation.from_json(owner.record()[0]["delegations"][0])
    bot = stack.client_token("bot")
    ok = send(stack, bot, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1", ok
    stolen = steal_session_key(stack, key["key_id"])

    out = owner.ok("freeze")
    assert "every grant is revoked" in out and onchain_nonce(chain3, owner.address) == 1
    owner.ok("authorize")  # the account is a smart account again ...
    assert (
        rpc(chain3.url, "eth_getCode", [owner.address, "latest"])
        == "0xef0100" + chain3.contracts["stateless_delegator"][2:]
    )

    # ... and the old grant stays dead: on chain, and in the signer. (The redeem is only simulated here:
    # a transaction from the session key would move its nonce and the signer would rightly stop using it.)
    main0, friend0 = balance(chain3, owner.address), balance(chain3, FRIEND)
    calldata = redeem_calldata([native], FRIEND, CENT, b"")
    with pytest.raises(Exception, match="NonceEnforcer:invalid-nonce"):
        rpc(
            chain3.url,
            "eth_call",
            [
                {"from": key["address"], "to": chain3.contracts["manager"], "data": "0x" + calldata.hex()},
                "latest",
            ],
        )
    denied = send(stack, bot, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.revoked", denied
    assert balance(chain3, owner.address) == main0 and balance(chain3, FRIEND) == friend0

    # A new grant is taken (the ended one is not "live"), carries the new nonce and works.
    owner.ok("grant", "--days", "2")
    status = json.loads(owner.status("--json"))
    assert len(status["grants"]) == 1 and status["grants"][0]["lanes"][0]["nonce"] == "1"
    ok = send(stack, bot, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1", ok
    assert balance(chain3, FRIEND) - friend0 == CENT
    main1, friend1 = balance(chain3, owner.address), balance(chain3, FRIEND)
    status, reason = redeem(chain3, stolen, [native], FRIEND, CENT)  # the old delegation, sent: nothing moves
    assert status == "0x0" and "NonceEnforcer:invalid-nonce" in reason
    assert balance(chain3, owner.address) == main1 and balance(chain3, FRIEND) == friend1


def _install(stack, delegations: list[Delegation]) -> dict:
    return stack.call_sync(
        stack.admin_token,
        "tier3.grant",
        {
            "idempotency_key": new_idempotency_key("t"),
            "chain_id": CHAIN_ID,
            "delegations": [d.to_json() for d in delegations],
        },
    )


def _sign(chain, main, lanes, session: str, salt: int) -> list[Delegation]:
    return companion.sign_grant(
        main.key,
        lanes,
        session_address=session,
        chain_id=CHAIN_ID,
        manager=chain.contracts["manager"],
        enforcers=chain.contracts["enforcers"],
        salt=salt,
    )


def test_the_signer_refuses_a_grant_without_the_nonce_or_at_a_stale_nonce(make_stack, chain3):
    stack = tier3_stack(make_stack, chain3)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    now = chain_time(chain3)
    lanes = derive_lanes(load_policy(DEV_POLICY), CHAIN_ID, expires_at=now + DAY, nonce=0, start=now)
    signed = _sign(chain3, main, lanes, key["address"], 1)

    nonce_enforcer = chain3.contracts["enforcers"][NONCE]
    bare = [
        Delegation(
            d.delegate, d.delegator, tuple(c for c in d.caveats if c.enforcer != nonce_enforcer), d.salt
        )
        for d in signed
    ]
    bare = [
        d.signed(sign_digest(d.signing_digest(CHAIN_ID, chain3.contracts["manager"]), main.key)) for d in bare
    ]
    with pytest.raises(SignerError, match="has no NonceEnforcer"):
        _install(stack, bare)

    raw = companion.revoke_all(
        main.key,
        chain_id=CHAIN_ID,
        nonce=nonce(chain3, main.address),
        **fees(),
        manager=chain3.contracts["manager"],
        nonce_enforcer=nonce_enforcer,
    )
    assert send_raw(chain3, raw)["status"] == "0x1" and onchain_nonce(chain3, main.address) == 1
    with pytest.raises(SignerError, match="signed at nonce 0 but the main account's nonce on chain is 1"):
        _install(stack, signed)  # a revoked grant, offered again: never comes back
    ahead = _sign(chain3, main, [replace(lane, nonce=2) for lane in lanes], key["address"], 2)
    with pytest.raises(SignerError, match="signed at nonce 2"):
        _install(stack, ahead)  # a nonce the chain has not reached would come alive later: refused too
    fresh = _sign(chain3, main, [replace(lane, nonce=1) for lane in lanes], key["address"], 3)
    assert _install(stack, fresh)["grant"]["lanes"][0]["nonce"] == "1"


def test_lifetime_totals_and_the_erc20_per_transaction_cap_hold_for_the_stolen_key(
    make_stack, chain3, tmp_path
):
    token = deploy_token(chain3)
    policy_path = token_policy(tmp_path, token)
    stack = tier3_stack(make_stack, chain3, policy=policy_path)
    main = new_main_account(chain3)
    deployer = rpc(chain3.url, "eth_accounts")[0]
    wait_receipt(
        chain3,
        rpc(
            chain3.url,
            "eth_sendTransaction",
            [
                {
                    "from": deployer,
                    "to": token,
                    "data": "0x" + erc20_transfer_calldata(main.address, 10 * UNIT).hex(),
                }
            ],
        ),
    )
    key = stack.funded_session_key()
    now = chain_time(chain3)
    lanes = derive_lanes(load_policy(policy_path), CHAIN_ID, expires_at=now + 3 * DAY, nonce=0, start=now)
    erc20_lane = next(lane for lane in lanes if lane.asset != NATIVE)
    assert erc20_lane.token_per_tx == UNIT and erc20_lane.total == 9 * UNIT  # 3 per day, 3 days
    # The owner may narrow the totals below what the periods allow; the signer accepts a narrower grant.
    lanes = [replace(lane, total=2 * CENT if lane.asset == NATIVE else 2 * UNIT) for lane in lanes]
    delegations = _sign(chain3, main, lanes, key["address"], 9)
    _install(stack, delegations)
    native, erc20 = delegations if lanes[0].asset == NATIVE else delegations[::-1]
    stolen = steal_session_key(stack, key["key_id"])

    # ERC-20 per transaction: two units in one redeem are inside the period (3) but above the cap (1).
    tokens0 = token_balance(chain3, token, main.address)
    status, reason = redeem(chain3, stolen, [erc20], token, 0, erc20_transfer_calldata(FRIEND, 2 * UNIT))
    assert status == "0x0" and "ERC20BalanceChangeEnforcer:exceeded-balance-decrease" in reason
    assert token_balance(chain3, token, main.address) == tokens0
    # ERC-20 lifetime: two single units, then the total is spent though the period has one left.
    for _ in range(2):
        assert redeem(chain3, stolen, [erc20], token, 0, erc20_transfer_calldata(FRIEND, UNIT))[0] == "0x1"
    status, reason = redeem(chain3, stolen, [erc20], token, 0, erc20_transfer_calldata(FRIEND, UNIT))
    assert status == "0x0" and "ERC20TransferAmountEnforcer:allowance-exceeded" in reason
    assert tokens0 - token_balance(chain3, token, main.address) == 2 * UNIT
    # Native lifetime: likewise.
    main0 = balance(chain3, main.address)
    for _ in range(2):
        assert redeem(chain3, stolen, [native], FRIEND, CENT)[0] == "0x1"
    status, reason = redeem(chain3, stolen, [native], FRIEND, CENT)
    assert status == "0x0" and "NativeTokenTransferAmountEnforcer:allowance-exceeded" in reason
    assert main0 - balance(chain3, main.address) == 2 * CENT

    # The signer reads the totals on chain and refuses by name instead of sending a reverting redeem.
    bot = stack.client_token("bot")
    session_nonce = nonce(chain3, key["address"])
    denied = send(stack, bot, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.native_total", denied
    denied = stack.call_sync(
        bot,
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {
                "chain_id": CHAIN_ID,
                "token_transfer": {"token": token, "recipient": FRIEND, "amount": str(UNIT)},
            },
        },
    )
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.erc20_total", denied
    assert nonce(chain3, key["address"]) == session_nonce
    left = {
        lane["asset"]: lane
        for lane in stack.call_sync(stack.admin_token, "tier3.status")["grants"][0]["lanes"]
    }
    assert left[NATIVE]["left_in_total"] == "0" and left[token]["left_in_total"] == "0"
