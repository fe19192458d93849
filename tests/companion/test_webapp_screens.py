"""The companion web app's screens as a wallet user reads them, in real headless Chromium against a
real signer (its policy prices ETH), bridge and anvil, at 360 x 640 and 390 x 844: the approval
card's order on the first screen and its sticky action bar, a result after each answer, refusals
and expiry in the card, the activity list, the kill switch offline, every command the app names,
axe-core on every screen in light and dark, and no sideways scrolling from 360 px to desktop.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from eth_account import Account

from companion_bridge import webapp
from tests.companion.conftest import Tier1, fund, start_bridge, transfer, wait_status
from tests.companion.test_webapp import (  # noqa: F401 - `browser` and `fresh_build` are fixtures
    app_url,
    back_up,
    browser,
    fresh_build,
    gone,
    pair,
    pairing_link,
    set_up_key,
    wait_for,
)
from tests.companion.webapp_support import Phone, off_loop, run_async
from tests.conftest import DEV_POLICY, FRIEND, STRANGER, SignerStack, balance

pytestmark = [pytest.mark.chain]
SMALL = {"width": 360, "height": 640}
PHONE = {"width": 390, "height": 844}
SIZES = (SMALL, PHONE)
OVER_LIMIT = 2 * 10**16  # 0.02 ETH: above the dev policy's 0.01 ETH per transaction
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
SRC = webapp.HERE / "src"


@pytest.fixture(scope="module")
def priced_tier(tmp_path_factory, anvil):
    """The dev policy with a static ETH price of $3050: the card shows dollars."""
    root = tmp_path_factory.mktemp("screens")
    policy = root / "policy.yaml"
    text = DEV_POLICY.read_text()
    assert '# price_usd: "3000"' in text
    policy.write_text(text.replace('# price_usd: "3000"', 'price_usd: "3050"'))
    stack = off_loop(lambda: SignerStack(root, anvil.url, policy=policy).start())
    bridge = off_loop(lambda: start_bridge(stack, root / "bridge"))
    tier = Tier1(stack, bridge, root, anvil)
    yield tier
    tier.bridge.stop()
    off_loop(stack.close)


def serious_violations(page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is now. axe is evaluated over
    CDP: the app's CSP (script-src 'self') refuses an injected <script>, as it should."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text() + "\n;true")
    found = page.evaluate("""async () => {
      const r = await axe.run(document, { resultTypes: ['violations'] });
      return r.violations.map((v) => ({ id: v.id, impact: v.impact,
        nodes: v.nodes.slice(0, 4).map((n) => n.target.join(' ') + ' :: ' + n.failureSummary) }));
    }""")
    return [v for v in found if v["impact"] in ("serious", "critical")]


def assert_accessible(phone: Phone, screen: str) -> None:
    """No serious or critical violation in the light and the dark theme, and no backticks shown."""
    page = phone.page
    try:
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.wait_for_timeout(50)
            bad = serious_violations(page)
            assert bad == [], f"{screen} ({scheme}): {json.dumps(bad, indent=1)}"
    finally:
        page.emulate_media(color_scheme="light")
    assert "`" not in page.locator("body").inner_text(), screen


def no_sideways_scroll(phone: Phone, screen: str) -> None:
    page = phone.page
    try:
        for width, height in ((360, 640), (390, 844), (768, 1024), (1280, 800)):
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(50)
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{screen} scrolls sideways by {overflow}px at {width}px"
    finally:
        page.set_viewport_size(PHONE)


@pytest.fixture(scope="module")
def phone(browser, priced_tier):
    """A phone paired through the CLI's link; every screen on the way checked with axe."""
    phone = Phone.open(browser, viewport=SMALL)
    phone.page.goto(pairing_link(priced_tier))
    phone.page.wait_for_selector("#create-key")
    assert_accessible(phone, "setup")
    no_sideways_scroll(phone, "setup")
    set_up_key(phone)
    assert_accessible(phone, "backup")
    text = phone.page.locator("main").inner_text()
    assert "owlia companion init --import" not in text and "Or import one" in text
    phone.shot("backup")
    keystore = back_up(phone)
    phone.main_key = bytes(Account.decrypt(keystore, "backup passphrase 1"))
    phone.page.wait_for_selector("#pair")
    assert_accessible(phone, "pairing")
    pair(phone, "phone-screens")
    fund(priced_tier.anvil, phone.vault()["address"], 10**18)
    yield phone
    phone.close()


