"""The signer's on-chain pre-check agrees with the chain: for random sequences of transfers, random
lifetime totals and revocations by the main key (NonceEnforcer) in between, `plan` refuses exactly those
the DelegationManager would revert, and lets through exactly those it accepts (a zero-value call is no
transfer: refused, although the chain would accept the no-op)."""

from __future__ import annotations

import asyncio
import itertools

import coincurve
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from bot.devchain import rpc
from companion_bridge.companion import tier3 as companion
from policies.decode import decode
from policies.intent import Call
from policies.loader import load_policy
from signer.chain import Chain
from signer.tier3.grants import Redeem, Tier3
from signer.wire.grants import derive_lanes
from signer.wire.settings import ChainSettings, DelegationContracts
from signer.wire.txcodec import Eip1559Tx, address_of, sign_eip1559
from tests.conftest import DEV_POLICY, FRIEND, STRANGER
from tests.tier3.conftest import CHAIN_ID, chain_time, fund, new_main_account, nonce, send_raw

pytestmark = [pytest.mark.chain, pytest.mark.slow]
CENT = 10**16
POLICY = load_policy(DEV_POLICY)
salts = itertools.count(10_000)


@pytest.fixture(scope="module")
def world(chain3):
    main = new_main_account(chain3, wei=10**20)
    session = coincurve.PrivateKey(b"\x07" * 32)
    fund(chain3, address_of(session), 10**19)
    settings_ = ChainSettings(
        id=CHAIN_ID,
        name="anvil",
        rpc_url=chain3.url,
        dev=True,
        delegation=DelegationContracts(**chain3.contracts),
    )
    return main, session, Tier3({CHAIN_ID: Chain(settings_)})


REVOKE = "revoke"  # a step: the main key sends incrementNonce
transfers = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from([FRIEND] * 5 + [STRANGER]),
            st.sampled_from([0, 1, CENT // 2, CENT // 2, CENT, CENT, CENT, CENT + 1, 2 * CENT]),
        ),
        st.tuples(st.sampled_from([FRIEND] * 5 + [STRANGER]), st.sampled_from([CENT // 2, CENT])),
        st.just((REVOKE, 0)),
    ),
    min_size=1,
    max_size=9,
)
totals = st.sampled_from([None, CENT, CENT + CENT // 2, 2 * CENT])  # None: the policy's own bound


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=transfers, total=totals)
def test_plan_refuses_exactly_what_the_chain_reverts(chain3, world, steps, total):
    from dataclasses import replace

    main, session, tier3 = world
    session_address = address_of(session)
    now = chain_time(chain3)
    manager, enforcer = chain3.contracts["manager"], chain3.contracts["enforcers"]["NonceEnforcer"]
    revocations = asyncio.run(
        tier3.current_nonce(tier3.chains[CHAIN_ID], tier3.chains[CHAIN_ID].settings.delegation, main.address)
    )
    lanes = derive_lanes(POLICY, CHAIN_ID, expires_at=now + 86400, nonce=revocations, start=now)
    if total is not None:
        lanes = [replace(lane, total=total) for lane in lanes]
    delegations = companion.sign_grant(
        main.key,
        lanes,
        session_address=session_address,
        chain_id=CHAIN_ID,
        manager=chain3.contracts["manager"],
        enforcers=chain3.contracts["enforcers"],
        salt=next(salts),
    )
    grant = tier3.build(
        "gr_" + "0" * 16, CHAIN_ID, delegations, POLICY, {CHAIN_ID: (session_address, now + 86400)}, 0.0
    )
    from signer.wire.delegation import redeem_calldata

    for to, value in steps:
        if to == REVOKE:
            raw = companion.revoke_all(
                main.key,
                chain_id=CHAIN_ID,
                nonce=nonce(chain3, main.address),
                max_fee=20 * 10**9,
                max_priority_fee=10**9,
                manager=manager,
                nonce_enforcer=enforcer,
            )
            assert send_raw(chain3, raw)["status"] == "0x1"
            continue
        decoded = decode(Call(CHAIN_ID, to.lower(), value))
        planned = asyncio.run(tier3.plan(decoded, grant, session_address))
        if value == 0:  # not a transfer at all: refused, though the chain would let a no-op through
            assert planned.rule_id == "tier3.not_a_transfer"
            continue
        calldata = redeem_calldata([delegations[0]], to.lower(), value, b"")
        try:
            rpc(
                chain3.url,
                "eth_call",
                [
                    {
                        "from": session_address,
                        "to": chain3.contracts["manager"],
                        "data": "0x" + calldata.hex(),
                    },
                    "latest",
                ],
            )
            chain_accepts = True
        except Exception:  # noqa: BLE001 - a revert
            chain_accepts = False
        assert isinstance(planned, Redeem) == chain_accepts, (to, value, total, planned)
        event("signed" if chain_accepts else f"refused: {planned.rule_id}")
        if chain_accepts:
            assert planned.data == calldata
            tx = Eip1559Tx(
                CHAIN_ID,
                nonce(chain3, session_address),
                10**9,
                20 * 10**9,
                1_000_000,
                chain3.contracts["manager"],
                0,
                calldata,
            )
            assert send_raw(chain3, sign_eip1559(tx, session).raw)["status"] == "0x1"
