"""The companion web app end to end, in real headless Chromium against a real signer, bridge and anvil.

The page speaks the CLI companion's protocol byte for byte (pairing proof, login, signed requests,
answers, nonce quotes); its transaction signing, canonical JSON and keystores are compared with
eth-account and Python's json on vectors made here. The main key is guarded by a virtual passkey
(CDP WebAuthn, PRF + user verification) or a passphrase, and never leaves the page.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from eth_account import Account
from hypothesis import given, settings, strategies as st

from companion_bridge import webapp
from policies.kernel.addresses import to_checksum
from tests.bot.agent.conftest import llm  # noqa: F401 - fixture
from tests.companion.conftest import Tier1, fund, start_bridge, transfer, wait_status
from tests.companion.webapp_support import (
    CHROMIUM_ARGS,
    Phone,
    chromium_path,
    key_forms,
    off_loop,
    pair_link_from_cli,
    run_async,
)
from tests.conftest import FRIEND, STRANGER, SignerStack, balance

pytestmark = [pytest.mark.chain]
OVER_LIMIT = 2 * 10**16  # 0.02 ETH: above the dev policy's per-transaction limit
BACKUP_PASS = "backup passphrase 1"
PHONE_PASS = "phone passphrase 22"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def web_tier(tmp_path_factory, anvil):
    root = tmp_path_factory.mktemp("web")
    stack = off_loop(lambda: SignerStack(root, anvil.url).start())
    bridge = off_loop(lambda: start_bridge(stack, root / "bridge", push_allow_loopback_http=True))
    tier = Tier1(stack, bridge, root, anvil)
    yield tier
    tier.bridge.stop()
    off_loop(stack.close)


def app_url(tier: Tier1) -> str:
    # localhost, not 127.0.0.1: a passkey's relying party must be a domain (and localhost is a secure context)
    return f"http://localhost:{tier.bridge.options.port}"


def pairing_link(tier: Tier1, name: str = "phone") -> str:
    """The link `owlia companion pair` prints and puts in its QR."""
    out = tier.stack.owlia("companion", "pair", "--name", name, "--bridge", app_url(tier))
    assert out.returncode == 0, out.stderr
    link = pair_link_from_cli(out.stdout)
    assert link.startswith(app_url(tier) + "/app/#") and "code=" in link.split("#", 1)[1]
    return link


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def gone(phone: Phone, card, timeout: float = 30.0) -> None:
    """The card leaves once the answer is accepted; a refusal shows instead (and fails the test)."""
    wait_for(lambda: card.count() == 0 or phone.error_text(), timeout, "the answer")
    assert card.count() == 0, f"{phone.error_text()} / {phone.console[-5:]}"


def journal_entry(phone: Phone, request_id: str) -> dict:
    [entry] = [e for e in phone.idb()["kv"].get("journal", []) if e["request_id"] == request_id]
    return entry


def set_up_key(
    phone: Phone, *, passphrase: str | None = None, import_text: str | None = None, import_pass: str = ""
) -> None:
    page = phone.page
    if passphrase is not None:
        page.check("input[name=protect][value=passphrase]")
        page.fill("#seal-pass", passphrase)
    if import_text is None:
        page.click("#create-key")
    else:
        page.fill("#import-text", import_text)
        page.fill("#import-pass", import_pass)
        page.click("#import-key")
    page.wait_for_selector("#backup", timeout=60_000)


def back_up(phone: Phone, *, unlock: str = "") -> dict:
    page = phone.page
    page.fill("#backup-pass", BACKUP_PASS)
    page.fill("#backup-pass2", BACKUP_PASS)
    if unlock:
        page.fill("#unlock-pass", unlock)
    with page.expect_download(timeout=120_000) as download:
        page.click("#backup")
    return json.loads(Path(download.value.path()).read_text())


def pair(phone: Phone, name: str) -> None:
    page = phone.page
    page.wait_for_selector("#pair")
    page.fill("#device-name", name)
    page.click("#pair")
    wait_for(lambda: page.evaluate("window.owlia.status()") == "connected", what="the page to connect")


@pytest.fixture(scope="module")
def phone_a(browser, web_tier):
    """Paired by opening the CLI's link; a new key behind a passkey, backed up; main account funded."""
    phone = Phone.open(browser)
    phone.page.goto(pairing_link(web_tier))
    assert "#" not in phone.page.url  # the code leaves the address bar at once
    phone.page.wait_for_selector("#create-key")
    phone.shot("setup")
    set_up_key(phone)
    vault = phone.vault()
    assert vault["kind"] == "passkey" and vault["backed_up"] is False
    keystore = back_up(phone)
    phone.main_key = bytes(Account.decrypt(keystore, BACKUP_PASS))  # eth-account reads the page's backup
    assert Account.from_key(phone.main_key).address == vault["address"]
    assert keystore["crypto"]["kdfparams"]["n"] == 2**18
    phone.shot("pairing")
    pair(phone, "phone-a")
    fund(web_tier.anvil, vault["address"], 10**18)
    yield phone
    phone.close()


def test_the_app_is_served_by_the_bridge_with_a_strict_policy(web_tier):
    base = app_url(web_tier)
    for name in ("", "app.js", "app.css", "sw.js", "manifest.webmanifest", "icon-192.png"):
        with urllib.request.urlopen(f"{base}/app/{name}") as resp:
            assert resp.status == 200 and resp.headers["Content-Security-Policy"] == webapp.CSP
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
            body = resp.read()
            if name == "":
                assert b'<script type="module" src="/app/app.js">' in body and b"<script>" not in body
    assert (
        "connect-src 'self'" in webapp.CSP
        and "script-src 'self';" in webapp.CSP
        and "unsafe" not in webapp.CSP
    )
    for bad in ("testkit.js", "..%2Fdist%2Ftestkit.js", "..%2F__init__.py", "src%2Fmain.js"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}/app/{bad}")
        assert err.value.code == 404


