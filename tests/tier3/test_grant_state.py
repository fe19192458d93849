"""Grant state survives a restart, an edited grant row is not used, and contracts whose code is not
the configured code hash are never relied on."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import FRIEND, wait_receipt
from tests.signer.test_integrity_at_rest import offline, refusal_record, start_refused
from tests.tier3.conftest import new_main_account, tier3_stack
from tests.tier3.test_stolen_host import CENT, grant, send

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def test_grant_survives_restart_and_an_edited_row_is_refused(make_stack, chain3):
    stack = tier3_stack(make_stack, chain3)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    grant(stack, chain3, main, key["address"])
    stack.stop()
    stack.start()
    token = stack.client_token("bot")
    ok = send(stack, token, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1", ok

    # Someone with the database widens the stored per-transaction cap. Writing it needs the MAC
    # functions only the unlocked signer has, so the attacker drops those triggers first; the row then
    # fails its MAC and the signer refuses to start (signer/store/integrity.py) rather than use it.
    stack.stop()
    conn = offline(stack)
    raw = json.loads(conn.execute("SELECT delegations FROM tier3_grants").fetchone()[0])
    value_lte = next(c for c in raw[0]["caveats"] if len(c["terms"]) == 66 and int(c["terms"], 16) == CENT)
    value_lte["terms"] = "0x" + (10**18).to_bytes(32, "big").hex()
    conn.execute("UPDATE tier3_grants SET delegations=?", (json.dumps(raw),))
    conn.close()
    stderr = start_refused(stack)
    assert "tier3_grants" in stderr or "tier3_grants" in json.dumps(refusal_record(stack))


def test_contract_code_not_matching_the_config_is_never_used(make_stack, chain3):
    stack = tier3_stack(make_stack, chain3)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    grant(stack, chain3, main, key["address"])
    stack.stop()
    config_path = stack.home / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    manager = config["chains"][0]["delegation"]["manager"]
    config["chains"][0]["delegation"]["code_hashes"][manager] = "0x" + "00" * 32
    config_path.write_text(yaml.safe_dump(config))
    stack.start()
    denied = send(stack, stack.client_token("bot"), FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "tier3.code_hash", denied


def test_concurrent_grants_leave_exactly_one_live(make_stack, chain3):
    import asyncio

    from companion_bridge.companion import tier3 as companion
    from policies.loader import load_policy
    from signer.wire.client import SignerClient
    from signer.wire.exchange import SignerError, new_idempotency_key
    from signer.wire.grants import derive_lanes
    from tests.conftest import DEV_POLICY
    from tests.tier3.conftest import CHAIN_ID, chain_time

    stack = tier3_stack(make_stack, chain3)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    now = chain_time(chain3)
    lanes = derive_lanes(load_policy(DEV_POLICY), CHAIN_ID, expires_at=now + 86400, nonce=0, start=now)
    grants = [
        companion.sign_grant(
            main.key,
            lanes,
            session_address=key["address"],
            chain_id=CHAIN_ID,
            manager=chain3.contracts["manager"],
            enforcers=chain3.contracts["enforcers"],
            salt=100 * i,
        )
        for i in range(1, 9)
    ]

    async def one(delegations) -> str:
        async with SignerClient(stack.socket, stack.admin_token) as client:
            try:
                await client.call(
                    "tier3.grant",
                    {
                        "idempotency_key": new_idempotency_key("t"),
                        "chain_id": CHAIN_ID,
                        "delegations": [d.to_json() for d in delegations],
                    },
                )
                return "granted"
            except SignerError as exc:
                assert "already live" in exc.message
                return "refused"

    async def all_at_once() -> list[str]:
        return await asyncio.gather(*(one(g) for g in grants))

    outcomes = asyncio.run(all_at_once())
    assert outcomes.count("granted") == 1, outcomes
    assert len(stack.call_sync(stack.admin_token, "tier3.status")["grants"]) == 1


def test_a_policy_tightened_after_the_grant_is_flagged_in_status(make_stack, chain3):
    from policies.kernel.files import write_private_file

    stack = tier3_stack(make_stack, chain3)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    grant(stack, chain3, main, key["address"])
    lane = stack.call_sync(stack.admin_token, "tier3.status")["grants"][0]["lanes"][0]
    assert lane["wider_than_policy"] is None
    tighter = stack.paths.policy.read_text().replace('per_tx: "0.01"', 'per_tx: "0.005"')
    write_private_file(stack.paths.policy, tighter.encode())
    assert stack.call_sync(stack.admin_token, "policy.reload")["status"] == "applied"
    lane = stack.call_sync(stack.admin_token, "tier3.status")["grants"][0]["lanes"][0]
    assert "ValueLte" in lane["wider_than_policy"] and "rotate" in lane["wider_than_policy"]


def test_malformed_or_forged_grants_over_rpc_are_refused_in_words(make_stack, chain3):
    from signer.wire.exchange import SignerError, new_idempotency_key

    stack = tier3_stack(make_stack, chain3)
    key = stack.funded_session_key()
    bad = [
        {"delegate": key["address"], "salt": "1"},
        {"delegate": 5, "delegator": [], "authority": {}, "caveats": "x", "salt": -1, "signature": None},
    ]
    for delegations in ([bad[0]], [bad[1]]):
        try:
            stack.call_sync(
                stack.admin_token,
                "tier3.grant",
                {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337, "delegations": delegations},
            )
            raise AssertionError("accepted")
        except SignerError as exc:
            assert exc.code == -32602 and "grant refused" in exc.message, exc.message
    # A bot with the sign scope cannot install a grant at all.
    try:
        stack.call_sync(
            stack.client_token("bot"),
            "tier3.grant",
            {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337, "delegations": [bad[0]]},
        )
        raise AssertionError("accepted")
    except SignerError as exc:
        assert "admin" in exc.message
    assert stack.call_sync(stack.admin_token, "tier3.status")["grants"] == []


def test_a_grant_from_an_account_that_is_not_delegated_is_refused(make_stack, chain3):
    import secrets

    import coincurve

    from signer.wire.exchange import SignerError
    from tests.tier3.conftest import MainAccount, fund

    stack = tier3_stack(make_stack, chain3)
    plain = MainAccount(coincurve.PrivateKey(secrets.token_bytes(32)))  # never ran `owlia wallet authorize`
    fund(chain3, plain.address, 10**18)
    key = stack.funded_session_key()
    with pytest.raises(SignerError, match="not delegated to the EIP7702StatelessDeleGator"):
        grant(stack, chain3, plain, key["address"])
    assert stack.call_sync(stack.admin_token, "tier3.status")["grants"] == []
