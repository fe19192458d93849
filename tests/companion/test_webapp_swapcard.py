"""Swaps and wraps on the phone's approval card, in real headless Chromium with a virtual passkey,
against a real signer whose policy lists a real Uniswap v3 market on anvil (bot.devmarket, bytecode
from npm): "Swap 0.011 ETH ≈ $33 for at least … TUSD … on Uniswap v3 (anvil (local dev))", the
slippage bound, the balance changes the node simulated (for the main account and the session key it
pays), never an opaque "Call a contract"; approved on the phone, the swap lands.
"""

from __future__ import annotations

import pytest

from bot.devmarket import selector
from policies.kernel.addresses import to_checksum
from policies.units import format_amount
from tests.companion.conftest import Tier1, fund, start_bridge, wait_status
from tests.companion.test_webapp import (  # noqa: F401 - `browser` and `fresh_build` are fixtures
    back_up,
    browser,
    fresh_build,
    gone,
    pair,
    pairing_link,
    set_up_key,
    wait_for,
)
from tests.companion.test_webapp_home import short_units
from tests.companion.test_webapp_screens import SMALL, assert_accessible, box, no_sideways_scroll
from tests.companion.webapp_support import Phone, off_loop, run_async
from tests.conftest import SignerStack
from tests.defi.conftest import (  # noqa: F401 - `chain` and `market` are fixtures
    MILLI,
    chain,
    market,
    quote,
    swap_data,
    swap_policy,
    token_balance,
)

pytestmark = [pytest.mark.chain]
AMOUNT = 11 * MILLI  # 0.011 ETH: over the policy's 0.01 ETH per transaction, so the phone is asked


def usd(amount: int, decimals: int, price: int) -> str:
    """present.js dollars: cents below $100, whole dollars from $100."""
    cents = amount * price * 100 // 10**decimals
    whole, rest = divmod(cents, 100)
    return f"${whole:,}" if whole >= 100 or rest == 0 else f"${whole:,}.{rest:02d}"


@pytest.fixture(scope="module")
def swap_tier(tmp_path_factory, chain, market):  # noqa: F811 - the defi fixtures
    root = tmp_path_factory.mktemp("swapcard")
    stack = off_loop(lambda: SignerStack(root, chain.url, policy=swap_policy(market, root)).start())
    bridge = off_loop(lambda: start_bridge(stack, root / "bridge"))
    tier = Tier1(stack, bridge, root, chain)
    yield tier
    tier.bridge.stop()
    off_loop(stack.close)


@pytest.fixture(scope="module")
def phone(browser, swap_tier):  # noqa: F811 - the browser fixture
    phone = Phone.open(browser, viewport=SMALL)
    phone.page.goto(pairing_link(swap_tier))
    set_up_key(phone)
    back_up(phone)
    pair(phone, "phone-swaps")
    fund(swap_tier.anvil, phone.vault()["address"], 10**18)
    yield phone
    phone.close()


def card_text(phone: Phone, request_id: str, must: str) -> str:
    """The card once the home reading (which names the session key) has arrived."""
    page = phone.page
    page.reload()
    wait_for(lambda: page.evaluate("window.owlia.status()") == "connected", what="the connection")
    card = page.locator(f"article[data-request={request_id}]")
    card.wait_for(timeout=15_000)
    return wait_for(lambda: must in card.inner_text() and card.inner_text(), 15, must)


def test_a_swap_reads_as_a_swap_with_its_slippage_bound_and_balance_changes(phone, swap_tier, market):  # noqa: F811
    tier, page = swap_tier, phone.page
    tusd = market["tokens"][0]
    payer = off_loop(tier.stack.funded_session_key)["address"]
    q = quote(tier.anvil.url, market, market["weth"], tusd["address"], AMOUNT)
    minimum = q - q // 200  # 0.5 % under the quote: within the policy's 1 %
    intent = {
        "chain_id": 31337,
        "to": market["router"],
        "value": str(AMOUNT),
        "data": "0x" + swap_data(market["weth"], tusd["address"], payer.lower(), AMOUNT, minimum).hex(),
    }
    bot = tier.bot_token()
    [pending] = run_async(tier.submit(intent, token=bot, reason="buy some TUSD"))
    assert pending["status"] == "pending_approval", pending

    text = card_text(phone, pending["request_id"], "your session key")
    eth_price, tusd_price = int(market["eth_price_usd"]), int(tusd["price_usd"])
    got = short_units(minimum, tusd["decimals"], tusd["symbol"])
    assert got != format_amount(minimum, tusd["decimals"], tusd["symbol"])  # 18 decimals, shortened
    short = to_checksum(payer.lower())
    card = page.locator(f"article[data-request={pending['request_id']}]")
    sentence = card.locator(".sentence").inner_text()
    assert sentence == (
        f"Swap 0.011 ETH ≈ {usd(AMOUNT, 18, eth_price)} for at least {got} ≈ "
        f"{usd(minimum, tusd['decimals'], tusd_price)} on Uniswap v3 (anvil (local dev)), "
        f"paid to your session key {short[:6]}…{short[-4:]}"
    ), sentence
    assert card.locator(".sentence").count() == 1, text  # no "Call a contract", no bare ETH payment
    assert "Call a contract" not in text and "Send 0.011 ETH" not in text, text
    slippage = card.locator(".slippage").inner_text()
    assert slippage == (
        "If the price moves, the swap fails rather than pay out less (your policy allows at most 1% slippage)."
    ), slippage
    changes = card.locator(".change-rows li").all_inner_texts()
    assert "−0.011 ETH" in changes, changes  # the main account pays (what the node says)
    [received] = [c for c in changes if c.endswith(f"{tusd['symbol']} (your session key)")]
    assert received.startswith("+") and len(received.split(" ")[0].partition(".")[2]) <= 6, changes
    assert "(what the node says)" in card.locator(".changes h3").inner_text()

    # the order on the first screen, the action bar on it
    page.evaluate("window.scrollTo(0, 0)")
    tops = [box(card.locator(s))["y"] for s in (".sentence", ".slippage", ".changes", ".fee", ".reasons")]
    assert tops == sorted(tops), tops
    bar = box(card.locator(".actionbar"))
    assert bar["y"] + bar["height"] <= SMALL["height"] + 0.5
    phone.shot("swap-card")
    assert_accessible(phone, "swap card")
    no_sideways_scroll(phone, "swap card")

    before = token_balance(tier.anvil.url, tusd["address"], payer)
    card.locator("button.approve").click()
    result = page.locator("#result")
    result.wait_for(timeout=30_000)
    assert result.locator("h2").inner_text() == "Approved and sent", result.inner_text()
    assert "Swap 0.011 ETH" in result.inner_text()
    run_async(wait_status(tier.stack, bot, pending["request_id"], {"confirmed"}, timeout=30))
    assert token_balance(tier.anvil.url, tusd["address"], payer) - before >= minimum
    activity = page.locator("#activity li", has_text="Swap 0.011 ETH")
    assert activity.count() >= 1 and "Uniswap v3" in activity.first.inner_text()