@pytest.fixture(scope="module")
def fresh_build(tmp_path_factory) -> Path:
    """The app built now from src/ with the pinned esbuild and libraries (node_modules, from .ci/setup)."""
    out = tmp_path_factory.mktemp("build")
    done = subprocess.run(
        ["node", str(webapp.HERE / "build.mjs"), str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"the web app does not build (run `npm ci`): {done.stderr}"
    return out


def test_the_committed_bundle_is_exactly_what_the_sources_build(fresh_build):
    assert (fresh_build / "app.js").read_bytes() == webapp.BUNDLE.read_bytes(), (
        "companion_bridge/webapp/static/app.js is stale: run `npm run build:companion` and commit it"
    )
    assert webapp.BUNDLE.stat().st_size < 400_000  # small enough to read


def test_signing_json_and_keystores_in_the_page_are_byte_identical_to_python(browser, web_tier, fresh_build):
    phone = Phone.open(browser)
    try:
        phone.page.goto(app_url(web_tier) + "/app/")
        phone.page.evaluate((fresh_build / "testkit.js").read_text())
        kit = "window.owliaTestkit"
        rng = secrets.SystemRandom()
        for i in range(25):
            key = secrets.token_bytes(32)
            tx = {
                "type": 2,
                "chainId": rng.choice([1, 10, 31337, 8453, 2**40 + 7]),
                "nonce": rng.choice([0, 1, 127, 128, 2**32, rng.randrange(2**63)]),
                "maxPriorityFeePerGas": rng.randrange(0, 10**11),
                "maxFeePerGas": rng.randrange(10**9, 10**13),
                "gas": rng.choice([21000, rng.randrange(21000, 30_000_000)]),
                "to": Account.create().address,
                "value": rng.choice([0, 1, 55, 2**255 + 3, rng.randrange(10**24)]),
                "data": "0x" + secrets.token_bytes(rng.choice([0, 1, 4, 55, 56, 300])).hex(),
                "accessList": [],
            }
            expected = Account.sign_transaction(tx, key)
            as_text = {k: (str(v) if isinstance(v, int) else v) for k, v in tx.items()}
            got = phone.page.evaluate(f"([tx, k]) => {kit}.signEip1559(tx, k)", [as_text, key.hex()])
            assert got["raw"] == "0x" + expected.raw_transaction.hex(), i
            assert got["hash"] == "0x" + expected.hash.hex()
            assert (
                phone.page.evaluate(f"(k) => {kit}.addressOf(k)", key.hex()) == Account.from_key(key).address
            )

        from signer.wire.approval_request import request_hash
        from signer.wire.messages import signed_message

        samples = [
            {"a": 1764129785.0, "b": 0.1, "c": 1e-7, "d": 1.5e16, "e": 2**70, "f": -3, "g": True, "h": None},
            {
                "s": 'caf\u00e9 \u202e\u200b \x1b[2A "q" \\ \n\t\x7f \U0001f600',
                "nested": [[], {}, [1, [2.25]]],
            },
            {"z": "1", "A": 2, "_": [0.30000000000000004, 123456789.12345679]},
        ]
        for body in samples:
            text = json.dumps(body)
            assert phone.page.evaluate(f"(t) => {kit}.requestHash(t)", text) == request_hash(body)
            assert (
                phone.page.evaluate(f"(t) => {kit}.signedMessage('d', t)", text)
                == signed_message("d", body).decode()
            )

        key = secrets.token_bytes(32)
        ours = phone.page.evaluate(f"([k, p]) => {kit}.keystore(k, p, 1024)", [key.hex(), "pass word"])
        assert bytes(Account.decrypt(json.loads(ours), "pass word")) == key
        for kdf in ("scrypt", "pbkdf2"):
            theirs = json.dumps(Account.encrypt(key, "pass word", kdf=kdf, iterations=1024))
            assert (
                phone.page.evaluate(f"([j, p]) => {kit}.fromKeystore(j, p)", [theirs, "pass word"])
                == key.hex()
            )
        Account.enable_unaudited_hdwallet_features()
        phrase = "test test test test test test test test test test test junk"
        expected = Account.from_mnemonic(phrase, account_path="m/44'/60'/0'/0/0").key.hex()
        assert phone.page.evaluate(f"(p) => {kit}.fromPhrase(p)", phrase) == expected.removeprefix("0x")
    finally:
        phone.close()


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def test_canonical_json_in_the_page_matches_python_on_any_value(browser, web_tier, fresh_build):
    """The request hash and every signed message depend on byte-identical canonical JSON: checked on
    arbitrary values (floats, big integers, any text) in one batch through the page."""
    from signer.wire.approval_request import request_hash
    from signer.wire.messages import signed_message

    bodies = []

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=5))
    def collect(body):
        bodies.append(body)

    collect()
    phone = Phone.open(browser)
    try:
        phone.page.goto(app_url(web_tier) + "/app/")
        phone.page.evaluate((fresh_build / "testkit.js").read_text())
        texts = [json.dumps(b) for b in bodies]
        got = phone.page.evaluate(
            "(ts) => ts.map((t) => [owliaTestkit.requestHash(t), owliaTestkit.signedMessage('d', t)])", texts
        )
        for body, (digest, message) in zip(bodies, got):
            assert digest == request_hash(body), body
            assert message == signed_message("d", body).decode(), body
    finally:
        phone.close()


CHAINS = (1, 31337)


