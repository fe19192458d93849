"""Limits and the address book edited from a paired device (signer.tier1.policy_edit), against a real signer
daemon and bridge: tightening applies at once, loosening needs the main key's (passkey's) signature,
and the signer judges which is which itself. The attacks a bridge or a stolen device could try are
each refused with words, and change nothing."""

from __future__ import annotations

import asyncio
import json
import secrets
import stat
import time
from decimal import Decimal

import coincurve
import pytest
from hypothesis import assume, given, settings, strategies as st

from policies.loader import parse_policy
from signer.tier1.policy_change import EditRefused, widenings
from signer.tier1.policy_edit import apply_edits, personal_digest
from signer.tier1.policy_text import HEADER, edited_policy_text, policy_yaml
from signer.wire.client import SignerError
from signer.wire.delegation import sign_digest
from signer.wire.messages import (
    POLICY_EDIT_DOMAIN,
    POLICY_VIEW_DOMAIN,
    policy_edit_body,
    signed_by,
    signed_message,
)
from signer.wire.protocol import Scope
from signer.wire.requests import PolicyEditParams
from tests.companion.conftest import MAIN_PASS, Tier1, start_bridge
from tests.conftest import DEV_POLICY, FRIEND, STRANGER, SignerStack

PRICED = DEV_POLICY.read_text().replace('# price_usd: "3000"', 'price_usd: "3000"')
NEW_FRIEND = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC".lower()


def edit(**fields):
    return fields


def per_tx(amount):
    return edit(op="limit", chain=31337, asset="native", limit="per_tx", amount=amount)


def window(label, amount):
    return edit(op="limit", chain=31337, asset="native", limit=label, amount=amount)


def book_add(address, name):
    return edit(op="book_add", chain=31337, address=address, name=name)


def typed(edits):
    return PolicyEditParams.model_validate(
        {
            "device_id": "dev_" + "0" * 16,
            "base_hash": "0" * 64,
            "edits": edits,
            "ts": 1.0,
            "signature": "0" * 128,
        }
    ).edits


# ---- the classification, without a daemon ------------------------------------------------------


amounts = st.integers(1, 10**6).map(lambda n: f"0.{n:06d}")


@st.composite
def random_edits(draw):
    """Any mix of limit changes (raised, lowered, removed) and address-book changes."""
    out = []
    for label in ("per_tx", "24h", "7d"):
        choice = draw(st.sampled_from(["keep", "set", "remove"]))
        if choice == "set":
            out.append(window(label, draw(amounts)) if label != "per_tx" else per_tx(draw(amounts)))
        elif choice == "remove":
            out.append(window(label, None) if label != "per_tx" else per_tx(None))
    friend = FRIEND.lower()
    book = draw(st.sampled_from(["keep", "rename", "same-name", "remove"]))
    if book == "rename":
        out.append(edit(op="book_rename", chain=31337, address=friend, name="renamed friend"))
    elif book == "same-name":
        out.append(edit(op="book_rename", chain=31337, address=friend, name="dev-friend"))
    elif book == "remove":
        out.append(edit(op="book_remove", chain=31337, address=friend))
    if draw(st.booleans()):
        out.append(book_add("0x" + draw(st.binary(min_size=20, max_size=20)).hex(), "someone new"))
    return out


def truly_loosens(old, new) -> bool:
    """Ground truth from the two documents: a higher or removed limit, any limit on an asset that had
    none, an entry added or renamed, or one removed while unknown recipients are allowed."""
    (a,), (b,) = old.assets, new.assets
    if a.per_tx is None and not a.windows:
        limits_loosen = b.per_tx is not None or bool(b.windows)
    else:
        raised = lambda was, now: was is not None and (now is None or Decimal(now) > Decimal(was))  # noqa: E731
        limits = [(a.per_tx, b.per_tx)] + [(a.windows.get(k), b.windows.get(k)) for k in a.windows]
        limits_loosen = any(raised(was, now) for was, now in limits)
    was_book = {(e.chain, e.address): e.name for e in old.address_book}
    now_book = {(e.chain, e.address): e.name for e in new.address_book}
    added_or_renamed = any(was_book.get(k) != name for k, name in now_book.items())
    removed = old.recipients.unknown == "allow" and any(k not in now_book for k in was_book)
    return limits_loosen or added_or_renamed or removed


