"""Driving the companion web app in real headless Chromium (Debian's `chromium`, Playwright for
Python, never `playwright install`), with a CDP virtual WebAuthn authenticator (PRF and user
verification on) standing in for Face ID. Every request and WebSocket frame the page sends is
recorded, so a test can show that no key material leaves it."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
PHONE = {"width": 390, "height": 844}
# The screenshots in docs/companion.md: rewritten only with OWLIA_SCREENSHOTS=1 (each run shows new
# addresses, so a plain test run would otherwise leave the tree changed); else taken to a temp dir.
DOC_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "companion"


def chromium_path() -> str:
    """Debian's chromium, installed by .ci/setup: a missing browser fails the tests, never skips them."""
    if not Path(CHROMIUM).is_file():
        found = shutil.which("chromium")
        if found is None:
            raise AssertionError("chromium is not installed: run `bash .ci/setup` (apt-get install chromium)")
        return found
    return CHROMIUM


def run_async(coro: Any) -> Any:
    """A coroutine on a loop of its own thread: the sync Playwright API owns this thread's loop."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def off_loop(fn: Any, *args: Any) -> Any:
    """A blocking call that runs asyncio inside (SignerStack.start, funded_session_key...) on a
    thread of its own, for the same reason as run_async."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


READ_IDB = """async () => {
  const db = await new Promise((ok, no) => { const r = indexedDB.open('owliabot-companion'); r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
  const out = {};
  for (const name of db.objectStoreNames) {
    out[name] = await new Promise((ok, no) => {
      const t = db.transaction(name).objectStore(name);
      const keys = t.getAllKeys(), vals = t.getAll();
      vals.onsuccess = () => ok(Object.fromEntries(keys.result.map((k, i) => [String(k), vals.result[i]])));
      vals.onerror = () => no(vals.error);
    });
  }
  db.close();
  return JSON.stringify(out);
}"""


@dataclass
class Phone:
    """One browser context (its own IndexedDB and passkeys) at phone size."""

    context: Any
    page: Any
    cdp: Any
    authenticator: str
    sent: list[tuple[str, str, bytes]] = field(default_factory=list)  # method, url, body
    frames: list[str] = field(default_factory=list)  # WebSocket frames the page sent
    received: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)

    @classmethod
    def open(
        cls,
        browser: Any,
        *,
        prf: bool = True,
        viewport: dict[str, int] | None = None,
        color_scheme: str = "light",
    ) -> Phone:
        context = browser.new_context(
            viewport=viewport or PHONE,
            is_mobile=True,
            has_touch=True,
            accept_downloads=True,
            device_scale_factor=1,
            color_scheme=color_scheme,
        )
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("WebAuthn.enable", {"enableUI": False})
        auth = cdp.send(
            "WebAuthn.addVirtualAuthenticator",
            {
                "options": {
                    "protocol": "ctap2",
                    "ctap2Version": "ctap2_1",
                    "transport": "internal",
                    "hasResidentKey": True,
                    "hasUserVerification": True,
                    "isUserVerified": True,
                    "hasPrf": prf,
                    "automaticPresenceSimulation": True,
                }
            },
        )
        phone = cls(context, page, cdp, auth["authenticatorId"])
        context.on("request", lambda r: phone.sent.append((r.method, r.url, r.post_data_buffer or b"")))
        page.on("websocket", phone._watch)
        page.on("console", lambda m: phone.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: phone.console.append(f"pageerror: {e}"))
        return phone

    def _watch(self, ws: Any) -> None:
        ws.on(
            "framesent",
            lambda payload: self.frames.append(payload if isinstance(payload, str) else payload.decode()),
        )
        ws.on(
            "framereceived",
            lambda payload: self.received.append(payload if isinstance(payload, str) else "<bin>"),
        )

    def idb(self) -> dict[str, Any]:
        return json.loads(self.page.evaluate(READ_IDB))

    def vault(self) -> dict[str, Any]:
        return self.idb()["kv"]["vault"]

    def answers(self) -> list[dict[str, Any]]:
        """Every approvals.answer the page sent."""
        calls = [json.loads(f) for f in self.frames if '"approvals.answer"' in f]
        return [c["params"] for c in calls if c.get("method") == "approvals.answer"]

    def everything_sent(self) -> str:
        """Every byte the page sent anywhere: HTTP bodies, URLs and WebSocket frames."""
        parts = [f"{m} {u} {b.decode('latin-1')}" for m, u, b in self.sent] + self.frames
        return "\n".join(parts)

    def shot(self, name: str) -> None:
        folder = (
            DOC_SHOTS
            if os.environ.get("OWLIA_SCREENSHOTS") == "1"
            else Path(tempfile.gettempdir()) / "owlia-shots"
        )
        folder.mkdir(exist_ok=True)
        self.page.screenshot(path=str(folder / f"{name}.png"))

    def error_text(self) -> str:
        """A refusal, where the page shows it: in the card's action bar, or the page's error line."""
        shown = []
        for box in self.page.locator("#error, .card-error").all():
            if box.is_visible():
                shown.append(box.text_content() or "")
        return " / ".join(shown)

    def close(self) -> None:
        self.context.close()


def key_forms(secret: bytes) -> list[str]:
    """Ways a 32-byte key could be written into a request: hex either case, base64, decimal bytes."""
    hexed = secret.hex()
    return [
        hexed,
        hexed.upper(),
        base64.b64encode(secret).decode(),
        base64.urlsafe_b64encode(secret).decode().rstrip("="),
        ",".join(str(b) for b in secret[:8]),
    ]


def pair_link_from_cli(output: str) -> str:
    match = re.search(r"owlia companion link '([^']+)'", output)
    assert match, output
    return match.group(1)