def box(locator) -> dict:
    b = locator.bounding_box()
    assert b is not None, locator
    return b


def card_for(phone: Phone, request_id: str):
    card = phone.page.locator(f"article[data-request={request_id}]")
    card.wait_for(timeout=10_000)
    return card


def at_top(phone: Phone, request_id: str):
    """The app as it opens on a new request: reloaded, scrolled to the top."""
    phone.page.reload()
    card = card_for(phone, request_id)
    wait_for(lambda: phone.page.evaluate("window.owlia.status()") == "connected", what="the connection")
    phone.page.evaluate("window.scrollTo(0, 0)")
    return card


def test_the_card_reads_as_one_sentence_then_fee_rules_reason_with_the_action_bar_on_the_first_screen(
    phone, priced_tier
):
    bot = priced_tier.bot_token()
    [pending] = run_async(
        priced_tier.submit(transfer(STRANGER, OVER_LIMIT), token=bot, reason="rent for the flat")
    )
    assert pending["status"] == "pending_approval"
    for size in SIZES:
        phone.page.set_viewport_size(size)
        card = at_top(phone, pending["request_id"])
        sentence = card.locator(".sentence")
        assert sentence.inner_text() == "Send 0.02 ETH ≈ $61 to NEW ADDRESS 0x3C44…93BC on anvil (local dev)"
        fee = card.locator(".fee").inner_text()
        assert re.fullmatch(r"Network fee up to 0\.\d+ ETH ≈ (\$[\d.]+|< \$0\.01)", fee), fee
        reasons = card.locator(".reasons li").all_inner_texts()
        assert len(reasons) == len(set(reasons)) >= 2, reasons  # over the limit, new recipient: each once
        assert any("address book" in r for r in reasons) and any("0.01" in r for r in reasons), reasons
        first_screen = card.inner_text()
        for jargon in ("wei", "gas", "base units", "recipient.new", "[", "escalate"):
            assert jargon not in first_screen, (jargon, first_screen)
        assert "The agent says (unverified): rent for the flat" in card.locator(".agent-reason").inner_text()
        # in this order, all above the action bar, which is on screen
        changes = card.locator(".changes").inner_text()
        assert "Your balances change (what the node says)" in changes and "−0.02 ETH" in changes, changes
        parts = [
            sentence,
            card.locator(".changes"),
            card.locator(".fee"),
            card.locator(".reasons"),
            card.locator(".agent-reason"),
        ]
        tops = [box(p)["y"] for p in parts]
        assert tops == sorted(tops), tops
        bar = box(card.locator(".actionbar"))
        assert bar["y"] + bar["height"] <= size["height"], (size, bar)
        for p in parts:
            assert box(p)["y"] + box(p)["height"] <= bar["y"] + 1, (size, p)
        for label in ("Approve", "Deny", "Deny and freeze"):
            assert card.get_by_role("button", name=label, exact=True).is_visible()
        # Details: rule ids, the passed checks and the exact transaction, only when asked
        card.locator("details.more summary").click()
        details = card.locator("details.more").inner_text()
        assert "recipient.new" in details and str(OVER_LIMIT) in details and "wei per gas" in details
        # a long card: the action bar stays on screen (sticky)
        phone.page.evaluate("window.scrollTo(0, 0)")
        bar = box(card.locator(".actionbar"))
        assert bar["y"] + bar["height"] <= size["height"] + 0.5 and bar["y"] >= 0, (size, bar)
        if size == SMALL:
            phone.page.evaluate("window.scrollTo(0, 0)")
            card.locator("details.more summary").click()
            phone.page.evaluate("window.scrollTo(0, 0)")  # the click scrolled to the fold
            phone.shot("approval-card")
            assert_accessible(phone, "approval card")
            no_sideways_scroll(phone, "approval card")
            phone.page.set_viewport_size(SMALL)
            phone.page.emulate_media(color_scheme="dark")
            phone.shot("approval-card-dark")
            phone.page.emulate_media(color_scheme="light")
    phone.page.set_viewport_size(SMALL)
    card = card_for(phone, pending["request_id"])
    card.get_by_role("button", name="Deny", exact=True).click()
    result = phone.page.locator("#result")
    result.wait_for(timeout=15_000)
    assert result.locator("h2").inner_text() == "Denied" and "Nothing was signed" in result.inner_text()
    r = box(result)
    assert 0 <= r["y"] and r["y"] + 40 <= SMALL["height"]  # where the owner is looking
    assert phone.page.evaluate("document.activeElement && document.activeElement.id") == "result"
    assert_accessible(phone, "denied result")
    run_async(wait_status(priced_tier.stack, bot, pending["request_id"], {"denied"}))