@st.composite
def journal_ops(draw):
    """A random history: approvals journaled (some at the same nonce, some without a fresh quote),
    and quotes arriving in any order (replays, other accounts, reorgs, stale or fresh by `now`)."""
    ops, clock = [], 1_000_000.0
    for i in range(draw(st.integers(1, 40))):
        clock += draw(st.sampled_from([0.0, 1.0, 50.0, 130.0, 400.0, 700.0]))
        if draw(st.integers(0, 2)) == 0:
            ops.append(
                {
                    "op": "admit",
                    "entry": {
                        "request_id": f"req_{draw(st.integers(0, 5)):032x}",
                        "chain_id": draw(st.sampled_from(CHAINS)),
                        "nonce": draw(st.integers(0, 6)),
                        "tx_hash": f"0x{draw(st.integers(0, 12)):064x}",
                        "to": "0x" + "ab" * 20,
                        "value": "1",
                        "summary": "s",
                        "signed_at": clock,
                        "quoted_at": draw(
                            st.none() | st.just(clock - draw(st.sampled_from([0.0, 5.0, 200.0])))
                        ),
                    },
                }
            )
        else:
            mined = draw(
                st.none()
                | st.dictionaries(
                    st.sampled_from([str(c) for c in CHAINS]), st.integers(0, 8), min_size=1, max_size=2
                )
            )
            ops.append(
                {
                    "op": "quote",
                    "main": "0x" + "cd" * 20,
                    "now": clock,
                    "quote": {
                        "main_account": draw(
                            st.sampled_from(["0x" + "cd" * 20, "0x" + "CD" * 20, "0x" + "ef" * 20])
                        ),
                        "main_nonce_mined": mined,
                        "ts": clock - draw(st.sampled_from([0.0, 10.0, 150.0, -30.0])),
                    },
                }
            )
    return ops


def python_journal(ops, max_entries, max_unsettled):
    from dataclasses import asdict

    from companion_bridge.companion.journal import Entry, JournalFull, admit, apply_quote
    from companion_bridge.companion.quotes import NonceQuote

    entries, out = [], []
    for op in ops:
        if op["op"] == "admit":
            try:
                entries = admit(
                    entries, Entry(**op["entry"]), max_entries=max_entries, max_unsettled=max_unsettled
                )
                out.append("ok")
            except JournalFull:
                out.append("full")
        else:
            q = op["quote"]
            mined = (
                None
                if q["main_nonce_mined"] is None
                else {int(k): v for k, v in q["main_nonce_mined"].items()}
            )
            quote = NonceQuote(q["main_account"], {}, q["ts"], mined)
            out.append("changed" if apply_quote(entries, quote, op["main"], now=op["now"]) else "same")
    return {"out": out, "entries": [asdict(e) for e in entries], "final": [e.final for e in entries]}


def test_the_pages_journal_follows_the_desktop_companions_rules(browser, web_tier, fresh_build):
    """Differential: the same random histories through companion/journal.py and the page's journal.js."""
    histories = []

    @settings(
        max_examples=120, deadline=None, database=None, derandomize=True
    )  # fixed: the coverage check below
    @given(journal_ops(), st.sampled_from([(4, 2), (6, 3), (200, 50)]))
    def collect(ops, limits):
        histories.append((ops, limits))

    collect()
    phone = Phone.open(browser)
    try:
        phone.page.goto(app_url(web_tier) + "/app/")
        phone.page.evaluate((fresh_build / "testkit.js").read_text())
        results = phone.page.evaluate(
            "(hs) => hs.map(([ops, [m, u]]) => owliaTestkit.journalRun(ops, m, u))", histories
        )
        for (ops, (max_entries, max_unsettled)), got in zip(histories, results):
            assert got == python_journal(ops, max_entries, max_unsettled), ops
        # the histories reached every rule: a full journal, settling, reopening or confirming, finality
        outs = [o for r in results for o in r["out"]]
        assert "full" in outs and "changed" in outs and "same" in outs
        assert any(e["settled_at"] is not None for r in results for e in r["entries"])
        assert any(e["confirmed"] for r in results for e in r["entries"]) and any(
            f for r in results for f in r["final"]
        )
    finally:
        phone.close()


def test_an_escalated_transfer_is_approved_with_the_passkey_and_lands_on_chain(phone_a, web_tier, anvil):
    page = phone_a.page
    before = balance(anvil, FRIEND)
    bot = web_tier.bot_token()
    [pending] = run_async(
        web_tier.submit(transfer(FRIEND, OVER_LIMIT), token=bot, reason="paying back lunch")
    )
    assert pending["status"] == "pending_approval"
    card = page.locator(f"article[data-request={pending['request_id']}]")
    card.wait_for(timeout=10_000)
    text = card.inner_text()
    assert "Send 0.02 ETH" in text and "dev-friend" in text and f"{FRIEND[:6]}…{FRIEND[-4:]}" in text
    assert "NEW ADDRESS" not in text and "base units" not in text and "wei" not in text
    assert "(unverified)" in text and "paying back lunch" in text
    assert "Why it needs you" in text and pending["request_id"] and "Expires in" in text
    card.locator("details.more summary").click()  # the exact transaction, under Details
    text = card.inner_text()
    assert (
        str(OVER_LIMIT) in text
        and " ".join([FRIEND[:6]] + [FRIEND[i : i + 4] for i in range(6, 42, 4)]) in text
    )
    assert pending["request_id"] in text
    card.locator("details.more summary").click()
    card.evaluate("(e) => e.scrollIntoView({block: 'start'})")
    phone_a.shot("approval")
    card.locator("button.approve").click()
    gone(phone_a, card)
    status = run_async(wait_status(web_tier.stack, bot, pending["request_id"], {"confirmed"}))
    assert status["status"] == "signed"
    assert balance(anvil, FRIEND) - before == OVER_LIMIT
    [answer] = [a for a in phone_a.answers() if a["request_id"] == pending["request_id"]]
    assert answer["action"] == "approve" and answer["raw_tx"].startswith("0x02")
    # journaled, then settled by the signer's signed quote once mined
    wait_for(
        lambda: journal_entry(phone_a, pending["request_id"])["settled_at"],
        what="the journal entry to settle",
    )


def test_the_app_is_installable_from_the_page(phone_a):
    """What Chrome checks before offering "Install app": a valid manifest, icons, a service worker."""
    phone_a.page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    manifest = phone_a.cdp.send("Page.getAppManifest", {})
    assert manifest["errors"] == [] and manifest["url"].endswith("/app/manifest.webmanifest")
    errors = phone_a.cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]
    # a Playwright context is an incognito profile, where Chrome never offers installs: nothing else
    assert [e["errorId"] for e in errors] == ["in-incognito"], errors


