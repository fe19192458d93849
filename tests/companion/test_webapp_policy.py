"""The limits and address-book screen of the companion web app, in real headless Chromium with a
virtual passkey, against a real signer daemon (its policy prices ETH at $3050), bridge and anvil:
the policy in words, a tightening applied at once without the passkey, a loosening applied only with
it, a stale edit refused where the owner is looking; axe-core on every state in light and dark, no
sideways scrolling, and the screenshots in docs/companion.md."""

from __future__ import annotations

import json
import secrets

import coincurve
import pytest
from hypothesis import given, settings, strategies as st

from policies.kernel.keccak import keccak256
from policies.loader import parse_policy
from policies.model import Policy
from signer.tier1.policy_change import widenings
from signer.tier1.policy_edit import apply_edits, personal_digest
from signer.wire.delegation import recover
from signer.wire.messages import POLICY_EDIT_DOMAIN, policy_edit_body, signed_message
from signer.wire.requests import PolicyEditParams
from tests.companion.test_policy_edit import NO_LIMITS, PRICED
from tests.companion.test_webapp import app_url, browser, fresh_build, wait_for  # noqa: F401 - fixtures
from tests.companion.test_webapp_screens import (  # noqa: F401 - `phone` and `priced_tier` are fixtures
    assert_accessible,
    no_sideways_scroll,
    phone,
    priced_tier,
)
from tests.companion.webapp_support import Phone, run_async
from tests.conftest import FRIEND

pytestmark = [pytest.mark.chain]
NEW_FRIEND = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"


def in_force(tier) -> dict:
    """The policy the bot reads (`policy.show` with a sign token)."""
    return run_async(tier.stack.call(tier.bot_token(), "policy.show"))


def passkey_uses(phone: Phone) -> int:
    """How often the virtual authenticator signed (each approval with the passkey counts one)."""
    creds = phone.cdp.send("WebAuthn.getCredentials", {"authenticatorId": phone.authenticator})["credentials"]
    return sum(c["signCount"] for c in creds)


def edits_sent(phone: Phone) -> list[dict]:
    calls = [json.loads(f) for f in phone.frames if '"policy.edit"' in f]
    return [c["params"] for c in calls if c.get("method") == "policy.edit"]


def open_screen(phone: Phone) -> None:
    page = phone.page
    if page.locator("#policy-back").count():
        page.click("#policy-back")
    wait_for(lambda: page.evaluate("window.owlia.status()") == "connected", what="the connection")
    page.click("#policy-open")
    page.wait_for_selector("#policy-source", timeout=15_000)


def outcome(phone: Phone) -> str:
    box = phone.page.locator("#policy-outcome")
    box.wait_for(timeout=20_000)
    return box.inner_text()


def test_the_screen_shows_the_policy_in_force_in_words(phone, priced_tier):
    page = phone.page
    open_screen(phone)
    main = page.locator("main").inner_text()
    assert "ETH on anvil (local dev)" in main, main
    assert "0.01 ETH ≈ $30.50 a transaction" in main
    assert "0.05 ETH ≈ $152 a day" in main, main
    assert "0.2 ETH ≈ $610 a week" in main
    entry = page.locator(f'.book-entry[data-address="{FRIEND}"]')
    assert "dev-friend" in entry.inner_text()
    assert "0x7099 7970 C518 12dc 3A01 0C7d 01b5 0e0d 17dc 79C8" in entry.inner_text()  # checksummed, grouped
    version = in_force(priced_tier)["policy_hash"][:12]
    assert version in page.locator("#policy-source").inner_text()
    assert_accessible(phone, "limits and address book")
    no_sideways_scroll(phone, "limits and address book")
    page.evaluate("window.scrollTo(0, 0)")
    phone.shot("policy-limits")


