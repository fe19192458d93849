"""Tier 3 on the phone's home screen and "Freeze Tier 3" from the phone alone, in real headless
Chromium with a virtual passkey, against a real signer, bridge and anvil with the Delegation
Framework deployed from npm bytecode.

The home screen says what the live grant still allows this period (the signer reads the enforcers);
the freeze is the same on-chain act as `owlia wallet freeze` (a 7702 authorization to the zero
address with incrementNonce), sent by the page to the owner's node with the bridge stopped, and the
session key can spend nothing through Tier 3 afterwards.
"""

from __future__ import annotations

import pytest
from eth_utils import keccak

from bot.devchain import rpc
from policies.kernel.addresses import to_checksum
from tests.companion.test_webapp import (  # noqa: F401 - `browser` and `fresh_build` are fixtures
    browser,
    fresh_build,
    wait_for,
)
from tests.companion.test_webapp_grants import (  # noqa: F401 - `grant_tier` and `phone` are fixtures
    CENT,
    fill_chain,
    grant_tier,
    phone,
    result_of,
    send,
    signer_call,
)
from tests.companion.test_webapp_screens import assert_accessible, no_sideways_scroll
from tests.companion.webapp_support import off_loop
from tests.conftest import FRIEND, balance, wait_receipt

pytestmark = [pytest.mark.chain]


def revocation_nonce(tier, account: str) -> int:
    contracts = tier.anvil.contracts
    data = (
        "0x"
        + keccak(text="currentNonce(address,address)")[:4].hex()
        + "00" * 12
        + contracts["manager"][2:].lower()
        + "00" * 12
        + account[2:].lower()
    )
    return int(
        rpc(
            tier.anvil.url,
            "eth_call",
            [{"to": contracts["enforcers"]["NonceEnforcer"], "data": data}, "latest"],
        ),
        16,
    )


def test_home_says_what_tier3_still_allows_this_period(phone, grant_tier):
    tier, page = grant_tier, phone.page
    off_loop(tier.stack.funded_session_key)
    page.reload()
    wait_for(lambda: page.evaluate("window.owlia.status()") == "connected", what="the page to connect")
    fill_chain(phone, tier)
    page.click("#g3-authorize")
    assert result_of(phone, ("Authorized", "Not authorized")).startswith("Authorized"), phone.error_text()
    page.click("#g3-offer-ask")
    page.wait_for_selector("#g3-sign", timeout=30_000)
    page.click("#g3-sign")
    assert result_of(phone, ("Granted", "Grant refused")).startswith("Granted"), phone.console[-5:]
    ok = send(tier, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(tier.anvil, ok["tx_hash"])["status"] == "0x1", ok

    [grant] = signer_call(tier, tier.admin, "tier3.status")["grants"]
    [native] = [lane for lane in grant["lanes"] if lane["asset"] == "native"]
    assert native["left_words"] and int(native["left_in_period"]) == int(native["period_amount"]) - CENT
    page.click("#refresh-home")
    line = page.locator("#home-money li.tier3-left", has_text="still allows")
    wait_for(lambda: line.count() >= 1, 15, "the Tier 3 line")
    text = line.first.inner_text()
    assert text.startswith(
        f"Tier 3 on anvil (local dev): still allows {native['left_words']} this period (until "
    ), text
    assert native["words"] in text
    page.locator("#home-money").evaluate("(e) => e.scrollIntoView({block: 'start'})")
    assert_accessible(phone, "home with Tier 3")


def test_freeze_tier3_from_the_phone_with_the_bridge_gone(phone, grant_tier):
    tier, page, chain = grant_tier, phone.page, grant_tier.anvil
    main = phone.vault()["address"]
    before = revocation_nonce(tier, main)
    assert rpc(chain.url, "eth_getCode", [main, "latest"]) != "0x"  # delegated (the test before)

    tier.bridge.stop()  # the signer's host is out of reach: the phone talks to the node alone
    wait_for(lambda: page.evaluate("window.owlia.status()") == "offline", 30, "the page to notice")
    # a node on another chain than the one named: refused before anything is signed
    fill_chain(phone, tier)
    page.fill("#t3-chain", "8453")
    sent_before = len(phone.sent)
    page.click("#t3-freeze")
    result = page.locator("#result")
    result.wait_for(timeout=30_000)
    assert result.locator("h2").inner_text() == "Tier 3 not frozen", result.inner_text()
    assert "is chain 31337, not 8453: nothing was signed" in result.inner_text()
    assert not any(b"eth_sendRawTransaction" in body for _, _, body in phone.sent[sent_before:])
    assert revocation_nonce(tier, main) == before
    page.click("#result-done")

    fill_chain(phone, tier)
    sent_before = len(phone.sent)
    page.click("#t3-freeze")
    result = page.locator("#result")
    result.wait_for(timeout=60_000)
    assert result.locator("h2").inner_text() == "Tier 3 frozen", result.inner_text()
    words = result.inner_text()
    checksummed = to_checksum(main.lower())
    short = f"{checksummed[:6]}…{checksummed[-4:]}"
    assert (
        f"Your main account {short} on anvil (local dev) is a plain account again: no session key can "
        "spend from it through Tier 3." in words
    ), words
    assert f"revocation nonce {before} → {before + 1}" in words and "Your funds did not move" in words, words
    for jargon in ("7702", "incrementNonce", "wei"):
        assert jargon not in words, (jargon, words)

    # on chain: no code, the revocation nonce moved; only the node was spoken to, and no key left the page
    assert rpc(chain.url, "eth_getCode", [main, "latest"]) in ("0x", "")
    assert revocation_nonce(tier, main) == before + 1
    bridge_port = f":{tier.bridge.options.port}/"
    to_bridge = [url for _, url, _ in phone.sent[sent_before:] if bridge_port in url]
    assert all("/v1/auth/" in url for url in to_bridge), to_bridge  # at most the page's reconnect attempts
    to_node = [body for _, url, body in phone.sent[sent_before:] if url.startswith(chain.url)]
    assert any(b'"eth_sendRawTransaction"' in body for body in to_node)
    assert phone.main_key.hex() not in phone.everything_sent()
    assert all(r["ended"] for r in phone.idb()["kv"]["tier3_grants"])
    # the last reading's Tier 3 line (offline: not read again) no longer says what it still allows
    tier3_line = page.locator("#home-money li.tier3-left").inner_text()
    assert tier3_line.startswith("Tier 3 on anvil (local dev): ended on chain (frozen from this phone"), (
        tier3_line
    )
    activity = page.locator("#activity li", has_text="Froze Tier 3")
    assert activity.count() == 1 and "Tier 3 frozen" in activity.inner_text()

    # the session key can no longer spend from the main account
    friend0 = balance(chain, FRIEND)
    refused = send(tier, FRIEND, CENT)
    assert refused["status"] != "signed", refused
    assert balance(chain, FRIEND) == friend0

    phone.shot("tier3-frozen")
    assert_accessible(phone, "Tier 3 frozen")
    no_sideways_scroll(phone, "Tier 3 frozen")