def test_a_new_recipient_is_loud(phone_a, web_tier):
    [pending] = run_async(web_tier.submit(transfer(STRANGER, 1234)))
    card = phone_a.page.locator(f"article[data-request={pending['request_id']}]")
    card.wait_for(timeout=10_000)
    assert "NEW ADDRESS" in card.inner_text()
    card.locator("button.deny").click()
    card.wait_for(state="detached", timeout=15_000)


def test_a_second_device_imports_the_backup_and_a_wrong_passphrase_signs_nothing(
    browser, phone_a, web_tier, anvil
):
    phone = Phone.open(browser, prf=False)
    try:
        page = phone.page
        page.goto(pairing_link(web_tier, "phone-b"))
        set_up_key(phone, passphrase=PHONE_PASS, import_text="0x" + phone_a.main_key.hex())
        assert phone.vault()["address"] == phone_a.vault()["address"]
        back_up(phone, unlock=PHONE_PASS)
        pair(phone, "phone-b")
        bot = web_tier.bot_token()
        [pending] = run_async(web_tier.submit(transfer(FRIEND, OVER_LIMIT + 1), token=bot))
        card = page.locator(f"article[data-request={pending['request_id']}]")
        card.wait_for(timeout=10_000)
        card.locator("input.approve-pass").fill("not the passphrase")
        card.locator("button.approve").click()
        wait_for(lambda: "wrong passphrase" in phone.error_text(), what="the refusal")
        assert (
            phone.answers() == [] and phone.idb()["kv"].get("journal", []) == []
        )  # nothing signed, nothing sent
        card.locator("input.approve-pass").fill(PHONE_PASS)
        card.locator("button.approve").click()
        card.wait_for(state="detached", timeout=30_000)
        run_async(wait_status(web_tier.stack, bot, pending["request_id"], {"confirmed"}))
        # the key never left: not in storage in the clear, not in any request or frame
        dump = json.dumps(phone.idb())
        for form in key_forms(phone_a.main_key):
            assert form not in dump and form not in phone.everything_sent()
            assert form not in phone_a.everything_sent() and form not in json.dumps(phone_a.idb())
        assert (
            phone.vault()["ciphertext"]
            and len(__import__("base64").b64decode(phone.vault()["ciphertext"])) == 48
        )
        assert "localStorage" not in webapp.BUNDLE.read_text()
    finally:
        phone.close()


def test_a_keystore_or_a_phrase_imported_in_the_page_gives_the_wallets_account(browser, web_tier):
    """The two other ways people already hold a key, through the page's own import form."""
    key = secrets.token_bytes(32)
    keystore = json.dumps(Account.encrypt(key, "keystore pass 1", kdf="scrypt", iterations=2**10))
    Account.enable_unaudited_hdwallet_features()
    phrase = "test test test test test test test test test test test junk"
    for text, password, expected in (
        (keystore, "keystore pass 1", Account.from_key(key).address),
        ("  " + phrase.upper() + "\n", "", Account.from_mnemonic(phrase).address),
    ):
        phone = Phone.open(browser, prf=False)
        try:
            phone.page.goto(app_url(web_tier) + "/app/")
            set_up_key(phone, passphrase=PHONE_PASS, import_text=text, import_pass=password)
            assert phone.vault()["address"] == expected
            for form in key_forms(key) + [phrase.split()[0] + " " + phrase.split()[1]]:
                assert form not in json.dumps(phone.idb()) and form not in phone.everything_sent()
        finally:
            phone.close()
    phone = Phone.open(browser, prf=False)  # a wrong keystore passphrase imports nothing
    try:
        phone.page.goto(app_url(web_tier) + "/app/")
        phone.page.check("input[name=protect][value=passphrase]")
        phone.page.fill("#seal-pass", PHONE_PASS)
        phone.page.fill("#import-text", keystore)
        phone.page.fill("#import-pass", "not it")
        phone.page.click("#import-key")
        wait_for(lambda: "wrong passphrase" in phone.error_text(), 30, "the refusal")
        assert "vault" not in phone.idb()["kv"]
    finally:
        phone.close()


def test_a_request_rewritten_by_the_bridge_is_never_shown(phone_a, web_tier, monkeypatch):
    queue = web_tier.bridge.bridge.queue
    honest = queue.put

    def rewriting(items):
        for item in items:
            req = item["request"]
            req["tx"] = {**req["tx"], "to": STRANGER}
            for action in req["actions"]:
                if action["type"] == "transfer":
                    action["recipient"] = {**action["recipient"], "address": STRANGER}
        return honest(items)

    monkeypatch.setattr(queue, "put", rewriting)
    [pending] = run_async(web_tier.submit(transfer(FRIEND, OVER_LIMIT + 2)))
    wait_for(lambda: pending["request_id"] in phone_a.page.evaluate("window.owlia.forged()"), what="the drop")
    assert phone_a.page.locator(f"article[data-request={pending['request_id']}]").count() == 0
    assert pending["request_id"] not in phone_a.page.evaluate("window.owlia.requestIds()")


def test_a_journaled_approval_the_bridge_withheld_shows_as_outstanding(phone_a, web_tier, monkeypatch):
    bridge = web_tier.bridge.bridge
    honest = bridge._call

    async def withholding(device_id, message):
        if message.get("method") == "approvals.answer":  # keeps the signed transaction, reports an error
            return {
                "type": "reply",
                "id": message.get("id"),
                "ok": False,
                "error": {"code": -32000, "message": "signer busy"},
            }
        return await honest(device_id, message)

    monkeypatch.setattr(bridge, "_call", withholding)
    [pending] = run_async(web_tier.submit(transfer(FRIEND, OVER_LIMIT + 3)))
    card = phone_a.page.locator(f"article[data-request={pending['request_id']}]")
    card.wait_for(timeout=10_000)
    card.locator("button.approve").click()
    wait_for(lambda: "signer busy" in phone_a.error_text(), what="the bridge's error")
    section = phone_a.page.locator("#outstanding")
    wait_for(lambda: "Signed, not yet on chain (1)" in section.inner_text(), what="the outstanding entry")
    entry = journal_entry(phone_a, pending["request_id"])
    assert entry["settled_at"] is None and "signer busy" in entry["reply"]
    assert f"transaction {entry['tx_hash'][:10]}…{entry['tx_hash'][-4:]}" in section.inner_text()
    assert f"nonce {entry['nonce']}" in section.inner_text()
    phone_a.page.locator("#outstanding").scroll_into_view_if_needed()
    phone_a.shot("outstanding")
    # a redelivered request says it was signed already (and would be sent only at that nonce)
    assert "You signed this already" in card.inner_text() and "ALREADY APPROVED" not in card.inner_text()
    monkeypatch.setattr(bridge, "_call", honest)
    card.locator("button.deny").click()
    card.wait_for(state="detached", timeout=15_000)