def test_the_node_says_what_changes_in_the_balances_when_the_request_carries_a_simulation(
    browser, phone, priced_tier, fresh_build
):
    """The signer's request body as the page received it, with and without the optional
    `simulation` the signer may add: rendered by the app's own card code at 360 x 640."""
    [pending] = run_async(priced_tier.submit(transfer(FRIEND, OVER_LIMIT + 1)))
    card_for(phone, pending["request_id"])
    [body] = [json.loads(t) for t in phone.idb()["kv"]["requests"] if pending["request_id"] in t]
    main = phone.vault()["address"]
    simulated = dict(
        body,
        simulation={
            "source": "eth_simulateV1",
            "changes": [
                {
                    "account": main.lower(),
                    "asset": "native",
                    "symbol": "ETH",
                    "decimals": 18,
                    "delta": str(-(OVER_LIMIT + 1)),
                },
                {
                    "account": FRIEND,
                    "asset": "native",
                    "symbol": "ETH",
                    "decimals": 18,
                    "delta": str(OVER_LIMIT + 1),
                },
                {
                    "account": main,
                    "asset": "0x" + "ab" * 20,
                    "symbol": "USDC",
                    "decimals": 6,
                    "delta": "2500000",
                },
            ],
        },
    )
    kit = Phone.open(browser, viewport=SMALL)
    try:
        kit.page.goto(app_url(priced_tier) + "/app/")
        kit.page.evaluate((fresh_build / "testkit.js").read_text())
        kit.page.evaluate("document.querySelector('main').remove()")
        shown = kit.page.evaluate("([t, m]) => owliaTestkit.renderCard(t, m)", [json.dumps(simulated), main])
        assert "Your balances change (what the node says)" in shown
        assert "−0.020000000000000001 ETH" in shown and "+2.5 USDC" in shown
        assert "+0.020000000000000001 ETH" not in shown  # another account's change is not the owner's
        card = kit.page.locator("article.card")
        order = [
            box(card.locator(s))["y"]
            for s in (".sentence", ".changes", ".fee", ".reasons", ".agent-reason")
            if card.locator(s).count()
        ]
        assert order == sorted(order) and len(order) >= 4
        kit.page.evaluate("document.querySelectorAll('article.card').forEach((c) => c.remove())")
        # the signer simulated the real request from the main account (anvil serves eth_simulateV1)
        outflows = [c for c in body["simulation"]["changes"] if c["account"] == main.lower()]
        assert outflows == [
            {
                "account": main.lower(),
                "asset": "native",
                "symbol": "ETH",
                "decimals": 18,
                "delta": str(-(OVER_LIMIT + 1)),
            }
        ], body["simulation"]
        bare = {k: v for k, v in body.items() if k != "simulation"}
        plain = kit.page.evaluate("([t, m]) => owliaTestkit.renderCard(t, m)", [json.dumps(bare), main])
        assert "what the node says" not in plain and "balances" not in plain  # absent: nothing claimed
        assert (
            kit.page.evaluate("owliaTestkit.explorerTx(8453, '0x' + 'ab'.repeat(32))")
            == "https://basescan.org/tx/0x" + "ab" * 32
        )
        assert kit.page.evaluate("owliaTestkit.explorerTx(31337, '0x' + 'ab'.repeat(32))") is None
        assert kit.page.evaluate("owliaTestkit.dollars('20000000000000000', 18, '3050')") == "$61"
        assert kit.page.evaluate("owliaTestkit.parseUnits('0.004')") == str(4 * 10**15)
    finally:
        kit.close()
    card = card_for(phone, pending["request_id"])
    card.get_by_role("button", name="Deny", exact=True).click()
    gone(phone, card)