NO_LIMITS = PRICED.replace('    per_tx: "0.01"', "    # per_tx: none", 1).replace(
    '    windows: {24h: "0.05", 7d: "0.2"}', "    # windows: none", 1
)


@settings(max_examples=300, deadline=None)
@given(
    edits=random_edits(),
    base=st.sampled_from([PRICED, NO_LIMITS]),
    unknown=st.sampled_from(["escalate", "deny", "allow"]),
)
def test_the_signer_classifies_every_random_diff_and_never_calls_a_loosening_a_tightening(
    edits, base, unknown
):
    assume(edits)
    source = base.replace("unknown: escalate", f"unknown: {unknown}", 1)
    old = parse_policy(source)
    new = apply_edits(old, typed(edits))
    found = widenings(old, new)
    assert bool(found) == truly_loosens(old, new), (edits, found)
    # the file the signer writes loads back to exactly the policy it judged, written whole or edited in
    # place; in place, every comment of the owner's file is still there
    assert parse_policy(policy_yaml(new)).policy_hash() == new.policy_hash()
    text = edited_policy_text(source, typed(edits), new)
    assert parse_policy(text).policy_hash() == new.policy_hash()
    gone = [  # a key or an entry removed takes the comment on its own line with it
        "per_tx:" if e["op"] == "limit" else e["address"]
        for e in edits
        if (e["op"] == "limit" and e["limit"] == "per_tx" and e["amount"] is None) or e["op"] == "book_remove"
    ]
    kept = "\n".join(line for line in source.splitlines() if not any(g in line.lower() for g in gone))
    assert text.startswith(HEADER) or _comments(kept) <= _comments(text)


def _comments(text: str) -> set[str]:
    return {line.split("#", 1)[1] for line in text.splitlines() if "#" in line}


def test_edits_made_on_the_phone_keep_the_owners_comments():
    """Each kind of edit changes its own key or line of policy.yaml; the rest is byte for byte."""
    old = parse_policy(PRICED)
    edits = [
        per_tx("0.002"),
        window("24h", "0.03"),
        window("7d", None),
        window("1h", "0.01"),
        book_add(NEW_FRIEND, "carol"),
        edit(op="book_rename", chain=31337, address=FRIEND.lower(), name="bob"),
    ]
    new = apply_edits(old, typed(edits))
    text = edited_policy_text(PRICED, typed(edits), new)
    assert parse_policy(text).policy_hash() == new.policy_hash() and not text.startswith(HEADER)
    assert _comments(PRICED) <= _comments(text)
    assert "per_tx: '0.002'         # at most 0.01 ETH in one request" in text
    assert "windows: {24h: '0.03', 1h: '0.01'}   # at most 0.05 ETH a day" in text
    assert "name: bob}   # anvil account 1" in text and "- {chain: 31337, address: '" + NEW_FRIEND in text
    removed = [edit(op="book_remove", chain=31337, address=FRIEND.lower())]
    newer = apply_edits(new, typed(removed))
    again = edited_policy_text(text, typed(removed), newer)
    assert parse_policy(again).policy_hash() == newer.policy_hash() and "bob" not in again
    assert _comments(PRICED) - {" anvil account 1"} <= _comments(again)


def test_a_file_the_editor_cannot_follow_is_written_whole_and_still_exact():
    """Removing the only address-book entry under a comment line of its own is not done in place:
    the whole policy is written out again (comments lost, every limit kept), never a half-edited file.
    A flow list, by contrast, is edited in place."""
    commented = PRICED.replace("address_book:\n  - {", "address_book:\n  # my people\n  - {")
    flow = PRICED.replace("address_book:\n  - {", "address_book: [{").replace(
        "name: dev-friend}   # anvil account 1", "name: dev-friend}]   # anvil account 1"
    )
    edits = [edit(op="book_remove", chain=31337, address=FRIEND.lower()), per_tx("0.002")]
    for source, whole in ((commented, True), (flow, False)):
        new = apply_edits(parse_policy(source), typed(edits))
        text = edited_policy_text(source, typed(edits), new)
        assert parse_policy(text).policy_hash() == new.policy_hash()
        assert text.startswith(HEADER) is whole and FRIEND not in text