def test_a_send_from_chat_escalates_is_approved_in_the_page_and_the_chat_is_told(
    phone_a, web_tier, llm, anvil
):
    import asyncio
    import concurrent.futures

    from bot.channels.base import Inbound
    from bot.notify import Notifier
    from bot.runtime.signer_watch import SignerWatch
    from tests.bot.agent.conftest import attach_bot
    from tests.bot.agent.test_cancel_and_pair import Sink

    harness = off_loop(attach_bot, web_tier.stack, llm)
    seen: dict[str, str] = {}
    told: list[str] = []

    async def chat() -> None:
        runtime = harness.runtime()

        async def console(chat_id: str, text: str) -> None:
            told.append(text)

        notifier = Notifier("console:owner")
        notifier.register("console", console)
        watch = SignerWatch(runtime, notifier, first_delay=0.1, max_delay=0.2)
        await watch.start()
        try:
            await runtime.core.handle(
                Inbound("console", "owner", f"m-{time.time_ns()}", f"/send {FRIEND} 0.02eth"), Sink()
            )
            outcome = next(
                e for e in runtime.events.poll(0, limit=1000, type="signer") if e.name == "sign.outcome"
            )
            assert outcome.data["status"] == "pending_approval"
            seen["request_id"] = outcome.data["request_id"]
            while not any("approved on your companion" in t.lower() for t in told):
                await asyncio.sleep(0.05)
        finally:
            await watch.stop()
            await runtime.close()

    before = balance(anvil, FRIEND)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        done = pool.submit(asyncio.run, asyncio.wait_for(chat(), 90))
        wait_for(lambda: "request_id" in seen or done.done(), 30, "the escalation")
        card = phone_a.page.locator(f"article[data-request={seen.get('request_id')}]")
        card.wait_for(timeout=10_000)
        assert "Send 0.02 ETH" in card.inner_text() and "dev-friend" in card.inner_text()
        card.locator("button.approve").click()
        gone(phone_a, card)
        done.result(timeout=90)
    final = next(t for t in told if "approved on your companion" in t.lower())
    [answer] = [a for a in phone_a.answers() if a["request_id"] == seen["request_id"]]
    # the chat showed the pending card itself: one outcome, one card (the watcher does not repeat it)
    assert answer["device_id"] not in final and not any(
        "waiting for your companion app" in t.lower() for t in told
    )
    wait_for(lambda: balance(anvil, FRIEND) - before == 2 * 10**16, 20, "the transfer")


def test_the_installed_app_opens_offline_to_its_last_state(phone_a, web_tier):
    [pending] = run_async(web_tier.submit(transfer(FRIEND, OVER_LIMIT + 6)))
    page = phone_a.page
    page.locator(f"article[data-request={pending['request_id']}]").wait_for(timeout=10_000)
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    phone_a.context.set_offline(True)
    try:
        page.reload()
        card = page.locator(f"article[data-request={pending['request_id']}]")
        card.wait_for(timeout=10_000)  # shell from the service worker's cache, request from IndexedDB
        assert "Send 0.02" in card.inner_text() and page.locator("#status").inner_text().startswith("offline")
    finally:
        phone_a.context.set_offline(False)
    wait_for(lambda: page.evaluate("window.owlia.status()") == "connected", 30, "the reconnect")
    card.locator("button.deny").click()
    gone(phone_a, card)


def test_a_top_up_requested_in_the_page_is_approved_there_and_funds_the_session_key(phone_a, web_tier, anvil):
    from signer.wire.exchange import new_idempotency_key

    key = off_loop(
        web_tier.stack.call_sync,
        web_tier.admin,
        "session_key.create",
        {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337, "balance_cap": str(10**16)},
    )["session_key"]
    page = phone_a.page
    page.click("#refresh-home")  # the signer lists its keys: the owner picks one by address, not by id
    option = page.locator(f"#topup-key option[value={key['key_id']}]")
    wait_for(lambda: option.count() == 1, 15, "the new key in the top-up form")
    assert page.locator("label[for=topup-key]").inner_text() == "Session key"
    shown = to_checksum(key["address"])  # the page shows the checksummed form, as every wallet does
    assert option.inner_text() == f"{shown[:6]}…{shown[-4:]}: 0 ETH of its 0.01 ETH cap"
    assert "sk_" not in page.locator("#controls").inner_text()
    page.select_option("#topup-key", key["key_id"])
    page.fill("#topup-amount", "0.004")  # ETH, as the owner types it
    page.click("#topup")
    card = page.locator(
        "article.card", has_text=f"{key['address'][:6]}…{key['address'][-4:]}"
    )  # short address
    wait_for(lambda: card.count() == 1 or phone_a.error_text(), 15, "the top-up request")
    assert card.count() == 1, phone_a.error_text()
    before = balance(anvil, key["address"])
    card.locator("button.approve").click()
    gone(phone_a, card)
    wait_for(lambda: balance(anvil, key["address"]) - before == 4 * 10**15, 20, "the top-up")