def test_a_tightening_applies_at_once_without_the_passkey(phone, priced_tier):
    page = phone.page
    open_screen(phone)
    uses, sent = passkey_uses(phone), len(edits_sent(phone))
    page.get_by_label("Daily limit (ETH)").fill("0.02")
    page.click("#pe-review")
    review = page.locator("#policy-review")
    review.wait_for(timeout=5_000)
    assert "Daily limit for ETH: 0.05 ETH ≈ $152 → 0.02 ETH ≈ $61 (tighter)" in review.inner_text()
    assert page.locator("#pe-apply").inner_text() == "Apply now"
    assert_accessible(phone, "the change in words")
    phone.shot("policy-diff")
    page.click("#pe-apply")
    said = outcome(phone)
    assert "Policy changed" in said and "judged it tighter" in said, said
    policy = in_force(priced_tier)
    assert policy["policy"]["assets"][0]["windows"]["24h"] == "0.02"
    on_disk = parse_policy(priced_tier.stack.paths.policy.read_text())
    assert on_disk.policy_hash() == policy["policy_hash"]
    [params] = edits_sent(phone)[sent:]
    assert "main_signature" not in params
    assert params["edits"] == [
        {"op": "limit", "chain": 31337, "asset": "native", "limit": "24h", "amount": "0.02"}
    ]
    assert passkey_uses(phone) == uses  # no passkey asked
    # the screen now shows the new policy
    assert "0.02 ETH ≈ $61 a day" in page.locator("main").inner_text()
    assert_accessible(phone, "a change applied")


def test_a_loosening_and_a_new_address_apply_only_with_the_passkey(phone, priced_tier):
    page = phone.page
    open_screen(phone)
    uses = passkey_uses(phone)
    page.get_by_label("Per-transaction limit (ETH)").fill("0.02")
    page.get_by_label("Name", exact=True).fill("Alice")
    page.get_by_label("Address (0x…)").fill(NEW_FRIEND)
    page.click("#pe-add")
    page.locator(".book-entry.new").wait_for(timeout=5_000)
    page.get_by_label("Name for 0x7099…79C8").fill("Dev friend")
    page.click("#pe-review")
    review = page.locator("#policy-review")
    review.wait_for(timeout=5_000)
    words = review.inner_text()
    assert "Per-transaction limit for ETH: 0.01 ETH ≈ $30.50 → 0.02 ETH ≈ $61 (looser)" in words
    assert "Add Alice (0x3C44 CdDd B6a9 00fa 2b58 5dd2 99e0 3d12 FA42 93BC on anvil (local dev))" in words
    assert "Rename dev-friend → Dev friend" in words
    assert page.locator("#pe-apply").inner_text() == "Approve with passkey and apply"
    assert_accessible(phone, "a loosening in words")
    phone.shot("policy-loosen")
    page.click("#pe-apply")
    said = outcome(phone)
    assert "took it with your passkey" in said, said
    assert passkey_uses(phone) == uses + 1
    policy = in_force(priced_tier)["policy"]
    assert policy["assets"][0]["per_tx"] == "0.02"
    book = {e["address"]: e["name"] for e in policy["address_book"]}
    assert book == {FRIEND.lower(): "Dev friend", NEW_FRIEND.lower(): "Alice"}
    entries = run_async(
        priced_tier.stack.call(priced_tier.admin, "audit.tail", {"n": 5, "kind": "policy.edited"})
    )
    assert entries["entries"][-1]["body"]["authority"] == "passkey"
    assert "Policy changed" in page.locator("main").inner_text()


def test_a_removal_is_tighter_and_an_edit_over_a_stale_policy_is_refused_in_words(phone, priced_tier):
    page, stack = phone.page, priced_tier.stack
    open_screen(phone)
    seen = in_force(priced_tier)["policy_hash"]
    page.get_by_role("button", name="Remove Alice").click()
    page.locator(".book-entry.removed").wait_for(timeout=5_000)
    page.click("#pe-review")
    review = page.locator("#policy-review")
    review.wait_for(timeout=5_000)
    assert "Remove Alice (0x3C44 CdDd B6a9 00fa 2b58 5dd2 99e0 3d12 FA42 93BC" in review.inner_text()
    assert "(tighter)" in review.inner_text()
    # meanwhile the owner tightens the file on the signer's machine and reloads it
    path = stack.paths.policy
    path.write_text(path.read_text().replace("tx_per_hour: 30", "tx_per_hour: 20"))
    assert run_async(stack.call(priced_tier.admin, "policy.reload"))["status"] == "applied"
    page.click("#pe-apply")
    said = outcome(phone)
    assert "Not changed" in said and f"your phone showed policy {seen[:12]}" in said, said
    assert page.locator("#policy-outcome").get_attribute("role") == "alert"
    assert_accessible(phone, "a stale edit refused")
    phone.shot("policy-stale")
    # the screen reloaded the policy in force: the same removal now goes through
    wait_for(lambda: seen[:12] not in page.locator("#policy-source").inner_text(), 10, "the new policy")
    page.get_by_role("button", name="Remove Alice").click()
    page.click("#pe-review")
    page.click("#pe-apply")
    wait_for(lambda: "Policy changed" in page.locator("main").inner_text(), 20, "the removal")
    book = in_force(priced_tier)["policy"]["address_book"]
    assert [e["name"] for e in book] == ["Dev friend"]
    page.click("#policy-back")
    page.wait_for_selector("#policy-open")
    assert "Policy changed" in page.locator("#activity").inner_text()