def test_approved_and_sent_then_the_activity_lists_each_request_apart(phone, priced_tier, anvil):
    bot = priced_tier.bot_token()
    before = balance(anvil, FRIEND)
    ids = []
    for extra in (2, 3):
        [pending] = run_async(priced_tier.submit(transfer(FRIEND, OVER_LIMIT + extra), token=bot))
        ids.append(pending["request_id"])
    first = card_for(phone, ids[0])
    assert "dev-friend" in first.locator(".sentence").inner_text()
    first.get_by_role("button", name="Approve", exact=True).click()
    result = phone.page.locator("#result")
    wait_for(lambda: first.count() == 0 or phone.error_text(), 30, "the approval")
    assert result.locator("h2").inner_text() == "Approved and sent", phone.error_text()
    assert "to dev-friend on anvil (local dev)" in result.inner_text()
    r = box(result)
    assert 0 <= r["y"] < SMALL["height"]
    phone.shot("approved")
    run_async(wait_status(priced_tier.stack, bot, ids[0], {"confirmed"}))
    assert balance(anvil, FRIEND) - before == OVER_LIMIT + 2
    second = card_for(phone, ids[1])
    second.get_by_role("button", name="Deny", exact=True).click()
    wait_for(lambda: second.count() == 0, 15, "the denial")
    phone.page.locator("#result-done").click()
    rows = phone.page.locator("#activity .activity-row")
    texts = rows.all_inner_texts()
    mine = [t for t in texts if any(f"#{i[-6:]}" in t for i in ids)]
    assert len(mine) == 2, texts
    assert any("Send 0.020000000000000002 ETH to dev-friend" in t and "Approved" in t for t in mine), mine
    assert any("Send 0.020000000000000003 ETH to dev-friend" in t and "Denied" in t for t in mine), mine
    short_ids = [re.search(r"#[0-9a-f]{6}", t).group(0) for t in texts if re.search(r"#[0-9a-f]{6}", t)]
    assert len(short_ids) == len(set(short_ids)), short_ids
    assert rows.locator("a").count() == 0  # anvil has no public explorer: no link
    phone.page.evaluate("document.querySelector('#activity').scrollIntoView()")
    assert_accessible(phone, "home with activity")
    no_sideways_scroll(phone, "home")
    phone.page.set_viewport_size(SMALL)
    phone.shot("activity")


def test_a_refusal_and_an_expiry_show_in_the_card_where_the_owner_is_looking(phone, priced_tier, monkeypatch):
    bridge = priced_tier.bridge.bridge
    honest = bridge._call

    async def refusing(device_id, message):
        if message.get("method") == "approvals.answer":
            return {
                "type": "reply",
                "id": message.get("id"),
                "ok": False,
                "error": {"code": -32000, "message": "the approval request expired"},
            }
        return await honest(device_id, message)

    monkeypatch.setattr(bridge, "_call", refusing)
    [pending] = run_async(priced_tier.submit(transfer(FRIEND, OVER_LIMIT + 4)))
    card = card_for(phone, pending["request_id"])
    card.get_by_role("button", name="Deny", exact=True).click()
    message = card.locator(".card-error")
    message.wait_for(state="visible", timeout=15_000)
    assert message.inner_text() == "Deny refused: the approval request expired"
    m = box(message)
    assert 0 <= m["y"] and m["y"] + m["height"] <= SMALL["height"]  # in the action bar, on screen
    assert not phone.page.locator("#error").is_visible() and "ALREADY APPROVED" not in card.inner_text()
    assert_accessible(phone, "refusal in the card")
    monkeypatch.setattr(bridge, "_call", honest)
    # time runs out on the phone: the card says so, and Approve can no longer be pressed
    card.evaluate("(c) => { c.querySelector('.countdown').dataset.expires = String(Date.now() / 1000 - 1); }")
    wait_for(lambda: "This request expired" in card.locator(".card-error").inner_text(), 5, "the expiry")
    assert card.locator(".card-error").inner_text().startswith("This request expired: nothing was signed")
    assert card.get_by_role("button", name="Approve", exact=True).is_disabled()
    card.get_by_role("button", name="Deny", exact=True).click()
    wait_for(lambda: card.count() == 0, 15, "the denial")