def test_bad_edits_are_refused_in_words():
    old = parse_policy(PRICED)
    with pytest.raises(EditRefused, match="already in your address book as dev-friend"):
        apply_edits(old, typed([book_add(FRIEND.lower(), "again")]))
    with pytest.raises(EditRefused, match="not in your address book"):
        apply_edits(old, typed([edit(op="book_remove", chain=31337, address=NEW_FRIEND)]))
    with pytest.raises(EditRefused, match="no asset"):
        apply_edits(old, typed([edit(op="limit", chain=1, asset="native", limit="per_tx", amount="1")]))
    with pytest.raises(EditRefused, match="not valid"):  # more digits than ETH has
        apply_edits(old, typed([per_tx("0." + "1" * 19)]))


# ---- against a real signer daemon -------------------------------------------------------------


@pytest.fixture(scope="module")
def tier(tmp_path_factory, anvil):
    root = tmp_path_factory.mktemp("policy-edit")
    policy = root / "policy.yaml"
    policy.write_text(PRICED)
    stack = SignerStack(root, anvil.url, policy=policy).start()
    bridge = start_bridge(stack, root / "bridge")
    tier = Tier1(stack, bridge, root, anvil, main_key=secrets.token_bytes(32))
    yield tier
    bridge.stop()
    stack.close()


class Device:
    """A paired CLI companion signing policy edits as the phone does (device key; main key for loosening)."""

    def __init__(self, tier: Tier1, name: str) -> None:
        self.tier = tier
        self.wallet = tier.new_wallet(name)

        async def pair() -> None:
            companion = await tier.paired(name, self.wallet)
            await companion.close()

        asyncio.run(pair())
        self.device_id = self.wallet.device_id
        self.bridge = tier.stack.client_token(f"bridge-edit{time.monotonic_ns() % 10**9}", Scope.BRIDGE)

    def view(self) -> dict:
        return asyncio.run(self.tier.stack.call(self.bridge, "policy.view"))

    def params(self, edits, *, base_hash=None, ts=None, main_key: coincurve.PrivateKey | None = None) -> dict:
        base_hash = base_hash or self.view()["policy_hash"]
        ts = time.time() if ts is None else ts
        message = signed_message(POLICY_EDIT_DOMAIN, policy_edit_body(self.device_id, base_hash, edits, ts))
        params = {
            "device_id": self.device_id,
            "base_hash": base_hash,
            "edits": edits,
            "ts": ts,
            "signature": self.wallet.device_sign(message),
        }
        if main_key is not None:
            params["main_signature"] = "0x" + sign_digest(personal_digest(message), main_key).hex()
        return params

    def main_key(self) -> coincurve.PrivateKey:
        return self.wallet.main_key(bytearray(MAIN_PASS))

    def send(self, params: dict) -> dict:
        return asyncio.run(self.tier.stack.call(self.bridge, "policy.edit", params))

    def refused(self, params: dict, words: str) -> str:
        before = self.view()["policy_hash"]
        with pytest.raises(SignerError) as err:
            self.send(params)
        assert words in err.value.message, err.value.message
        assert self.view()["policy_hash"] == before  # nothing changed
        return err.value.message


@pytest.fixture(scope="module")
def device(tier):
    return Device(tier, "edit-phone")


def in_force(tier: Tier1) -> dict:
    """What the bot reads: `policy.show` with a sign token."""
    return asyncio.run(tier.stack.call(tier.bot_token(), "policy.show"))["policy"]


def last_audit(tier: Tier1, kind: str) -> dict:
    entries = asyncio.run(tier.stack.call(tier.admin, "audit.tail", {"n": 50, "kind": kind}))["entries"]
    return entries[-1]["body"]


def test_the_view_is_signed_by_the_signer_and_is_the_policy_in_force(tier, device):
    view = device.view()
    body = {"policy_hash": view["policy_hash"], "policy": view["policy"]}
    signer_key = asyncio.run(tier.stack.call(tier.admin, "companion.pair_begin", {"name": "x"}))["signer_key"]
    assert signed_by(signer_key, POLICY_VIEW_DOMAIN, body, view["signer_sig"])
    assert view["policy"] == in_force(tier)