@st.composite
def typed_changes(draw):
    """What an owner might type on the screen: limits raised, lowered, emptied; entries renamed, removed, added."""
    base = draw(st.sampled_from([PRICED, NO_LIMITS]))
    unknown = draw(st.sampled_from(["escalate", "deny", "allow"]))
    text = base.replace("unknown: escalate", f"unknown: {unknown}", 1)
    labels = ["per_tx", "24h", "7d"] if base is PRICED else ["per_tx"]
    amount = st.one_of(st.just(""), st.integers(1, 10**6).map(lambda n: f"0.{n:06d}"), st.just("0.0100"))
    draft = {f"pe-0-{label.replace('_', '')}": draw(amount) for label in labels if draw(st.booleans())}
    removed = [0] if draw(st.booleans()) else []
    if not removed and draw(st.booleans()):
        draft["pe-name-0"] = draw(st.sampled_from(["dev-friend", "best friend"]))
    added = []
    if draw(st.booleans()):
        address = "0x" + draw(st.binary(min_size=20, max_size=20)).hex()
        added.append({"chain": 31337, "address": address, "name": "new one"})
    return text, draft, added, removed


def test_the_pages_reading_of_a_change_matches_the_signers_and_its_signatures_verify(
    browser, priced_tier, fresh_build
):
    """A differential test: for random typed changes, the page builds the edits the signer applies,
    marks them looser exactly when the signer judges them so (so it asks for the passkey when it is
    needed), and signs bytes the signer verifies (device message; the main key's EIP-191 signature)."""
    cases: list = []

    @settings(max_examples=150, deadline=None, database=None, derandomize=True)
    @given(typed_changes())
    def collect(case):
        cases.append(case)

    collect()
    phone = Phone.open(browser)
    try:
        phone.page.goto(app_url(priced_tier) + "/app/")
        phone.page.evaluate((fresh_build / "testkit.js").read_text())
        views = [json.dumps(parse_policy(t).model_dump(mode="json")) for t, *_ in cases]
        got = phone.page.evaluate(
            "(cs) => cs.map(([p, d, a, r]) => owliaTestkit.policyDiff(p, d, a, r))",
            [[v, d, a, r] for v, (_, d, a, r) in zip(views, cases)],
        )
        judged = {"looser": 0, "tighter": 0}
        for (text, draft, added, removed), page in zip(cases, got):
            assert "error" not in page, (draft, page)
            old: Policy = parse_policy(text)
            if not page["edits"]:
                continue
            edits = PolicyEditParams.model_validate(
                {
                    "device_id": "dev_" + "0" * 16,
                    "base_hash": "0" * 64,
                    "edits": page["edits"],
                    "ts": 1.5,
                    "signature": "0" * 128,
                }
            ).edits
            assert [e.model_dump(mode="json") for e in edits] == page[
                "edits"
            ]  # the bytes the signer re-derives
            loosens = bool(widenings(old, apply_edits(old, edits)))
            assert page["loosens"] == loosens, (draft, added, removed, page)
            judged["looser" if loosens else "tighter"] += 1
        assert judged["looser"] > 10 and judged["tighter"] > 10, judged
        secret = secrets.token_bytes(32)
        key = coincurve.PrivateKey(secret)
        main = "0x" + keccak256(key.public_key.format(compressed=False)[1:])[-20:].hex()
        edits = [{"op": "limit", "chain": 31337, "asset": "native", "limit": "24h", "amount": "0.02"}]
        ts = 1764000000.123
        signed = phone.page.evaluate(
            "([e, t, s]) => owliaTestkit.policyEditSigned('dev_0123456789abcdef', 'ab'.repeat(32), e, t, s)",
            [json.dumps(edits), ts, secret.hex()],
        )
        message = signed_message(
            POLICY_EDIT_DOMAIN, policy_edit_body("dev_0123456789abcdef", "ab" * 32, edits, ts)
        )
        assert signed["message"].encode() == message
        assert recover(personal_digest(message), bytes.fromhex(signed["main"][2:])) == main
    finally:
        phone.close()
