"""Companion web app benchmark; prints one JSON object. Run: .venv/bin/python bench/webapp_bench.py

Escalation to the card visible: from the bot's `sign.request` for an over-limit transfer (signer
process -> bridge process -> the page's WebSocket) to the approval card in the DOM of the web app
in headless Chromium (Debian's `chromium`), after the page verified the signer's signature and
recomputed the request hash; on loopback. Target p50 <= 100 ms. The page stamps each card when a
MutationObserver sees it (Date.now(), the same clock as time.time() here); each card is then
denied in the page (not measured; the bridge allows a device one answer a second after 10) so the
screen holds one card at a time.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bridge_bench import FRIEND, MAIN_KEY, OVER_LIMIT, Stack, _ms

from bench import results
from companion_bridge.companion.pairing import pair_link
from tests.companion.webapp_support import (
    CHROMIUM_ARGS,
    Phone,
    chromium_path,
    off_loop,
    run_async,
)

OBSERVE = """() => {
  window.__cards = {};
  new MutationObserver(() => {
    for (const card of document.querySelectorAll('article[data-request]')) {
      const id = card.dataset.request;
      if (!(id in window.__cards)) window.__cards[id] = Date.now();
    }
  }).observe(document.body, { childList: true, subtree: true });
}"""


def main(n: int = 60, warmup: int = 10, args: argparse.Namespace | None = None) -> None:
    from playwright.sync_api import sync_playwright

    stack = run_async_stack()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            phone = Phone.open(browser, prf=False)
            page = phone.page
            pairing = run_async(stack.signer.call(stack.admin, "companion.pair_begin", {"name": "bench"}))
            url = f"http://localhost:{stack.port}"
            page.goto(pair_link(url, pairing["pairing_id"], pairing["code"], pairing["signer_key"]))
            page.check("input[name=protect][value=passphrase]")
            page.fill("#seal-pass", "bench passphrase")
            page.fill("#import-text", MAIN_KEY.hex())
            page.click("#import-key")
            page.fill("#backup-pass", "bench backup 1")
            page.fill("#backup-pass2", "bench backup 1")
            page.fill("#unlock-pass", "bench passphrase")
            with page.expect_download(timeout=180_000):
                page.click("#backup")
            page.click("#pair")
            poll(lambda: page.evaluate("window.owlia.status()") == "connected", 30)
            page.evaluate(OBSERVE)
            samples = []
            for i in range(n + warmup):
                bot = off_loop(stack.signer.client_token, f"bench{i}")
                t0 = time.time()
                pending = run_async(_sign(stack, bot))
                rid = pending.request_id
                shown = poll(lambda: page.evaluate("(id) => window.__cards[id]", rid), 10, 0.002) / 1000
                if i >= warmup:
                    samples.append(shown - t0)
                deny(page, rid)
            phone.close()
            browser.close()
        report = {
            "machine": {
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
            },
            "date": time.strftime("%Y-%m-%d"),
            "escalation_to_card_visible": _ms(samples),
            "target_p50_ms": 100,
        }
    finally:
        stack.close()
    results.emit("webapp", report, args or argparse.Namespace())


def deny(page, rid: str) -> None:
    """Deny in the page; the bridge allows a device 10 answers, then one a second: retry after it.
    A refusal shows in the card's own error line (or the page's, for one without a card)."""
    card = page.locator(f"article[data-request={rid}]")
    refused = card.locator(".card-error")
    for _ in range(10):
        card.locator("button.deny").click()
        if (
            poll(lambda: card.count() == 0 or refused.is_visible() or page.locator("#error").is_visible(), 10)
            and card.count() == 0
        ):
            return
        time.sleep(1.1)
    raise RuntimeError("could not deny " + rid)


def poll(check, timeout: float, every: float = 0.05):
    """page.wait_for_function evaluates a string, which the app's CSP forbids: poll instead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError("the page did not get there")


def run_async_stack() -> Stack:
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # Stack() runs asyncio inside
        return pool.submit(Stack).result()


async def _sign(stack: Stack, token: str) -> dict:
    from signer.wire.client import SignerClient

    async with SignerClient(stack.signer.socket, token) as bot:
        return await bot.sign({"chain_id": 31337, "to": FRIEND, "value": OVER_LIMIT})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=60, help="cards timed")
    parser.add_argument("--warmup", type=int, default=10, help="cards before those, not timed")
    results.add_arguments(parser)
    args = parser.parse_args()
    main(args.n, args.warmup, args)