@pytest.mark.chain
def test_a_tightening_applies_at_once_writes_the_file_and_the_bot_sees_it(tier, device):
    path = tier.stack.paths.policy
    done = device.send(device.params([per_tx("0.005"), window("24h", "0.02")]))
    assert done["status"] == "applied" and done["loosened"] is False and done["widens"] == []
    eth = in_force(tier)["assets"][0]
    assert eth["per_tx"] == "0.005" and eth["windows"]["24h"] == "0.02"
    on_disk = parse_policy(path.read_text())
    assert on_disk.policy_hash() == done["policy_hash"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    record = last_audit(tier, "policy.edited")
    assert record["authority"] == "device" and record["loosened"] is False
    assert record["from_hash"] == done["from_hash"] and record["policy_hash"] == done["policy_hash"]
    # the engine decides with it: 0.008 ETH to the friend now exceeds the per-transaction limit
    check = asyncio.run(
        tier.stack.call(
            tier.bot_token(),
            "policy.check",
            {"intent": {"chain_id": 31337, "to": FRIEND, "value": str(8 * 10**15)}},
        )
    )
    assert check["decision"]["outcome"] == "escalate" and "per_tx" in json.dumps(check), check


@pytest.mark.chain
def test_a_loosening_without_the_passkey_is_refused_whatever_it_is_mixed_with(tier, device):
    raise_it = device.params([per_tx("1")])
    message = device.refused(raise_it, "loosens your policy")
    assert "approve it with your passkey" in message
    # a loosening hidden among tightenings, or sent with a main-key signature by someone else
    device.refused(device.params([window("24h", "0.01"), book_add(NEW_FRIEND, "new friend")]), "loosens")
    stranger = coincurve.PrivateKey(secrets.token_bytes(32))
    device.refused(device.params([per_tx("1")], main_key=stranger), "not your main account's")


@pytest.mark.chain
def test_a_loosening_with_the_main_keys_signature_applies(tier, device):
    done = device.send(
        device.params([per_tx("0.02"), book_add(NEW_FRIEND, "new friend")], main_key=device.main_key())
    )
    assert done["loosened"] is True and any("per_tx" in w for w in done["widens"])
    policy = in_force(tier)
    assert policy["assets"][0]["per_tx"] == "0.02"
    assert {"chain": 31337, "address": NEW_FRIEND, "name": "new friend"} in policy["address_book"]
    assert last_audit(tier, "policy.edited")["authority"] == "passkey"


@pytest.mark.chain
def test_a_bridge_cannot_alter_a_proposal_in_transit(tier, device):
    good = device.params([per_tx("0.004")])
    for altered in (
        {**good, "edits": [per_tx("0.4")]},  # the amount
        {**good, "edits": [window("24h", "0.004")]},  # another limit
        {**good, "edits": [*good["edits"], book_add(STRANGER.lower(), "bridge's friend")]},  # an extra edit
        {**good, "base_hash": "f" * 64},
    ):
        device.refused(altered, "signature does not verify")
    assert device.send(good)["status"] == "applied"


@pytest.mark.chain
def test_a_replayed_proposal_is_refused(tier, device):
    good = device.params([window("7d", "0.15")])
    device.send(good)
    # replayed as is, and replayed after the policy moved back (the same bytes are used once)
    device.refused(good, "")  # stale or replay: either way nothing changes
    device.send(device.params([window("7d", "0.2")], main_key=device.main_key()))
    device.refused({**good}, "replay")


@pytest.mark.chain
def test_a_proposal_over_a_stale_policy_names_the_policy_the_phone_saw(tier, device):
    seen = device.view()["policy_hash"]
    device.send(device.params([window("24h", "0.019")]))  # another device changed it meanwhile
    message = device.refused(device.params([per_tx("0.003")], base_hash=seen), "your phone showed policy")
    assert seen[:12] in message and "nothing was changed" in message


@pytest.mark.chain
def test_a_revoked_device_cannot_edit(tier):
    thief = Device(tier, "stolen-phone")
    asyncio.run(tier.stack.call(tier.admin, "companion.revoke", {"device_id": thief.device_id}))
    thief.refused(thief.params([per_tx("0.001")]), "revoked")


@pytest.mark.chain
def test_a_change_on_disk_not_in_force_is_never_overwritten(tier, device):
    path = tier.stack.paths.policy
    text = path.read_text()
    pending = text.replace("tx_per_hour: 30", "tx_per_hour: 300")  # a loosening waiting for a reload
    assert pending != text
    path.write_text(pending)
    try:
        device.refused(device.params([per_tx("0.001")]), "not in force yet")
        assert path.read_text() == pending
    finally:
        path.write_text(text)


@pytest.mark.chain
def test_a_read_or_sign_token_cannot_view_or_edit(tier, device):
    for method, params in (("policy.view", None), ("policy.edit", device.params([per_tx("0.001")]))):
        with pytest.raises(SignerError):
            asyncio.run(tier.stack.call(tier.bot_token(), method, params))
