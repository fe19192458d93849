"""The phone's home screen reads money like a wallet: the main account's balance, each session key's
balance against its cap, and what the agent spent in each of the policy's windows, in units and
dollars at the policy's price. In real headless Chromium with a virtual passkey, against a real
signer (signer/tier1/home.py behind `approvals.home`), bridge and anvil; the numbers are checked against
the chain and the ledger. Also: only a bridge token may read it, and axe stays clean.
"""

from __future__ import annotations

import pytest

from policies.kernel.addresses import to_checksum
from policies.units import format_amount
from signer.wire.exchange import SignerError
from tests.companion.conftest import transfer, wait_status
from tests.companion.test_webapp import (  # noqa: F401 - `browser` and `fresh_build` are fixtures
    browser,
    fresh_build,
    gone,
    wait_for,
)
from tests.companion.test_webapp_screens import (  # noqa: F401 - `phone` and `priced_tier` are fixtures
    assert_accessible,
    no_sideways_scroll,
    phone,
    priced_tier,
)
from tests.companion.webapp_support import off_loop, run_async
from tests.conftest import FRIEND, balance

pytestmark = [pytest.mark.chain]
SPENT = 3 * 10**15  # 0.003 ETH: within the dev policy's limits, signed by the session key alone
PRICE = 3050  # dollars per ETH in the priced policy


def eth(wei: int) -> str:
    return format_amount(wei, 18, "ETH")