def test_a_policy_loosening_is_shown_as_a_diff_and_approved_in_the_page(phone_a, web_tier):
    from tests.companion.test_policy_change import BASE, policy

    stack = web_tier.stack
    loose = BASE.replace('per_tx: "0.01"', 'per_tx: "0.015"')
    stack.paths.policy.write_text(loose)
    off_loop(stack.call_sync, web_tier.admin, "policy.reload")
    card = phone_a.page.locator("article.card", has_text="Loosen your signer's policy")
    card.wait_for(timeout=15_000)
    text = card.inner_text()
    assert "per_tx 0.01 -> 0.015" in text and "What widens" in text and "Loosen your signer" in text
    card.evaluate("(e) => e.scrollIntoView({block: 'start'})")
    phone_a.shot("policy")
    card.locator("button.approve").click()
    gone(phone_a, card)
    assert off_loop(stack.call_sync, web_tier.admin, "status")["policy_hash"] == policy(loose).policy_hash()


def test_deny_and_freeze_stops_tier2_at_the_next_request(phone_a, web_tier):
    stack = web_tier.stack
    off_loop(stack.funded_session_key)
    bot = web_tier.bot_token()
    assert run_async(web_tier.submit(transfer(FRIEND, 10**15), token=bot))[0]["status"] == "signed"
    [pending] = run_async(web_tier.submit(transfer(FRIEND, OVER_LIMIT + 4), token=bot))
    card = phone_a.page.locator(f"article[data-request={pending['request_id']}]")
    card.wait_for(timeout=10_000)
    card.locator("button.deny-freeze").click()
    card.wait_for(state="detached", timeout=15_000)
    denied = run_async(web_tier.submit(transfer(FRIEND, 10**15), token=bot))[0]
    assert denied["status"] == "denied" and denied["rule_id"] in ("signer.frozen", "session_key.unavailable")
    phone_a.page.wait_for_selector("#frozen-banner", timeout=10_000)
    phone_a.page.click("#unfreeze")
    phone_a.page.wait_for_selector("#freeze", timeout=10_000)
    assert run_async(stack.call(web_tier.admin, "status"))["frozen"] is False


class PushService:
    """A local push service (RFC 8030): records what the bridge POSTs, answers 201."""

    def __init__(self) -> None:
        import http.server
        import threading

        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.path, dict(self.headers), body))
                self.send_response(201)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/push/sub1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_web_push_carries_only_the_request_id_and_the_service_worker_shows_it(phone_a, web_tier):
    import base64

    import http_ece
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from companion_bridge.companion.client import Companion
    from companion_bridge.companion.wallet import CompanionWallet
    from tests.companion.conftest import MAIN_PASS

    service = PushService()
    try:
        # A device subscribes with its connection token (the browser's keys are made here, to decrypt).
        browser_key = ec.generate_private_key(ec.SECP256R1())
        auth = secrets.token_bytes(16)
        b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")  # noqa: E731
        p256dh = b64(browser_key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint))
        wallet = CompanionWallet.create(
            web_tier.root / f"push-{time.monotonic_ns()}",
            bytearray(MAIN_PASS),
            scrypt_n=2**10,
            private_key=phone_a.main_key,
            name="push",
        )

        async def token() -> str:
            pairing = await web_tier.stack.call(web_tier.admin, "companion.pair_begin", {"name": "push"})
            async with Companion(wallet, web_tier.bridge.url) as companion:
                await companion.pair(pairing["pairing_id"], pairing["code"], pairing["signer_key"])
                return await companion.login()

        body = {
            "token": run_async(token()),
            "subscription": {"endpoint": service.endpoint, "keys": {"p256dh": p256dh, "auth": b64(auth)}},
        }
        request = urllib.request.Request(
            web_tier.bridge.url + "/v1/push/subscribe",
            json.dumps(body).encode(),
            {"content-type": "application/json"},
        )
        assert json.loads(urllib.request.urlopen(request).read()) == {"ok": True}
        forged = dict(body, token=body["token"][:-4] + "AAAA")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(
                urllib.request.Request(
                    web_tier.bridge.url + "/v1/push/subscribe",
                    json.dumps(forged).encode(),
                    {"content-type": "application/json"},
                )
            )
        assert err.value.code == 401
        pushes = web_tier.bridge.bridge.pusher.subscriptions()
        assert oct((web_tier.bridge.options.home / "push.json").stat().st_mode & 0o777) == "0o600"
        assert oct((web_tier.bridge.options.home / "vapid.pem").stat().st_mode & 0o777) == "0o600"
        assert sum(len(v) for v in pushes.values()) == 1

        [pending] = run_async(web_tier.submit(transfer(FRIEND, OVER_LIMIT + 5), reason="secret agent words"))
        wait_for(lambda: service.received, what="the push")
        path, headers, payload = service.received[0]
        headers = {k.lower(): v for k, v in headers.items()}
        assert (
            path == "/push/sub1" and headers["content-encoding"] == "aes128gcm" and int(headers["ttl"]) == 300
        )
        assert headers["authorization"].startswith("vapid t=")  # VAPID (RFC 8292)
        plain = http_ece.decrypt(payload, private_key=browser_key, auth_secret=auth, version="aes128gcm")
        assert json.loads(plain) == {"id": pending["request_id"]}  # the id, nothing else
        for secret_word in (b"0.02", b"dev-friend", b"secret agent words", FRIEND.encode()):
            assert secret_word not in payload and secret_word not in plain

        # The page's service worker turns a push into a notification.
        page = phone_a.page
        phone_a.context.grant_permissions(["notifications"], origin=app_url(web_tier))
        registrations: list[dict] = []
        phone_a.cdp.on(
            "ServiceWorker.workerRegistrationUpdated", lambda e: registrations.extend(e["registrations"])
        )
        phone_a.cdp.send("ServiceWorker.enable")
        page.evaluate("navigator.serviceWorker.ready.then(() => true)")
        wait_for(
            lambda: [r for r in registrations if r["scopeURL"].endswith("/app/") and not r["isDeleted"]],
            what="the service worker",
        )
        [reg] = [r for r in registrations if r["scopeURL"].endswith("/app/") and not r["isDeleted"]][:1]
        listed = (
            "navigator.serviceWorker.ready.then(r => r.getNotifications())"
            ".then(ns => ns.map(n => [n.title, n.tag, n.body]))"
        )

        def delivered() -> list:
            # a push that reaches a worker still activating is dropped (as a push service would retry,
            # deliver again until one shows); the same tag replaces, so one notification stays
            phone_a.cdp.send(
                "ServiceWorker.deliverPushMessage",
                {
                    "origin": app_url(web_tier),
                    "registrationId": reg["registrationId"],
                    "data": plain.decode(),
                },
            )
            time.sleep(0.5)
            return page.evaluate(listed)

        shown = wait_for(delivered, timeout=40, what="the notification")
        assert shown == [
            ["OwliaBot: an approval is waiting", pending["request_id"], "Open the companion to see it."]
        ]
        card = page.locator(f"article[data-request={pending['request_id']}]")
        card.wait_for(timeout=10_000)  # the request itself came over the page's own connection
        card.locator("button.deny").click()
        gone(phone_a, card)
    finally:
        service.close()