def test_freeze_offline_is_queued_and_sent_on_reconnect_and_freezes_are_logged(phone, priced_tier):
    page, stack = phone.page, priced_tier.stack
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    phone.context.set_offline(True)
    try:
        page.reload()
        page.wait_for_selector("#freeze", timeout=10_000)
        assert page.locator("#status").inner_text().startswith("offline")
        page.click("#freeze")
        banner = page.locator("#pending-freeze")
        banner.wait_for(timeout=5_000)
        words = banner.inner_text()
        assert (
            "could not reach the bridge" in words and "owlia signer freeze" in words and "reconnects" in words
        )
        b = box(banner)
        assert 0 <= b["y"] and b["y"] < SMALL["height"]
        assert_accessible(phone, "freeze queued offline")
        phone.shot("offline-freeze")
        assert run_async(stack.call(priced_tier.admin, "status"))["frozen"] is False
    finally:
        phone.context.set_offline(False)
    # sent as soon as the phone is back, signed then
    wait_for(lambda: run_async(stack.call(priced_tier.admin, "status"))["frozen"], 30, "the queued freeze")
    page.wait_for_selector("#frozen-banner", timeout=15_000)
    assert "Session keys stay revoked after Unfreeze" in page.locator("#frozen-banner").inner_text()
    wait_for(lambda: page.locator("#status").inner_text().startswith("connected"), 15, "connected")
    assert page.locator("#pending-freeze").count() == 0
    assert (
        not page.locator("#error").is_visible() or "cannot reach" not in page.locator("#error").inner_text()
    )
    assert_accessible(phone, "frozen home")
    phone.shot("frozen")
    page.click("#unfreeze")
    page.wait_for_selector("#freeze", timeout=10_000)
    assert run_async(stack.call(priced_tier.admin, "status"))["frozen"] is False
    # queued offline, then cancelled by the owner: nothing is sent on reconnect
    phone.context.set_offline(True)
    try:
        page.reload()
        page.wait_for_selector("#freeze", timeout=10_000)
        page.click("#freeze")
        page.locator("#cancel-freeze").click()
        wait_for(lambda: page.locator("#pending-freeze").count() == 0, 5, "the cancel")
    finally:
        phone.context.set_offline(False)
    wait_for(lambda: page.evaluate("window.owlia.status()") == "connected", 30, "the reconnect")
    # Room for a cancelled freeze that was wrongly kept to go out after the reconnect. When the app is
    # right nothing is sent, so there is no event to wait on; load only makes the check weaker.
    time.sleep(1.5)
    assert run_async(stack.call(priced_tier.admin, "status"))["frozen"] is False
    activity = page.locator("#activity").inner_text()
    for line in ("Freeze queued (offline)", "Froze signing", "Unfroze signing", "Queued freeze cancelled"):
        assert line in activity, activity


def test_every_command_the_app_names_exists(priced_tier):
    """Each `owlia ...` the app shows is run with --help: a renamed command fails here."""
    sources = (
        "\n".join(p.read_text() for p in sorted(SRC.glob("*.js")))
        + (webapp.HERE / "static" / "index.html").read_text()
    )
    named = sorted(set(re.findall(r"owlia(?: [a-z][a-z0-9-]*)+", sources)))
    assert "owlia signer freeze" in named and "owlia companion pair" in named, named
    for command in named:
        done = priced_tier.stack.owlia(*command.split()[1:], "--help")
        assert done.returncode == 0, f"{command}: {done.stderr[-400:]}"
    assert "--import" not in sources


def test_a_top_up_is_typed_in_eth_and_every_field_is_labelled(phone, priced_tier):
    page = phone.page
    for field in page.locator("main input, main textarea").all():
        fid = field.get_attribute("id")
        assert fid and page.locator(f"label[for='{fid}']").count() == 1, fid
    assert (
        page.get_by_label("Amount in ETH").count() == 1 and page.get_by_label("Session key id").count() == 1
    )
    page.get_by_label("Session key id").fill("sk_nope")
    page.get_by_label("Amount in ETH").fill("1000000000000000")  # wei typed where ETH is asked
    page.click("#topup")
    wait_for(phone.error_text, 10, "the refusal")
    assert "top-up refused" in phone.error_text()
    page.get_by_label("Session key id").fill("sk_nope")
    page.get_by_label("Amount in ETH").fill("0.0000000000000000001")
    page.click("#topup")
    wait_for(lambda: "at most 18 digits" in phone.error_text(), 10, "the refusal in words")


