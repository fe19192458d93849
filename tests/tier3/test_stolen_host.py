"""Tier 3 on a real chain with the real bytecode: the stolen-host test and the normal path.

The attacker owns the signer's host: keystore, passphrase, database. They take the session key and
call the DelegationManager directly, bypassing the signer. The caveats the main key signed must
hold: per-transaction cap, period limit, recipients, expiry. The main key can still take everything.
"""

from __future__ import annotations

import pytest

from bot.devchain import rpc
from companion_bridge.companion import tier3 as companion
from policies.loader import load_policy
from signer.wire.delegation import Delegation, redeem_calldata
from signer.wire.exchange import new_idempotency_key
from signer.wire.grants import derive_lanes
from signer.wire.txcodec import Eip1559Tx, address_of, sign_eip1559
from tests.conftest import DEV_POLICY, FRIEND, STRANGER, balance, wait_receipt
from tests.tier3.conftest import (
    CHAIN_ID,
    chain_time,
    mine_at,
    new_main_account,
    nonce,
    send_raw,
    steal_session_key,
    tier3_stack,
)

pytestmark = [pytest.mark.chain, pytest.mark.slow]
CENT = 10**16  # 0.01 ETH: the dev policy's per_tx; its shortest window is 0.05 ETH per 24h
DAY = 86400


def grant(stack, chain, main, session_address: str, *, expires_in: int = 3 * DAY, salt: int = 1) -> dict:
    policy = load_policy(DEV_POLICY)
    now = chain_time(chain)
    lanes = derive_lanes(policy, CHAIN_ID, expires_at=now + expires_in, nonce=0, start=now)
    delegations = companion.sign_grant(
        main.key,
        lanes,
        session_address=session_address,
        chain_id=CHAIN_ID,
        manager=chain.contracts["manager"],
        enforcers=chain.contracts["enforcers"],
        salt=salt,
    )
    return stack.call_sync(
        stack.admin_token,
        "tier3.grant",
        {
            "idempotency_key": new_idempotency_key("t"),
            "chain_id": CHAIN_ID,
            "delegations": [d.to_json() for d in delegations],
        },
    )


def attack(chain, stolen, delegation: Delegation, to: str, value: int, data: bytes = b"") -> tuple[str, str]:
    """Redeem directly with the stolen key; returns (receipt status, the revert reason eth_call gives)."""
    sender = address_of(stolen)
    calldata = redeem_calldata([delegation], to, value, data)
    manager = chain.contracts["manager"]
    try:
        rpc(chain.url, "eth_call", [{"from": sender, "to": manager, "data": "0x" + calldata.hex()}, "latest"])
        reason = ""
    except Exception as exc:  # noqa: BLE001 - the node's revert text is what we check
        reason = str(exc)
    tx = Eip1559Tx(CHAIN_ID, nonce(chain, sender), 10**9, 20 * 10**9, 1_000_000, manager, 0, calldata)
    receipt = send_raw(chain, sign_eip1559(tx, stolen).raw)
    return receipt["status"], reason


def send(stack, token: str, to: str, value: int) -> dict:
    return stack.call_sync(
        token,
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": CHAIN_ID, "to": to, "value": str(value)},
        },
    )


