"""Tightening a policy takes effect when loaded; loosening it needs the companion."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings, strategies as st

from companion_bridge.companion.client import Choice
from companion_bridge.companion.render import render_request
from policies.loader import parse_policy
from signer.tier1.policy_change import widenings
from tests.conftest import DEV_POLICY, FRIEND, as_json

BASE = DEV_POLICY.read_text()


def policy(text: str = BASE):
    return parse_policy(text)


FRIEND_BOOK = (
    "address_book:\n"
    '  - {chain: 31337, address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", name: dev-friend}'
)
ROUTER = '[{chain: 31337, address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", name: %s, selectors: []}]'
NO_ETH_LIMITS = BASE.replace('    per_tx: "0.01"', "    # per_tx: none", 1).replace(
    '    windows: {24h: "0.05", 7d: "0.2"}', "    # windows: none", 1
)


@pytest.mark.parametrize(
    "old,new",
    [
        ('per_tx: "0.01"', 'per_tx: "0.005"'),
        ('24h: "0.05"', '24h: "0.04"'),
        ("unknown: escalate", "unknown: deny"),
        ("over_limit: escalate", "over_limit: deny"),
        ("tx_per_hour: 30", "tx_per_hour: 3"),
        (FRIEND_BOOK, "address_book: []\n"),  # unknown recipients escalate: its look-alikes now need you
    ],
)
def test_tightenings_are_not_widenings(old, new):
    assert old in BASE
    assert widenings(policy(), policy(BASE.replace(old, new))) == []


@pytest.mark.parametrize(
    "old,new,what",
    [
        ('per_tx: "0.01"', 'per_tx: "1"', "per_tx"),
        ('windows: {24h: "0.05", 7d: "0.2"}', 'windows: {7d: "0.2"}', "24h window"),
        ("unknown: escalate", "unknown: allow", "recipients.unknown"),
        ("skill: escalate", "skill: policy", "sources.skill"),
        ("heartbeat: deny", "heartbeat: escalate", "sources.heartbeat"),
        ("tx_per_hour: 30", "tx_per_hour: 300", "rate_limits.tx_per_hour"),
        (
            "address_book:\n",
            'address_book:\n  - {chain: 31337, address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", '
            "name: new-friend}\n",
            "address_book",
        ),
        (
            "spenders: []",
            'spenders: [{chain: 31337, address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", name: s}]',
            "spenders",
        ),
        ("decimals: 18", "decimals: 17", "decimals"),
    ],
)
def test_loosenings_are_named(old, new, what):
    assert old in BASE
    found = widenings(policy(), policy(BASE.replace(old, new)))
    assert any(what in w for w in found), found


@pytest.mark.parametrize(
    "old,new,what",
    [
        # An asset without limits escalates every spend of it: any limit at all lets the signer sign alone.
        (NO_ETH_LIMITS, NO_ETH_LIMITS.replace("    # per_tx: none", '    per_tx: "1000000"'), "limits set"),
        (
            BASE.replace("contracts: []", "contracts: " + ROUTER % "swap"),
            BASE.replace("contracts: []", "contracts: " + ROUTER % "official-router"),
            "renamed",
        ),
        # With unknown recipients allowed, a removed entry's look-alikes go from denied to signed.
        (
            BASE.replace("unknown: escalate", "unknown: allow"),
            BASE.replace("unknown: escalate", "unknown: allow").replace(FRIEND_BOOK, "address_book: []\n"),
            "removed",
        ),
        (
            BASE.replace("unknown: escalate", "unknown: allow").replace(
                "contracts: []", "contracts: " + ROUTER % "swap"
            ),
            BASE.replace("unknown: escalate", "unknown: allow"),
            "contracts: swap",
        ),  # look-alikes are checked against it
    ],
)
def test_loosenings_between_two_files_are_named(old, new, what):
    assert old != new
    found = widenings(policy(old), policy(new))
    assert any(what in w for w in found), found


OPAQUE = (
    'opaque_calls:\n  - {chain: 31337, address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", '
    'selector: "0x3593564c", max_value: "%s"}\n'
)


def test_an_opaque_call_added_or_raised_is_a_widening_removed_or_lowered_is_not():
    """An opaque_calls entry lets the signer sign a call it cannot decode: only the companion may add one."""
    none = policy()
    low = policy(BASE.replace("opaque_calls: []\n", OPAQUE % "0.001"))
    high = policy(BASE.replace("opaque_calls: []\n", OPAQUE % "0.002"))
    assert any("opaque_calls: 0x3593564c" in w for w in widenings(none, low))
    assert any("higher max_value" in w for w in widenings(low, high))
    assert widenings(high, low) == [] and widenings(low, none) == []


def test_an_asset_without_limits_stays_tight_without_them():
    assert widenings(policy(NO_ETH_LIMITS), policy(NO_ETH_LIMITS)) == []
    assert widenings(policy(BASE), policy(NO_ETH_LIMITS))  # removing every limit is named too (fail closed)


@settings(max_examples=100, deadline=None)
@given(old=st.integers(1, 999_999), new=st.integers(1, 999_999))
def test_a_per_tx_limit_widens_exactly_when_it_rises(old, new):
    a = policy(BASE.replace('per_tx: "0.01"', f'per_tx: "0.{old:06d}"'))
    b = policy(BASE.replace('per_tx: "0.01"', f'per_tx: "0.{new:06d}"'))
    assert bool(widenings(a, b)) == (new > old)


@pytest.mark.chain
def test_a_loosened_policy_file_waits_for_the_companion(tier1):
    """At start: the old policy stays in force; the companion's approval installs the new one at
    once (no restart), and it survives a restart. A tightening needs nobody."""
    stack = tier1.stack
    old_hash = stack.call_sync(tier1.admin, "status")["policy_hash"]
    loose = BASE.replace('per_tx: "0.01"', 'per_tx: "0.02"')
    tight = BASE.replace('per_tx: "0.01"', 'per_tx: "0.005"')

    async def scenario():
        companion = await tier1.paired()
        await asyncio.to_thread(stack.stop)
        stack.paths.policy.write_text(loose)
        await asyncio.to_thread(stack.start)
        status = await stack.call(tier1.admin, "status")
        assert status["policy_hash"] == old_hash  # the old policy stays in force
        request = await companion.next_request(timeout=10)
        assert request["kind"] == "policy" and request["policy"]["to_hash"] == policy(loose).policy_hash()
        text = render_request(request)
        assert "LOOSEN THE SIGNER POLICY" in text and "per_tx 0.01 -> 0.02" in text
        result = await companion.answer(request, Choice("approve"))
        assert result["status"] == "approved" and result["note"] == "the approved policy is in force"
        assert (await stack.call(tier1.admin, "status"))["policy_hash"] == policy(loose).policy_hash()
        with pytest.raises(Exception, match="already answered"):
            await companion.answer(request, Choice("approve"))
        await asyncio.to_thread(stack.stop)
        await asyncio.to_thread(stack.start)
        assert (await stack.call(tier1.admin, "status"))["policy_hash"] == policy(loose).policy_hash()

        # Tightening needs nobody: in force at the next start, and no request is opened.
        await asyncio.to_thread(stack.stop)
        stack.paths.policy.write_text(tight)
        await asyncio.to_thread(stack.start)
        assert (await stack.call(tier1.admin, "status"))["policy_hash"] == policy(tight).policy_hash()
        state = await stack.call(tier1.admin, "approvals.wait", {"after": 0, "timeout": 0})
        assert [r for r in state["requests"] if r["request"]["kind"] == "policy"] == []
        audit = await stack.call(tier1.admin, "audit.tail", {"n": 200})
        kinds = [e["kind"] for e in audit["entries"]]
        assert "policy.loosening_requested" in kinds and "policy.loosening_approved" in kinds
        await companion.close()

    asyncio.run(scenario())


@pytest.mark.chain
def test_a_loosening_approved_while_running_signs_the_next_request_without_a_restart(tier1):
    stack = tier1.stack
    bot = tier1.bot_token()
    stack.funded_session_key()
    loose = BASE.replace('per_tx: "0.01"', 'per_tx: "0.02"')

    async def send(value: int) -> dict:
        from signer.wire.client import SignerClient
        from signer.wire.exchange import new_idempotency_key

        async with SignerClient(stack.socket, bot) as client:
            return as_json(
                await client.sign(
                    {"chain_id": 31337, "to": FRIEND, "value": str(value)},
                    idempotency_key=new_idempotency_key(),
                )
            )

    async def scenario():
        companion = await tier1.paired()
        stack.paths.policy.write_text(loose)
        proposed = await stack.call(tier1.admin, "policy.reload")
        assert proposed["status"] == "proposed"
        before = await send(15 * 10**15)  # 0.015 ETH: over the old per_tx
        assert before["status"] == "pending_approval" and "per_tx" in before["rule_id"], before
        request = await _next_policy_request(companion)
        assert request["request_id"] == proposed["request_id"]
        await companion.answer(request, Choice("approve"))
        after = await send(15 * 10**15)
        assert after["status"] == "signed", after  # the very next request, same process
        await companion.close()

    asyncio.run(scenario())


@pytest.mark.chain
def test_a_stale_loosening_cannot_be_approved_over_a_newer_policy(tier1):
    """Propose a loosening, then tighten: approving the old proposal would silently undo the
    tightening the user just made, so the signer refuses it and audits why."""
    stack = tier1.stack
    loose = BASE.replace('per_tx: "0.01"', 'per_tx: "0.02"')
    tight = BASE.replace('per_tx: "0.01"', 'per_tx: "0.005"')

    async def scenario():
        companion = await tier1.paired()
        stack.paths.policy.write_text(loose)
        assert (await stack.call(tier1.admin, "policy.reload"))["status"] == "proposed"
        request = await _next_policy_request(companion)
        stack.paths.policy.write_text(tight)
        applied = await stack.call(tier1.admin, "policy.reload")
        assert applied["status"] == "applied"
        with pytest.raises(Exception, match="policy in force changed since"):
            await companion.answer(request, Choice("approve"))
        assert (await stack.call(tier1.admin, "status"))["policy_hash"] == policy(tight).policy_hash()
        audit = await stack.call(tier1.admin, "audit.tail", {"n": 50})
        refused = [e for e in audit["entries"] if e["kind"] == "approval.refused"]
        assert refused and "changed since" in refused[-1]["body"]["reason"]
        # Asking for the same loosening again opens a fresh proposal over the policy in force now.
        stack.paths.policy.write_text(loose)
        again = await stack.call(tier1.admin, "policy.reload")
        assert again["status"] == "proposed" and again["request_id"] != request["request_id"]
        fresh = await _next_policy_request(companion)
        assert fresh["request_id"] == again["request_id"]
        assert (await companion.answer(fresh, Choice("approve")))["status"] == "approved"
        assert (await stack.call(tier1.admin, "status"))["policy_hash"] == policy(loose).policy_hash()
        await companion.close()

    asyncio.run(scenario())


async def _next_policy_request(companion) -> dict:
    while True:
        request = await companion.next_request(timeout=10)
        if request["kind"] == "policy":
            return request