def revoke_params(wallet, target: str, ts: float | None = None) -> dict:
    """`approvals.revoke_device` as a paired device signs it (the desktop companion's device key)."""
    from signer.wire.messages import REVOKE_DOMAIN, revoke_body, signed_message

    ts = time.time() if ts is None else ts
    message = signed_message(REVOKE_DOMAIN, revoke_body(wallet.device_id, target, ts))
    return {
        "device_id": wallet.device_id,
        "target_device_id": target,
        "ts": ts,
        "signature": wallet.device_sign(message),
    }


def test_a_device_is_revoked_from_the_phone_after_a_confirmation(phone, priced_tier):
    from tests.companion.test_webapp import desktop_companion, get_devices

    page, stack = phone.page, priced_tier.stack
    wallet, desk_token = desktop_companion(phone, priced_tier, "desk-revoke")
    row = page.locator(f"#devices .device[data-device={wallet.device_id}]")
    row.wait_for(timeout=15_000)
    row.get_by_role("button", name="Revoke desk-revoke").click()
    confirm = row.locator(".confirm-revoke")
    confirm.wait_for(timeout=5_000)
    assert "Its answers are refused from now on" in confirm.inner_text()
    assert_accessible(phone, "revoke confirmation")
    row.get_by_role("button", name="Yes, revoke desk-revoke").click()
    row.locator(".revoked-mark").wait_for(timeout=15_000)
    listed = {
        d["device_id"]: d for d in run_async(stack.call(priced_tier.admin, "companion.list"))["devices"]
    }
    assert listed[wallet.device_id]["revoked_at"] is not None
    own = phone.idb()["kv"]["device"]["device_id"]
    assert listed[own]["revoked_at"] is None
    assert get_devices(priced_tier, f"Bearer {desk_token}")[0] == 401  # its token died with it
    assert "Revoked desk-revoke" in page.locator("#activity").inner_text()


def test_a_signed_revoke_is_refused_forged_replayed_stale_or_from_a_revoked_device(phone, priced_tier):
    """The signer's boundary, called with a bridge token as the bridge would: only an active paired
    device's fresh, single-use signature over exactly this target revokes it."""
    from signer.wire.client import SignerError
    from signer.wire.protocol import Scope
    from tests.companion.test_webapp import desktop_companion

    stack = priced_tier.stack
    bridge = stack.client_token(f"bridge-attack{time.monotonic_ns() % 10**9}", Scope.BRIDGE)
    actor, _ = desktop_companion(phone, priced_tier, "desk-actor")
    victim, _ = desktop_companion(phone, priced_tier, "desk-victim")
    other, _ = desktop_companion(phone, priced_tier, "desk-other")

    def refused(params: dict, words: str) -> None:
        with pytest.raises(SignerError) as err:
            run_async(stack.call(bridge, "approvals.revoke_device", params))
        assert words in err.value.message, err.value.message

    def active(device_id: str) -> bool:
        rows = run_async(stack.call(priced_tier.admin, "companion.list"))["devices"]
        return next(d for d in rows if d["device_id"] == device_id)["revoked_at"] is None

    good = revoke_params(actor, victim.device_id)
    refused(
        {**good, "target_device_id": other.device_id}, "signature does not verify"
    )  # signed for another target
    refused({**good, "device_id": other.device_id}, "signature does not verify")  # claimed by another device
    refused(
        {**good, "signature": good["signature"][:-2] + ("00" if good["signature"][-2:] != "00" else "11")},
        "signature does not verify",
    )
    refused(revoke_params(actor, victim.device_id, ts=time.time() - 600), "stale")
    refused(revoke_params(actor, victim.device_id, ts=time.time() + 600), "stale")
    assert active(victim.device_id) and active(other.device_id)
    # a read or sign token cannot call it at all
    with pytest.raises(SignerError):
        run_async(
            stack.call(
                priced_tier.bot_token(), "approvals.revoke_device", revoke_params(actor, victim.device_id)
            )
        )
    assert active(victim.device_id)
    done = run_async(stack.call(bridge, "approvals.revoke_device", good))
    assert done["device"]["device_id"] == victim.device_id and done["device"]["revoked_at"] is not None
    refused(good, "replay")  # the same proof twice
    # the revoked device can revoke no one
    refused(revoke_params(victim, other.device_id), "revoked")
    assert active(other.device_id) and active(actor.device_id) and not active(victim.device_id)


