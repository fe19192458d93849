"""Tier 3 grant lifecycle on a real chain: ERC-20 lane, too-wide grant, revoke, rotate, freeze.

Each step is checked on chain (balances, disabledDelegations, the account's code), and each time the
stolen session key is tried directly against the DelegationManager, bypassing the signer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.devchain import PROJECT_ROOT, rpc
from companion_bridge.companion import tier3 as companion
from policies.intent import NATIVE
from policies.loader import load_policy
from signer.wire.delegation import Delegation, disabled_calldata, erc20_transfer_calldata
from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.grants import derive_lanes
from tests.conftest import DEV_POLICY, FRIEND, STRANGER, balance, wait_receipt
from tests.tier3.conftest import (
    CHAIN_ID,
    chain_time,
    fees,
    new_main_account,
    nonce,
    send_raw,
    steal_session_key,
    tier3_stack,
)
from tests.tier3.test_stolen_host import CENT, DAY, attack, send

pytestmark = [pytest.mark.chain, pytest.mark.slow]
ERC20_ARTIFACT = (
    PROJECT_ROOT
    / "node_modules"
    / "@safe-global"
    / "safe-contracts"
    / "build"
    / "artifacts"
    / "contracts"
    / "test"
    / "ERC20Token.sol"
    / "ERC20Token.json"
)
UNIT = 10**14  # the token policy's per_tx; its 24h window is 3 units


def deploy_token(chain) -> str:
    code = json.loads(ERC20_ARTIFACT.read_text())["bytecode"]
    deployer = rpc(chain.url, "eth_accounts")[0]
    return wait_receipt(chain, rpc(chain.url, "eth_sendTransaction", [{"from": deployer, "data": code}]))[
        "contractAddress"
    ].lower()


def token_balance(chain, token: str, who: str) -> int:
    data = "0x70a08231" + "00" * 12 + who.lower()[2:]
    return int(rpc(chain.url, "eth_call", [{"to": token, "data": data}, "latest"]), 16)


def token_policy(tmp_path: Path, token: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(
        DEV_POLICY.read_text().replace(
            "# People and addresses you pay.",
            f'''  - chain: 31337
    asset: "{token}"
    symbol: TT
    decimals: 18
    per_tx: "0.0001"
    windows: {{24h: "0.0003"}}

# People and addresses you pay.''',
            1,
        )
    )
    return path


def sign_grant(
    chain, main, policy_path: Path, session: str, *, salt: int, widen: int = 1
) -> list[Delegation]:
    policy = load_policy(policy_path)
    now = chain_time(chain)
    lanes = derive_lanes(policy, CHAIN_ID, expires_at=now + 3 * DAY, nonce=0, start=now)
    if widen != 1:
        from dataclasses import replace

        lanes = [
            replace(lane, value_lte=lane.value_lte * widen) if lane.asset == NATIVE else lane
            for lane in lanes
        ]
    return companion.sign_grant(
        main.key,
        lanes,
        session_address=session,
        chain_id=CHAIN_ID,
        manager=chain.contracts["manager"],
        enforcers=chain.contracts["enforcers"],
        salt=salt,
    )


def install(stack, delegations: list[Delegation]) -> dict:
    return stack.call_sync(
        stack.admin_token,
        "tier3.grant",
        {
            "idempotency_key": new_idempotency_key("t"),
            "chain_id": CHAIN_ID,
            "delegations": [d.to_json() for d in delegations],
        },
    )


def disable_on_chain(chain, main, delegation: Delegation) -> None:
    raw = companion.disable(
        main.key,
        delegation,
        chain_id=CHAIN_ID,
        nonce=nonce(chain, main.address),
        manager=chain.contracts["manager"],
        **fees(),
    )
    assert send_raw(chain, raw)["status"] == "0x1"
    flag = rpc(
        chain.url,
        "eth_call",
        [
            {
                "to": chain.contracts["manager"],
                "data": "0x" + disabled_calldata(delegation.struct_hash()).hex(),
            },
            "latest",
        ],
    )
    assert int(flag, 16) == 1


def test_erc20_lane_revoke_rotate_freeze(make_stack, chain3, tmp_path):
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
                    "data": "0x" + erc20_transfer_calldata(main.address, 5 * UNIT).hex(),
                }
            ],
        ),
    )
    key = stack.funded_session_key()
    bot = stack.client_token("bot")

    # A grant wider than the policy is refused by the signer, whoever signed it.
    with pytest.raises(SignerError, match="ValueLte .* above the policy's per_tx"):
        install(stack, sign_grant(chain3, main, policy_path, key["address"], salt=10, widen=10))
    delegations = sign_grant(chain3, main, policy_path, key["address"], salt=20)
    assert [Delegation.to_json(d)["delegate"] for d in delegations] == [key["address"]] * 2
    granted = install(stack, delegations)["grant"]
    with pytest.raises(SignerError, match="already live"):  # never two live grants
        install(stack, sign_grant(chain3, main, policy_path, key["address"], salt=30))
    native, erc20 = delegations if granted["lanes"][0]["asset"] == NATIVE else delegations[::-1]

    # ERC-20 through the signer: lands via redeemDelegations, paid by the main account.
    friend0 = token_balance(chain3, token, FRIEND)
    ok = stack.call_sync(
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
    assert ok["status"] == "signed", ok
    assert wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1"
    assert token_balance(chain3, token, FRIEND) - friend0 == UNIT

    # The stolen key against the token lane: beyond the period, or to anyone but the pinned recipient.
    stolen = steal_session_key(stack, key["key_id"])
    main_tokens = token_balance(chain3, token, main.address)
    status, reason = attack(chain3, stolen, erc20, token, 0, erc20_transfer_calldata(FRIEND, 3 * UNIT))
    assert status == "0x0" and "ERC20PeriodTransferEnforcer:transfer-amount-exceeded" in reason
    status, reason = attack(chain3, stolen, erc20, token, 0, erc20_transfer_calldata(STRANGER, UNIT))
    assert status == "0x0" and "AllowedCalldataEnforcer:invalid-calldata" in reason
    status, reason = attack(chain3, stolen, native, token, 0, erc20_transfer_calldata(FRIEND, UNIT))
    assert status == "0x0" and "AllowedTargetsEnforcer" in reason  # the native lane reaches no token
    other_contract = chain3.contracts["enforcers"]["ValueLteEnforcer"]  # any contract but the granted token
    status, reason = attack(chain3, stolen, erc20, other_contract, 0, erc20_transfer_calldata(FRIEND, UNIT))
    assert status == "0x0" and "AllowedTargetsEnforcer" in reason
    assert token_balance(chain3, token, main.address) == main_tokens

    # Revoke: disableDelegation on chain for each lane, and the signer stops using the grant.
    for d in delegations:
        disable_on_chain(chain3, main, d)
    stack.call_sync(
        stack.admin_token,
        "tier3.revoke",
        {"idempotency_key": new_idempotency_key("t"), "grant_id": granted["grant_id"]},
    )
    main_eth = balance(chain3, main.address)
    assert attack(chain3, stolen, native, FRIEND, CENT)[0] == "0x0"  # CannotUseADisabledDelegation
    assert balance(chain3, main.address) == main_eth
    denied = send(stack, bot, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "tier3.no_grant", denied

    # Rotate: a new session key, then a grant to it; the old key's delegations stay disabled.
    rotated = stack.call_sync(
        stack.admin_token,
        "session_key.rotate",
        {"idempotency_key": new_idempotency_key("t"), "key_id": key["key_id"]},
    )["session_key"]
    stack.call_sync(
        stack.admin_token,
        "session_key.topup",
        {"idempotency_key": new_idempotency_key("t"), "key_id": rotated["key_id"]},
    )
    with pytest.raises(SignerError, match="not this chain's session key"):
        install(stack, sign_grant(chain3, main, policy_path, key["address"], salt=40))  # the old key: refused
    fresh = sign_grant(chain3, main, policy_path, rotated["address"], salt=50)
    install(stack, fresh)
    ok = send(stack, bot, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1", ok
    assert attack(chain3, stolen, native, FRIEND, CENT)[0] == "0x0"  # the old key still gets nothing

    # Freeze: a 7702 authorization to the zero address; the account is a plain EOA again.
    raw = companion.freeze(
        main.key,
        chain_id=CHAIN_ID,
        nonce=nonce(chain3, main.address),
        **fees(),
        manager=chain3.contracts["manager"],
        nonce_enforcer=chain3.contracts["enforcers"]["NonceEnforcer"],
    )
    assert send_raw(chain3, raw)["status"] == "0x1"
    assert rpc(chain3.url, "eth_getCode", [main.address, "latest"]) in ("0x", "0x0")
    new_stolen = steal_session_key(stack, rotated["key_id"])
    fresh_native = next(d for d in fresh if d.caveats[1].terms != b"")  # any lane: nothing moves either way
    main_eth, friend_eth = balance(chain3, main.address), balance(chain3, FRIEND)
    attack(chain3, new_stolen, fresh_native, FRIEND, CENT)
    assert balance(chain3, main.address) == main_eth and balance(chain3, FRIEND) == friend_eth
    denied = send(stack, bot, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.frozen", denied

    # The main key still moves everything, tokens included, directly.
    from signer.wire.txcodec import Eip1559Tx, sign_eip1559

    tokens = token_balance(chain3, token, main.address)
    assert tokens > 0
    tx = Eip1559Tx(
        CHAIN_ID,
        nonce(chain3, main.address),
        10**9,
        20 * 10**9,
        100_000,
        token,
        0,
        erc20_transfer_calldata(STRANGER, tokens),
    )
    assert send_raw(chain3, sign_eip1559(tx, main.key).raw)["status"] == "0x1"
    assert token_balance(chain3, token, main.address) == 0