def test_the_phone_alone_revokes_every_tier3_grant_and_the_stolen_key_moves_nothing(phone_a, web_tier, anvil):
    """Tier 3 after a host theft, from the phone: the thief holds a session key with a live grant from the
    phone's main key; the page signs NonceEnforcer.incrementNonce with the passkey and sends it to the
    node itself (no bridge, no signer in the path); the thief's redeem then reverts and nothing moves.
    It leaves the phone's account a plain account again (7702 to zero), as the other tests expect."""
    import coincurve

    from bot.devchain import rpc
    from bot.devcontracts import deploy_delegation_framework
    from companion_bridge.companion import tier3 as companion
    from policies.loader import load_policy
    from signer.wire.delegation import current_nonce_calldata, redeem_calldata
    from signer.wire.grants import derive_lanes
    from signer.wire.txcodec import Eip1559Tx, address_of, sign_eip1559
    from tests.conftest import DEV_POLICY, wait_receipt

    contracts = deploy_delegation_framework(anvil.url)
    manager, enforcer = contracts["manager"], contracts["enforcers"]["NonceEnforcer"]
    main_key = coincurve.PrivateKey(phone_a.main_key)
    main = address_of(main_key)

    def send_raw(raw: bytes) -> dict:
        return wait_receipt(anvil, rpc(anvil.url, "eth_sendRawTransaction", ["0x" + raw.hex()]))

    def next_nonce(address: str) -> int:
        return int(rpc(anvil.url, "eth_getTransactionCount", [address, "pending"]), 16)

    fees = {"max_fee": 20 * 10**9, "max_priority_fee": 10**9}
    assert (
        send_raw(
            companion.authorize(
                main_key,
                chain_id=31337,
                nonce=next_nonce(main),
                implementation=contracts["stateless_delegator"],
                **fees,
            )
        )["status"]
        == "0x1"
    )
    thief = coincurve.PrivateKey(secrets.token_bytes(32))
    fund(anvil, address_of(thief), 10**17)
    now = int(rpc(anvil.url, "eth_getBlockByNumber", ["latest", False])["timestamp"], 16)
    lanes = derive_lanes(load_policy(DEV_POLICY), 31337, expires_at=now + 86400, nonce=0, start=now)
    native = companion.sign_grant(
        main_key,
        lanes,
        session_address=address_of(thief),
        chain_id=31337,
        manager=manager,
        enforcers=contracts["enforcers"],
        salt=1,
    )[0]

    def redeem(value: int) -> str:
        calldata = redeem_calldata([native], FRIEND.lower(), value, b"")
        tx = Eip1559Tx(
            31337, next_nonce(address_of(thief)), 10**9, 20 * 10**9, 1_000_000, manager, 0, calldata
        )
        return send_raw(sign_eip1559(tx, thief).raw)["status"]

    assert redeem(10**16) == "0x1"  # the grant is live: the thief takes what the caveats allow

    page = phone_a.page
    page.fill("#t3-rpc", anvil.url)
    page.fill("#t3-chain", "31337")
    page.fill("#t3-manager", manager)
    page.fill("#t3-nonce-enforcer", enforcer)
    sent_before = len(phone_a.sent)
    page.click("#t3-revoke")
    result = wait_for(
        lambda: (
            page.locator("#t3-result").inner_text().startswith(("Revoked", "Not revoked"))
            and page.locator("#t3-result").inner_text()
        ),
        60,
        "the revocation",
    )
    assert result.startswith("Revoked: every Tier 3 grant of") and "revocation nonce 0 -> 1" in result, (
        result,
        phone_a.error_text(),
        phone_a.console[-5:],
    )
    during = phone_a.sent[sent_before:]
    assert during and all(url.startswith(anvil.url) for _, url, _ in during), [
        u for _, u, _ in during
    ]  # node only
    assert phone_a.main_key.hex() not in phone_a.everything_sent()
    assert phone_a.idb()["kv"]["tier3"]["manager"] == manager  # kept for next time

    data = current_nonce_calldata(manager, main)
    assert int(rpc(anvil.url, "eth_call", [{"to": enforcer, "data": "0x" + data.hex()}, "latest"]), 16) == 1
    main0, friend0 = balance(anvil, main), balance(anvil, FRIEND)
    assert redeem(10**16) == "0x0" and redeem(1) == "0x0"
    assert balance(anvil, main) == main0 and balance(anvil, FRIEND) == friend0

    # A node of another chain is refused before anything is signed.
    page.fill("#t3-chain", "1")
    page.click("#t3-revoke")
    wait_for(
        lambda: "is chain 31337, not 1: nothing was signed" in page.locator("#t3-result").inner_text(),
        30,
        "the chain-id refusal",
    )
    assert (
        send_raw(
            companion.freeze(
                main_key,
                chain_id=31337,
                nonce=next_nonce(main),
                manager=manager,
                nonce_enforcer=enforcer,
                **fees,
            )
        )["status"]
        == "0x1"
    )