def short_units(amount: int, decimals: int, symbol: str) -> str:
    """home.js roundUnits rounding down (what the owner holds, the least they get): exact up to 6
    decimals; else 4 decimals from 1 unit up, 4 significant digits below it."""
    exact = format_amount(amount, decimals, symbol)
    fraction = exact.split(" ")[0].partition(".")[2]
    if len(fraction) <= 6:
        return exact
    zeros = 0 if amount >= 10**decimals else len(fraction) - len(fraction.lstrip("0"))
    step = 10 ** (decimals - min(decimals, zeros + 4))
    return format_amount(amount // step * step, decimals, symbol)


def usd(wei: int) -> str:
    """The page's rounding (present.js dollars): cents below $100, whole dollars from $100."""
    cents = wei * PRICE * 100 // 10**18
    whole, rest = divmod(cents, 100)
    return f"${whole:,}" if whole >= 100 or rest == 0 else f"${whole:,}.{rest:02d}"


def connected_home(phone) -> None:
    phone.page.reload()
    wait_for(lambda: phone.page.evaluate("window.owlia.status()") == "connected", what="the connection")
    phone.page.locator("#refresh-home").wait_for(timeout=15_000)


def test_home_shows_balances_against_caps_and_what_the_agent_spent_today(phone, priced_tier):
    page, stack = phone.page, priced_tier.stack
    key = off_loop(stack.funded_session_key)
    bot = priced_tier.bot_token()
    [sent] = run_async(priced_tier.submit(transfer(FRIEND, SPENT), token=bot))
    assert sent["status"] == "signed", sent
    run_async(wait_status(stack, bot, sent["request_id"], {"confirmed"}))

    connected_home(phone)
    money = page.locator("#home-money")
    main = phone.vault()["address"]
    main_line = money.locator("li.balance.main").inner_text()
    main_wei = balance(priced_tier.anvil, main)
    assert main_line == f"Main account on anvil (local dev) {eth(main_wei)} ≈ {usd(main_wei)}", main_line

    key_line = money.locator(f"li.balance.session-key[data-key={key['key_id']}]").inner_text()
    key_wei, cap = balance(priced_tier.anvil, key["address"]), int(key["balance_cap"])
    checksummed = to_checksum(key["address"].lower())
    assert key_line.startswith(f"Session key {checksummed[:6]}…{checksummed[-4:]} on anvil (local dev) "), (
        key_line
    )
    shown = short_units(key_wei, 18, "ETH")
    assert shown != eth(key_wei)  # the gas it spent leaves a long amount: shortened
    assert f"{shown} ≈ {usd(key_wei)} of its {eth(cap)} ≈ {usd(cap)} cap" in key_line, key_line

    today = money.locator("li.spent[data-window='24h']").inner_text()
    assert today == (
        f"Spent today (the last 24 hours) on anvil (local dev): {eth(SPENT)} ≈ {usd(SPENT)} "
        f"of 0.05 ETH ≈ {usd(5 * 10**16)}"
    ), today
    week = money.locator("li.spent[data-window='7d']").inner_text()
    assert week.startswith(f"Spent this week (the last 7 days) on anvil (local dev): {eth(SPENT)}"), week
    assert "Read by your signer at" in money.inner_text()
    for jargon in ("wei", "base units", "sk_", "native"):
        assert jargon not in money.inner_text(), (jargon, money.inner_text())

    # "Top up" on the key's line fills the top-up form with that key; the amount is typed in ETH
    money.locator(f"li[data-key={key['key_id']}] button.topup-this").click()
    assert page.input_value("#topup-key") == key["key_id"]
    assert page.evaluate("document.activeElement.id") == "topup-amount"
    assert page.locator("label[for=topup-amount]").inner_text() == "Amount in ETH"
    page.fill("#topup-amount", "0.001")
    page.click("#topup")
    card = page.locator("article.card", has_text=f"{checksummed[:6]}…{checksummed[-4:]}")
    card.wait_for(timeout=15_000)  # the top-up asks the phone, in ETH
    assert "Send 0.001 ETH ≈ $3.05 to" in card.locator(".sentence").inner_text()
    row = page.locator("#activity li", has_text="Top up 0.001 ETH").first.inner_text()
    assert f"to session key {checksummed[:6]}…{checksummed[-4:]}" in row and "sk_" not in row, row
    card.locator("button.deny").click()
    gone(phone, card)

    money.evaluate("(e) => e.scrollIntoView({block: 'start'})")
    phone.shot("home")
    assert_accessible(phone, "home balances")
    no_sideways_scroll(phone, "home balances")

    # Offline, the app opens to the last reading and says it is the last one.
    phone.context.set_offline(True)
    try:
        page.reload()
        page.locator("#home-money li.spent").first.wait_for(timeout=15_000)
        assert "Last read by your signer at" in page.locator("#home-money").inner_text()
        assert page.locator("#home-money li.spent[data-window='24h']").inner_text() == today
    finally:
        phone.context.set_offline(False)
    wait_for(lambda: page.evaluate("window.owlia.status()") == "connected", 30, "the reconnect")


def test_spending_the_phone_shows_moves_with_the_ledger(phone, priced_tier):
    """A second spend shows at the next reading: the page words the ledger, it does not keep a count."""
    bot = priced_tier.bot_token()
    [sent] = run_async(priced_tier.submit(transfer(FRIEND, SPENT), token=bot))
    assert sent["status"] == "signed", sent
    phone.page.click("#refresh-home")
    line = phone.page.locator("#home-money li.spent[data-window='24h']")
    wait_for(lambda: f": {eth(2 * SPENT)} ≈" in line.inner_text(), 15, "the second spend")


def test_an_agent_token_cannot_read_the_home_summary(priced_tier):
    """The balances and spending are the owner's: a `sign` or `read` client (the agent) is refused."""
    from signer.wire.protocol import Scope

    stack = priced_tier.stack
    for token in (priced_tier.bot_token(), stack.client_token("reader-home", Scope.READ)):
        with pytest.raises(SignerError, match="needs the 'bridge' scope"):
            off_loop(stack.call_sync, token, "approvals.home")


def test_shortened_amounts_never_favour_the_owner(browser, priced_tier, fresh_build):  # noqa: F811
    """Property: what the page shows rounded down is at most the exact amount and rounded up at least
    it, within one unit of the last shown digit, short (4 decimals from 1 unit up, 4 significant
    digits below); amounts of 6 decimals or fewer exact."""
    from decimal import Decimal, localcontext

    from hypothesis import given, settings, strategies as st

    from tests.companion.test_webapp import app_url
    from tests.companion.webapp_support import Phone

    kit = Phone.open(browser)
    try:
        kit.page.goto(app_url(priced_tier) + "/app/")
        kit.page.evaluate((fresh_build / "testkit.js").read_text())

        @settings(max_examples=40, deadline=None)
        @given(
            st.lists(
                st.tuples(st.integers(0, 10**30), st.sampled_from([0, 2, 6, 8, 18])), min_size=1, max_size=40
            )
        )
        def check(items):
            shown = kit.page.evaluate(
                "(xs) => owliaTestkit.roundMany(xs)",
                [[str(a), d, way] for a, d in items for way in ("down", "up")],
            )
            with localcontext() as exact_enough:
                exact_enough.prec = 100  # the default 28 digits would round 10**30
                compare(items, shown)

        def compare(items, shown):
            for (amount, decimals), down, up in zip(items, shown[0::2], shown[1::2]):
                exact = Decimal(amount) / (Decimal(10) ** decimals)
                assert Decimal(down) <= exact <= Decimal(up), (amount, decimals, down, up)
                for shown_text in (down, up):  # 4 decimals from 1 unit up, else 4 significant digits
                    fraction = shown_text.partition(".")[2]
                    assert len(fraction) <= 6 or len(fraction.lstrip("0")) <= 4, (
                        amount,
                        decimals,
                        shown_text,
                    )
                    if exact >= 1 and len(fraction) > 6:
                        raise AssertionError((amount, decimals, shown_text))
                places = max(len(down.partition(".")[2]), len(up.partition(".")[2]))
                assert Decimal(up) - Decimal(down) <= Decimal(1) / (
                    Decimal(10) ** places
                ) or exact == Decimal(down)
                if len(format_amount(amount, decimals, "X").split(" ")[0].partition(".")[2]) <= 6:
                    assert Decimal(down) == exact == Decimal(up)

        check()
    finally:
        kit.close()


def test_a_bridge_that_alters_the_balances_is_caught_and_the_signed_reading_stays(
    phone, priced_tier, monkeypatch
):
    """The signer signs each reading (HOME_VIEW_DOMAIN): a bridge that shows the owner a fatter
    balance or less spending than there is gets an alarm on the phone, and the figures it altered
    are never shown; the last signed reading stays, marked as not live."""
    connected_home(phone)
    page = phone.page
    honest_balance = page.locator("#home-money ul.balances").inner_text()
    bridge = priced_tier.bridge.bridge
    honest = bridge._call

    async def altering(device_id, message):
        reply = await honest(device_id, message)
        if message.get("method") == "approvals.home" and reply.get("ok"):
            for row in reply["result"]["balances"]:
                row["amount"], row["amount_base_units"] = "999", str(999 * 10**18)
            reply["result"]["spent"] = []
        return reply

    monkeypatch.setattr(bridge, "_call", altering)
    page.click("#refresh-home")
    alarm = page.locator("#home-problem")
    alarm.wait_for(timeout=15_000)
    assert alarm.inner_text().startswith("A new reading of your balances is not signed by your signer")
    shown = page.locator("#home-money ul.balances").inner_text()
    assert "999" not in shown and shown == honest_balance
    assert page.locator("#balances-note").inner_text().startswith("Last read by your signer")
    monkeypatch.setattr(bridge, "_call", honest)  # the bridge behaves again: the alarm goes
    page.click("#refresh-home")
    wait_for(lambda: page.locator("#home-problem").count() == 0, 15, "the alarm to clear")