def test_a_freeze_from_the_host_reaches_the_phone_without_losing_what_the_owner_was_typing(
    phone, priced_tier
):
    page, stack = phone.page, priced_tier.stack
    page.get_by_label("Session key id").fill("sk_0123456789abcdef")
    page.get_by_label("Amount in ETH").fill("0.003")
    run_async(stack.call(priced_tier.admin, "signer.freeze"))  # `owlia signer freeze` on the host
    banner = page.locator("#frozen-banner")
    banner.wait_for(timeout=15_000)  # pushed through the bridge, the page re-rendered
    assert "Session keys stay revoked after Unfreeze" in banner.inner_text()
    assert page.get_by_label("Session key id").input_value() == "sk_0123456789abcdef"
    assert page.get_by_label("Amount in ETH").input_value() == "0.003"
    page.click("#unfreeze")
    page.wait_for_selector("#freeze", timeout=10_000)
    assert run_async(stack.call(priced_tier.admin, "status"))["frozen"] is False
    assert "Unfroze signing" in page.locator("#activity").inner_text()


def test_a_failed_import_leaves_no_key_on_screen(browser, priced_tier):
    phone = Phone.open(browser, prf=False, viewport=SMALL)
    try:
        page = phone.page
        page.goto(app_url(priced_tier) + "/app/")
        page.check("input[name=protect][value=passphrase]")
        page.fill("#seal-pass", "phone passphrase 22")
        page.fill("#import-text", "0x" + "00" * 32)  # not a valid key
        page.click("#import-key")
        wait_for(lambda: "not a valid private key" in phone.error_text(), 10, "the refusal")
        wait_for(
            lambda: page.locator("#import-text").input_value() == "", 10, "the key wiped from the screen"
        )
        assert page.locator("input[name=protect][value=passphrase]").is_checked()  # the choice is kept
    finally:
        phone.close()


def test_amounts_typed_and_shown_in_the_page_follow_the_signers_unit_rules(browser, priced_tier, fresh_build):
    """Differential, on random text: the page's parseUnits accepts exactly what the signer's
    parse_units does (the same base units), and formatUnits writes what format_amount writes."""
    from hypothesis import given, settings, strategies as st

    from policies.units import format_amount, parse_units

    typed, amounts = [], []
    digits = st.text("0123456789", min_size=0, max_size=30)

    @settings(max_examples=400, deadline=None, database=None)
    @given(
        st.one_of(
            st.builds(lambda w, f: f"{w}.{f}", digits, digits),
            digits,
            st.text("0123456789.-e+ ", max_size=25),
        ),
        st.sampled_from([0, 6, 18]),
        st.integers(0, 2**256),
        st.sampled_from([0, 1, 6, 18, 30]),
    )
    def collect(text, decimals, amount, shown_decimals):
        typed.append((text, decimals))
        amounts.append((str(amount), shown_decimals))

    collect()
    typed += [("0.01", 18), ("0.0100000000000000000000", 18), ("1" * 101, 0), ("0.0000000000000000001", 18)]
    phone = Phone.open(browser, viewport=SMALL)
    try:
        phone.page.goto(app_url(priced_tier) + "/app/")
        phone.page.evaluate((fresh_build / "testkit.js").read_text())
        for decimals in (0, 6, 18):
            texts = [t for t, d in typed if d == decimals]
            got = phone.page.evaluate("([ts, d]) => owliaTestkit.parseMany(ts, d)", [texts, decimals])
            for text, page_wei in zip(texts, got):
                try:  # the page trims what the owner typed first
                    expected = str(parse_units(text.strip(), decimals))
                except ValueError:
                    expected = None
                assert page_wei == expected, (text, decimals)
        shown = phone.page.evaluate("(ps) => owliaTestkit.formatMany(ps)", amounts)
        for (amount, decimals), text in zip(amounts, shown):
            assert text == format_amount(int(amount), decimals, "").strip(), (amount, decimals)
    finally:
        phone.close()