# Last: it removes phone_a's passkey.
def test_without_its_passkey_or_the_users_verification_the_page_signs_nothing(phone_a, web_tier):
    cdp, auth = phone_a.cdp, {"authenticatorId": phone_a.authenticator}
    [pending] = run_async(web_tier.submit(transfer(FRIEND, OVER_LIMIT + 7)))
    card = phone_a.page.locator(f"article[data-request={pending['request_id']}]")
    card.wait_for(timeout=10_000)
    signed = lambda: [e["tx_hash"] for e in phone_a.idb()["kv"]["journal"]]  # noqa: E731
    answers_before, journal_before = len(phone_a.answers()), signed()
    saved = cdp.send("WebAuthn.getCredentials", auth)["credentials"]
    assert len(saved) == 1 and saved[0]["isResidentCredential"]
    try:
        cdp.send(
            "WebAuthn.setUserVerified", {**auth, "isUserVerified": False}
        )  # a face the phone did not know
        card.locator("button.approve").click()
        wait_for(phone_a.error_text, 15, "the refusal")
        assert "approve refused" in phone_a.error_text().lower()
        cdp.send("WebAuthn.setUserVerified", {**auth, "isUserVerified": True})
        cdp.send("WebAuthn.clearCredentials", auth)  # the passkey gone (another phone, a wiped authenticator)
        phone_a.page.evaluate(
            "document.querySelectorAll('#error, .card-error').forEach((e) => { e.hidden = true; })"
        )
        card.locator("button.approve").click()
        wait_for(phone_a.error_text, 15, "the refusal")
        assert "approve refused" in phone_a.error_text().lower()
        assert (
            len(phone_a.answers()) == answers_before and signed() == journal_before
        )  # nothing signed or sent
    finally:  # last in the module: the passkey stays gone (its PRF secret cannot be exported back)
        cdp.send("WebAuthn.setUserVerified", {**auth, "isUserVerified": True})
    card.locator("button.deny").click()  # denying needs no key
    gone(phone_a, card)


def get_devices(tier: Tier1, authorization: str | None) -> tuple[int, dict]:
    headers = {} if authorization is None else {"authorization": authorization}
    try:
        with urllib.request.urlopen(
            urllib.request.Request(tier.bridge.url + "/v1/devices", headers=headers)
        ) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def desktop_companion(phone_a: Phone, tier: Tier1, name: str):
    """A CLI companion paired through the bridge (with the page's main key, as the signer requires)
    and a connection token of its own."""
    from companion_bridge.companion.client import Companion
    from companion_bridge.companion.wallet import CompanionWallet
    from tests.companion.conftest import MAIN_PASS

    wallet = CompanionWallet.create(
        tier.root / f"{name}-{time.monotonic_ns()}",
        bytearray(MAIN_PASS),
        scrypt_n=2**10,
        private_key=phone_a.main_key,
        name=name,
    )

    async def pair_and_login() -> str:
        pairing = await tier.stack.call(tier.admin, "companion.pair_begin", {"name": name})
        async with Companion(wallet, tier.bridge.url) as companion:
            await companion.pair(pairing["pairing_id"], pairing["code"], pairing["signer_key"])
            return await companion.login()

    return wallet, run_async(pair_and_login())


def test_the_page_lists_the_paired_devices_marks_itself_and_shows_a_revocation(phone_a, web_tier):
    page = phone_a.page
    own_id = phone_a.idb()["kv"]["device"]["device_id"]
    wallet, desk_token = desktop_companion(phone_a, web_tier, "desk-list")
    desk_id = wallet.device_id
    # The page learns of the new pairing from the bridge (a "devices" frame) and fetches the list.
    desk_row = page.locator(f"#devices .device[data-device={desk_id}]")
    desk_row.wait_for(timeout=10_000)
    own_row = page.locator(f"#devices .device[data-device={own_id}]")
    assert own_row.locator(".device-name").text_content() == "phone-a"
    assert own_row.locator(".this-device").text_content() == "this device"
    assert desk_row.locator(".device-name").text_content() == "desk-list"
    assert desk_row.locator(".this-device").count() == 0 and desk_row.locator(".revoked-mark").count() == 0
    assert page.locator("#devices .this-device").count() == 1
    assert "last seen" in desk_row.text_content()

    # Over HTTP with the desktop companion's own token: it is the one marked, and no key is relayed.
    status, listed = get_devices(web_tier, f"Bearer {desk_token}")
    assert status == 200
    rows = {d["device_id"]: d for d in listed["devices"]}
    assert rows[desk_id]["this_device"] is True and rows[own_id]["this_device"] is False
    assert set(rows[desk_id]) == {
        "device_id",
        "name",
        "key_fingerprint",
        "created_at",
        "last_seen",
        "revoked_at",
        "this_device",
    }
    assert (
        rows[desk_id]["key_fingerprint"]
        == hashlib.sha256(bytes.fromhex(wallet.device_public_key)).hexdigest()
    )
    assert wallet.device_public_key not in json.dumps(listed) and "public_key" not in json.dumps(listed)

    run_async(web_tier.stack.call(web_tier.admin, "companion.revoke", {"device_id": desk_id}))
    desk_row.locator(".revoked-mark").wait_for(timeout=15_000)  # within one poll of the signer
    assert desk_row.locator(".revoked-mark").text_content() == "REVOKED"
    assert "revoked" in desk_row.get_attribute("class").split()
    assert own_row.locator(".revoked-mark").count() == 0 and own_row.locator(".this-device").count() == 1
    page.locator("#devices").scroll_into_view_if_needed()
    phone_a.shot("devices")


def test_the_device_list_is_refused_without_a_valid_token_of_an_active_device(phone_a, web_tier):
    wallet, token = desktop_companion(phone_a, web_tier, "desk-gone")
    assert get_devices(web_tier, f"Bearer {token}")[0] == 200
    for authorization in (
        None,
        "",
        "Bearer",
        f"Basic {token}",
        f"Bearer {token[:-4]}AAAA",
        "Bearer x.y",
        f"Bearer {token}.{token}",
    ):
        status, body = get_devices(web_tier, authorization)
        assert status == 401 and "devices" not in body, authorization
    # Revoked: the same, still unexpired token gets nothing, even before the bridge's poll brings the news.
    run_async(web_tier.stack.call(web_tier.admin, "companion.revoke", {"device_id": wallet.device_id}))
    status, body = get_devices(web_tier, f"Bearer {token}")
    assert status == 401 and "devices" not in body