def test_stolen_session_key_is_bounded_by_the_caveats_and_the_main_key_keeps_control(make_stack, chain3):
    stack = tier3_stack(make_stack, chain3)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    granted = grant(stack, chain3, main, key["address"])["grant"]
    assert granted["account"] == main.address and granted["delegate"] == key["address"]
    token = stack.client_token("bot")

    # The normal path: inside the limits, signed by the signer and landed through redeemDelegations.
    friend0, main0 = balance(chain3, FRIEND), balance(chain3, main.address)
    ok = send(stack, token, FRIEND, CENT)
    assert ok["status"] == "signed", ok
    receipt = wait_receipt(chain3, ok["tx_hash"])
    assert receipt["status"] == "0x1" and receipt["to"] == chain3.contracts["manager"]
    assert balance(chain3, FRIEND) - friend0 == CENT
    assert main0 - balance(chain3, main.address) == CENT  # the main account paid; the session key only gas

    # The host is stolen: the session key's secret, straight from the keystore and the database.
    stolen = steal_session_key(stack, key["key_id"])
    assert address_of(stolen) == key["address"]
    rows = stack.call_sync(stack.admin_token, "tier3.status")["grants"]
    native = Delegation.from_json(_stored_delegations(stack)[0])
    assert rows[0]["lanes"][0]["left_in_period"] == str(4 * CENT)

    friend1, stranger1, main1 = (
        balance(chain3, FRIEND),
        balance(chain3, STRANGER),
        balance(chain3, main.address),
    )
    status, reason = attack(chain3, stolen, native, FRIEND, 2 * CENT)  # above the per-transaction cap
    assert status == "0x0" and "ValueLteEnforcer:value-too-high" in reason
    status, reason = attack(chain3, stolen, native, STRANGER, CENT)  # a recipient outside the grant
    assert status == "0x0" and "AllowedTargetsEnforcer:target-address-not-allowed" in reason
    weth_like = chain3.contracts["manager"]  # any contract outside the grant: calls are not allowed either
    status, reason = attack(chain3, stolen, native, weth_like, 0, b"\x12\x34\x56\x78")
    assert status == "0x0" and "AllowedTargetsEnforcer" in reason
    status, reason = attack(chain3, stolen, native, FRIEND, 0, bytes.fromhex("a9059cbb") + b"\0" * 64)
    assert status == "0x0" and "ExactCalldataEnforcer:invalid-calldata" in reason  # value only, never a call
    assert balance(chain3, STRANGER) == stranger1 and balance(chain3, main.address) == main1

    # Inside the caveats the attacker can take what is left of this period, and not a wei more.
    for _ in range(4):
        assert attack(chain3, stolen, native, FRIEND, CENT)[0] == "0x1"
    status, reason = attack(chain3, stolen, native, FRIEND, CENT)
    assert status == "0x0" and "NativeTokenPeriodTransferEnforcer:transfer-amount-exceeded" in reason
    assert balance(chain3, FRIEND) - friend1 == 4 * CENT
    assert main1 - balance(chain3, main.address) == 4 * CENT

    # The signer itself now reads what is left on chain and refuses before broadcasting, naming the rule.
    session_nonce = nonce(chain3, key["address"])
    denied = send(stack, token, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.native_period", denied
    assert nonce(chain3, key["address"]) == session_nonce  # nothing was sent

    # After expiry nothing goes through, in any period.
    expiry = int(granted["lanes"][0]["expires_at"])
    mine_at(chain3, expiry + 1)
    status, reason = attack(chain3, stolen, native, FRIEND, CENT)
    assert status == "0x0" and "TimestampEnforcer:expired-delegation" in reason
    denied = send(stack, token, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.expired", denied

    # The main key can always move everything, directly.
    left = balance(chain3, main.address)
    gas_cost = 21_000 * 20 * 10**9
    tx = Eip1559Tx(
        CHAIN_ID,
        nonce(chain3, main.address),
        20 * 10**9,
        20 * 10**9,
        21_000,
        STRANGER.lower(),
        left - gas_cost,
        b"",
    )
    assert send_raw(chain3, sign_eip1559(tx, main.key).raw)["status"] == "0x1"
    assert balance(chain3, main.address) <= gas_cost


def _stored_delegations(stack) -> list[dict]:
    import json
    import sqlite3

    conn = sqlite3.connect(stack.paths.db)
    try:
        return json.loads(
            conn.execute("SELECT delegations FROM tier3_grants WHERE status='live'").fetchone()[0]
        )
    finally:
        conn.close()


def test_a_call_count_caveat_holds_for_the_signer_and_the_stolen_key(make_stack, chain3):
    from signer.wire.exchange import new_idempotency_key as fresh

    stack = tier3_stack(make_stack, chain3)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    now = chain_time(chain3)
    lanes = derive_lanes(
        load_policy(DEV_POLICY), CHAIN_ID, expires_at=now + DAY, nonce=0, start=now, call_limit=2
    )
    delegations = companion.sign_grant(
        main.key,
        lanes,
        session_address=key["address"],
        chain_id=CHAIN_ID,
        manager=chain3.contracts["manager"],
        enforcers=chain3.contracts["enforcers"],
        salt=77,
    )
    stack.call_sync(
        stack.admin_token,
        "tier3.grant",
        {
            "idempotency_key": fresh("t"),
            "chain_id": CHAIN_ID,
            "delegations": [d.to_json() for d in delegations],
        },
    )
    token = stack.client_token("bot")
    ok = send(stack, token, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1"
    stolen = steal_session_key(stack, key["key_id"])
    assert attack(chain3, stolen, delegations[0], FRIEND, CENT)[0] == "0x1"  # the second and last call
    status, reason = attack(chain3, stolen, delegations[0], FRIEND, CENT)
    assert status == "0x0" and "LimitedCallsEnforcer:limit-exceeded" in reason
    denied = send(stack, token, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.limited_calls", denied
    left = stack.call_sync(stack.admin_token, "tier3.status")["grants"][0]["lanes"][0]
    assert left["calls_left"] == 0 and left["left_in_period"] == str(3 * CENT)