def test_a_wrap_reads_as_a_wrap_into_the_listed_token_named_from_the_policy(phone, swap_tier, market):  # noqa: F811
    tier, page = swap_tier, phone.page
    off_loop(tier.stack.funded_session_key)
    intent = {
        "chain_id": 31337,
        "to": market["weth"],
        "value": str(AMOUNT),
        "data": "0x" + selector("deposit()").hex(),
    }
    bot = tier.bot_token()
    [pending] = run_async(tier.submit(intent, token=bot, reason="wrap some ETH"))
    assert pending["status"] == "pending_approval", pending
    text = card_text(phone, pending["request_id"], "Wrap")
    card = page.locator(f"article[data-request={pending['request_id']}]")
    weth = to_checksum(market["weth"].lower())
    assert card.locator(".sentence").inner_text() == (
        f"Wrap 0.011 ETH ≈ {usd(AMOUNT, 18, int(market['eth_price_usd']))} into 0.011 WETH at WETH of uniswap-v3 "
        f"{weth[:6]}…{weth[-4:]} on anvil (local dev)"
    ), text
    assert "Call a contract" not in text and "NEW ADDRESS" not in text, text
    assert_accessible(phone, "wrap card")
    card.locator("button.deny").click()
    gone(phone, card)


def test_a_claim_reads_as_a_claim_from_the_named_distributor(browser, swap_tier, market, fresh_build):  # noqa: F811
    """The card for a claim the signer built (signer.wire.approval_request from a decoded claim and a
    policy that lists the distributor), rendered by the page's own card code."""
    import json

    from policies.decision import Decision, Outcome
    from policies.intent import Call, Claim, Decoded
    from policies.loader import parse_policy
    from signer.wire.approval_request import RequestBuilder
    from tests.companion.test_webapp import app_url

    tusd = market["tokens"][0]
    distributor = "0x" + "d1" * 20
    text = swap_policy(market, swap_tier.root).read_text() + (
        f'\nclaims:\n  distributors:\n    - {{chain: 31337, address: "{distributor}", '
        f'token: "{tusd["address"].lower()}", name: test-airdrop}}\n'
    )
    main = "0x" + "a1" * 20
    amount = 5 * 10 ** tusd["decimals"]
    claim = Claim(31337, distributor, 0, main, amount)
    decoded = Decoded(Call(31337, distributor, 0, b""), (claim,))
    decision = Decision(Outcome.ESCALATE, "source.skill", "a skill asked for it", ())
    body = RequestBuilder(parse_policy(text)).build(
        request_id="req_claim",
        kind="sign",
        decoded=decoded,
        summary="claim",
        decision=decision,
        agent_reason=None,
        tx=None,
        created_at=0.0,
        expires_at=4102444800.0,
    )
    kit = Phone.open(browser, viewport=SMALL)
    try:
        kit.page.goto(app_url(swap_tier) + "/app/")
        kit.page.evaluate((fresh_build / "testkit.js").read_text())
        kit.page.evaluate("document.querySelector('main').remove()")
        kit.page.evaluate("([t, m]) => owliaTestkit.renderCard(t, m)", [json.dumps(body), main])
        sentence = kit.page.locator("article.card .sentence").inner_text()
        short = to_checksum(distributor)
        mine = to_checksum(main)
        assert sentence == (
            f"Claim 5 {tusd['symbol']} ≈ {usd(amount, tusd['decimals'], int(tusd['price_usd']))} from test-airdrop "
            f"{short[:6]}…{short[-4:]} for your main account {mine[:6]}…{mine[-4:]} on anvil (local dev)"
        ), sentence
        assert_accessible(kit, "claim card")
    finally:
        kit.close()
