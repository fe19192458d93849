"""Tier 3 signed on the phone, in real headless Chromium with a virtual passkey, against a real signer,
bridge and anvil with the Delegation Framework deployed from npm bytecode.

The page authorizes (EIP-7702) and grants (EIP-712 delegations over the signer's offer, which it
checks with the signer's identity key), keeps its own record, rotates; the session key then spends
within the caveats. Attacks: a bridge altering the offer, forged and replayed answers, signatures
over a wider grant than the signer offered, and the bridge calling the admin grant method itself.
"""

from __future__ import annotations

import json
import secrets
import time

import coincurve
import pytest
import yaml
from eth_account import Account
from nacl.signing import SigningKey

from bot.devchain import DevChain, free_port, rpc
from bot.devcontracts import deploy_delegation_framework
from signer.wire.exchange import new_idempotency_key
from signer.wire.messages import (
    GRANT_ANSWER_DOMAIN,
    GRANT_ASK_DOMAIN,
    grant_answer_body,
    grant_ask_body,
    signed_message,
)
from signer.wire.protocol import Scope
from tests.companion.conftest import Tier1, fund, start_bridge
from tests.companion.test_webapp import (  # noqa: F401 - browser and fresh_build are fixtures
    app_url,
    back_up,
    browser,
    fresh_build,
    pair,
    set_up_key,
    wait_for,
)
from tests.companion.webapp_support import Phone, off_loop, pair_link_from_cli
from tests.conftest import FRIEND, SignerStack, balance, wait_receipt

pytestmark = [pytest.mark.chain]
CHAIN_ID = 31337
CENT = 10**16  # the dev policy's per-transaction limit


@pytest.fixture(scope="module")
def grant_tier(tmp_path_factory):
    chain = DevChain(port=free_port()).start()
    chain.contracts = deploy_delegation_framework(chain.url)
    root = tmp_path_factory.mktemp("grants")
    stack = SignerStack(root, chain.url)
    config = yaml.safe_load((stack.home / "config.yaml").read_text())
    config["chains"][0]["delegation"] = chain.contracts
    (stack.home / "config.yaml").write_text(yaml.safe_dump(config))
    off_loop(stack.start)
    bridge = off_loop(lambda: start_bridge(stack, root / "bridge"))
    tier = Tier1(stack, bridge, root, chain)
    yield tier
    tier.bridge.stop()
    off_loop(stack.close)
    chain.stop()


@pytest.fixture(scope="module")
def phone(browser, grant_tier):  # noqa: F811 - the browser fixture
    out = grant_tier.stack.owlia("companion", "pair", "--name", "phone", "--bridge", app_url(grant_tier))
    assert out.returncode == 0, out.stderr
    phone = Phone.open(browser)
    phone.page.goto(pair_link_from_cli(out.stdout))
    set_up_key(phone)
    phone.main_key = bytes(Account.decrypt(back_up(phone), "backup passphrase 1"))
    pair(phone, "phone")
    fund(grant_tier.anvil, phone.vault()["address"], 10**18)
    yield phone
    phone.close()


def signer_call(tier: Tier1, token: str, method: str, params: dict | None = None):
    """A call on the signer's socket, off Playwright's event loop."""
    return off_loop(lambda: tier.stack.call_sync(token, method, params))


def send(tier: Tier1, to: str, value: int) -> dict:
    return signer_call(
        tier,
        tier.stack.client_token(f"bot{time.monotonic_ns() % 10**12}"),
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": CHAIN_ID, "to": to, "value": str(value)},
        },
    )


def result_of(phone: Phone, prefixes: tuple[str, ...], timeout: float = 60) -> str:
    box = phone.page.locator("#g3-result")
    return wait_for(
        lambda: box.inner_text().startswith(prefixes) and box.inner_text(), timeout, f"one of {prefixes}"
    )


def fill_chain(phone: Phone, tier: Tier1) -> None:
    contracts = tier.anvil.contracts
    page = phone.page
    page.fill("#t3-rpc", tier.anvil.url)
    page.fill("#t3-chain", str(CHAIN_ID))
    page.fill("#t3-manager", contracts["manager"])
    page.fill("#t3-nonce-enforcer", contracts["enforcers"]["NonceEnforcer"])
    page.fill("#g3-delegator", contracts["stateless_delegator"])


def device_proof(phone: Phone) -> tuple[str, SigningKey]:
    device = phone.idb()["kv"]["device"]
    return device["device_id"], SigningKey(bytes.fromhex(device["seed"]))


def ask_offer(tier: Tier1, phone: Phone, token: str) -> dict:
    """What a bridge holding a device's proof could ask: the signer's offer, as the page gets it."""
    device_id, key = device_proof(phone)
    ts = time.time() + 0.001
    body = grant_ask_body(device_id, CHAIN_ID, 3, False, ts)
    sig = key.sign(signed_message(GRANT_ASK_DOMAIN, body)).signature.hex()
    return signer_call(tier, token, "tier3.offer", {**body, "signature": sig})["offer"]


def answer(
    tier: Tier1, phone: Phone, token: str, offer: dict, signatures: list[str], offer_hash: str | None = None
):
    from signer.tier3.grant_offers import offer_hash as digest

    device_id, key = device_proof(phone)
    ts = time.time() + 0.001
    body = grant_answer_body(device_id, offer["offer_id"], offer_hash or digest(offer), signatures, ts)
    params = {**body, "signature": key.sign(signed_message(GRANT_ANSWER_DOMAIN, body)).signature.hex()}
    return params, (lambda: signer_call(tier, token, "tier3.grant_answer", params))


def test_eip712_and_eip7702_in_the_page_are_byte_identical_to_python(phone, grant_tier, fresh_build):  # noqa: F811
    from companion_bridge.companion import tier3 as companion
    from policies.loader import load_policy
    from signer.tier3.grant_offers import offer_hash
    from signer.wire.delegation import sign_digest
    from signer.wire.grants import derive_lanes
    from signer.wire.txcodec import address_of
    from tests.conftest import DEV_POLICY

    page = phone.page
    page.evaluate((fresh_build / "testkit.js").read_text())
    kit = "window.owliaTestkit"
    contracts = grant_tier.anvil.contracts
    for i in range(6):
        key = coincurve.PrivateKey(secrets.token_bytes(32))
        lanes = derive_lanes(
            load_policy(DEV_POLICY), CHAIN_ID, expires_at=2_000_000_000 + i, nonce=i, start=1_700_000_000
        )
        offer = companion.grant_offer(
            lanes,
            ["words é ≈"],
            session_address=Account.create().address.lower(),
            delegator=address_of(key),
            chain_id=CHAIN_ID,
            manager=contracts["manager"],
            enforcers=contracts["enforcers"],
            salt=secrets.randbits(64),
        )
        text = json.dumps(offer)
        assert page.evaluate(f"(t) => {kit}.offerHash(t)", text) == offer_hash(offer)
        for raw, doc in zip(offer["delegations"], offer["typed_data"]):
            from signer.wire.delegation import Delegation

            digest = Delegation.from_json(raw).signing_digest(CHAIN_ID, contracts["manager"])
            assert page.evaluate(f"(t) => {kit}.typedDataDigest(t)", json.dumps(doc)) == digest.hex()
            signed = page.evaluate(f"([d, k]) => {kit}.signDigest(d, k)", [digest.hex(), key.secret.hex()])
            assert signed == "0x" + sign_digest(digest, key).hex()
        nonce = secrets.randbelow(2**40)
        tx = {
            "chainId": CHAIN_ID,
            "nonce": str(nonce),
            "maxPriorityFeePerGas": str(10**9),
            "maxFeePerGas": str(3 * 10**10 + i),
            "gas": "100000",
            "to": address_of(key),
            "value": "0",
            "data": "0x",
            "implementation": contracts["stateless_delegator"],
        }
        expected = companion.authorize(
            key,
            chain_id=CHAIN_ID,
            nonce=nonce,
            max_fee=3 * 10**10 + i,
            max_priority_fee=10**9,
            implementation=contracts["stateless_delegator"],
        )
        got = page.evaluate(f"([t, k]) => {kit}.signEip7702(t, k)", [tx, key.secret.hex()])
        assert got["raw"] == "0x" + expected.hex()


def test_the_phone_authorizes_and_grants_and_the_session_key_spends_within_the_caveats(phone, grant_tier):
    from signer.wire.delegation import Delegation

    tier, chain, page = grant_tier, grant_tier.anvil, phone.page
    main = phone.vault()["address"]
    key = off_loop(tier.stack.funded_session_key)
    page.reload()
    wait_for(lambda: page.evaluate("window.owlia.status()") == "connected", what="the page to connect")
    fill_chain(phone, tier)
    page.click("#g3-offer-ask")  # not a smart account yet: the signer says so, nothing is offered
    text = result_of(phone, ("Not granted", "Check"), 30)
    assert "is not a smart account on chain 31337 yet: authorize it first" in text, text
    page.click("#g3-authorize")
    assert result_of(phone, ("Authorized", "Not authorized")).startswith("Authorized"), phone.error_text()
    code = rpc(chain.url, "eth_getCode", [main, "latest"])
    assert code == "0xef0100" + chain.contracts["stateless_delegator"][2:].lower()

    page.fill("#g3-days", "3")
    page.click("#g3-offer-ask")
    page.wait_for_selector("#g3-sign", timeout=30_000)
    words = page.locator("#g3-offer").inner_text()
    assert "dev-friend" in words and key["address"].lower() in words.lower(), words
    sent_before = len(phone.frames)
    page.click("#g3-sign")
    done = result_of(phone, ("Granted", "Grant refused"))
    assert done.startswith("Granted: the signer took grant gr_"), (done, phone.console[-5:])
    assert phone.main_key.hex() not in phone.everything_sent()
    assert any('"tier3.grant_answer"' in f for f in phone.frames[sent_before:])

    # The phone's own record, and the signer's grant: the same delegations, from the phone's key.
    [record] = phone.idb()["kv"]["tier3_grants"]
    assert record["delegate"] == key["address"].lower() and record["ended"] is None and record["nonce"] == "0"
    [grant] = signer_call(tier, tier.admin, "tier3.status")["grants"]
    assert grant["delegate"].lower() == key["address"].lower()
    signed = [Delegation.from_json(d) for d in grant["delegations"]]
    assert [d.to_json()["signature"] for d in signed] == [d["signature"] for d in record["delegations"]]
    assert {d.delegator for d in signed} == {main.lower()}

    # The session key spends from the main account within the caveats: balances on chain.
    main0, friend0 = balance(chain, main), balance(chain, FRIEND)
    ok = send(tier, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain, ok["tx_hash"])["status"] == "0x1", ok
    assert balance(chain, FRIEND) - friend0 == CENT and main0 - balance(chain, main) == CENT


def test_a_bridge_that_alters_the_offer_gets_nothing_signed(phone, grant_tier, monkeypatch):
    bridge = grant_tier.bridge.bridge
    honest = bridge._call

    async def altering(device_id, message):
        reply = await honest(device_id, message)
        if message.get("method") == "tier3.offer" and reply.get("ok"):
            offer = reply["result"]["offer"]
            offer["words"] = [w.replace("dev-friend", "anyone") for w in offer["words"]]
        return reply

    monkeypatch.setattr(bridge, "_call", altering)
    page = phone.page
    sent_before = len(phone.frames)
    page.click("#g3-offer-ask")
    text = result_of(phone, ("Not signed", "Not granted", "Check"), 30)
    assert text.startswith("Not signed: this grant offer is not signed by your signer"), text
    assert page.locator("#g3-sign").count() == 0
    assert not any('"tier3.grant_answer"' in f for f in phone.frames[sent_before:])


def test_the_phone_rotates_and_revokes_naming_its_grants(phone, grant_tier):
    tier, chain, page = grant_tier, grant_tier.anvil, phone.page
    [old] = signer_call(tier, tier.admin, "tier3.status")["grants"]
    page.click("#g3-rotate")
    wait_for(
        lambda: page.locator("#g3-sign").count() or page.locator("#g3-result").inner_text().startswith("Not"),
        60,
        "the new offer",
    )
    assert page.locator("#g3-sign").count(), (page.locator("#g3-result").inner_text(), phone.console[-5:])
    page.click("#g3-sign")
    done = result_of(phone, ("Granted", "Grant refused", "Not granted"))
    assert done.startswith("Granted"), (done, phone.console[-5:])
    [new] = signer_call(tier, tier.admin, "tier3.status")["grants"]
    assert new["delegate"].lower() != old["delegate"].lower() and new["grant_id"] != old["grant_id"]
    records = phone.idb()["kv"]["tier3_grants"]
    assert [r["ended"] is None for r in records] == [False, True]
    assert records[-1]["delegate"] == new["delegate"].lower() and records[-1]["nonce"] == "1"

    # The new key spends (once it has its gas float); then the phone's revoke names the grant it ends.
    [key] = [
        k
        for k in signer_call(tier, tier.admin, "session_key.list")["session_keys"]
        if k["address"].lower() == new["delegate"].lower()
    ]
    signer_call(
        tier,
        tier.admin,
        "session_key.topup",
        {"idempotency_key": new_idempotency_key(), "key_id": key["key_id"]},
    )
    friend0 = balance(chain, FRIEND)
    ok = send(tier, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain, ok["tx_hash"])["status"] == "0x1", ok
    assert balance(chain, FRIEND) - friend0 == CENT

    page.click("#t3-revoke")
    text = wait_for(
        lambda: (
            page.locator("#t3-result").inner_text().startswith(("Revoked", "Not revoked"))
            and page.locator("#t3-result").inner_text()
        ),
        60,
        "the revocation",
    )
    assert (
        text.startswith("Revoked") and "Now dead: the grant to session key " + new["delegate"].lower() in text
    ), text
    assert all(r["ended"] for r in phone.idb()["kv"]["tier3_grants"])
    friend0 = balance(chain, FRIEND)
    refusedsend = send(tier, FRIEND, CENT)
    assert refusedsend["status"] != "signed", refusedsend
    assert balance(chain, FRIEND) == friend0


def test_forged_replayed_and_wider_answers_are_refused_by_the_signer(phone, grant_tier):
    tier = grant_tier
    token = tier.stack.client_token(f"bridgex{time.monotonic_ns() % 10**9}", Scope.BRIDGE)
    main_key = coincurve.PrivateKey(phone.main_key)
    # After the phone's revoke (the test before): no grant is live on chain, so every check is reached.
    before = signer_call(tier, tier.admin, "tier3.status")["grants"]

    def refused(call, words: str) -> None:
        with pytest.raises(Exception) as caught:
            call()
        assert words in str(caught.value), str(caught.value)

    # The bridge cannot install a grant itself (the admin method), whatever it holds.
    refused(
        lambda: signer_call(
            tier,
            token,
            "tier3.grant",
            {"idempotency_key": new_idempotency_key(), "chain_id": CHAIN_ID, "delegations": [{}]},
        ),
        "scope",
    )

    from signer.wire.delegation import Delegation, sign_digest

    offer = ask_offer(tier, phone, token)
    manager = offer["manager"]

    def sigs(key, delegations) -> list[str]:
        return [
            "0x" + sign_digest(Delegation.from_json(d).signing_digest(CHAIN_ID, manager), key).hex()
            for d in delegations
        ]

    # Signatures from a key that is not the main account's: refused by tier3.grant's own checks.
    stranger = coincurve.PrivateKey(secrets.token_bytes(32))
    _, call = answer(tier, phone, token, offer, sigs(stranger, offer["delegations"]))
    refused(call, "grant refused: a delegation's signature is not the main account's")
    # The offer was used up by that answer: a right answer to it now is refused too.
    _, call = answer(tier, phone, token, offer, sigs(main_key, offer["delegations"]))
    refused(call, "no such open grant offer")

    # A wider grant (the per-transaction cap doubled), signed by the main key: the signer installs only
    # its own offer's delegations, so the signatures do not verify.
    offer = ask_offer(tier, phone, token)
    wider = json.loads(json.dumps(offer["delegations"]))
    for c in wider[0]["caveats"]:
        if c["enforcer"].lower() == tier.anvil.contracts["enforcers"]["ValueLteEnforcer"].lower():
            c["terms"] = "0x" + (2 * CENT).to_bytes(32, "big").hex()
    _, call = answer(tier, phone, token, offer, sigs(main_key, wider))
    refused(call, "grant refused: a delegation's signature is not the main account's")

    # Forged: the device signature over other bytes; an answer for another offer hash; a replayed proof.
    offer = ask_offer(tier, phone, token)
    params, call = answer(tier, phone, token, offer, sigs(main_key, offer["delegations"]))
    forged = {**params, "ts": params["ts"] + 0.5}
    refused(
        lambda: signer_call(tier, token, "tier3.grant_answer", forged), "device signature does not verify"
    )
    _, call_wrong = answer(
        tier, phone, token, offer, sigs(main_key, offer["delegations"]), offer_hash="0" * 64
    )
    refused(call_wrong, "not for the offer the signer made")
    assert signer_call(tier, tier.admin, "tier3.status")["grants"] == before  # nothing above went in
    installed = call()  # the right answer, once: the grant goes in
    refused(call, "already used (replay)")
    [live] = signer_call(tier, tier.admin, "tier3.status")["grants"]
    assert live["grant_id"] == installed["grant"]["grant_id"]


def _leaves(value, path=()):
    """Every (path, leaf) of a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path, value


def test_any_change_to_a_signed_offer_is_refused_by_the_page(phone, grant_tier, fresh_build):  # noqa: F811
    """Property: whichever field of the signer's offer a bridge changes (a word, a caveat's terms, the
    delegate, a salt, the chain, a document's domain), the page refuses it before showing or signing."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    from companion_bridge.companion import tier3 as companion
    from policies.loader import load_policy
    from signer.tier3.grant_offers import offer_hash
    from signer.wire.grants import derive_lanes
    from signer.wire.messages import GRANT_OFFER_DOMAIN
    from tests.conftest import DEV_POLICY

    page = phone.page
    page.evaluate((fresh_build / "testkit.js").read_text())
    contracts = grant_tier.anvil.contracts
    signer_key = SigningKey.generate()
    account = Account.create().address.lower()
    lanes = derive_lanes(
        load_policy(DEV_POLICY), CHAIN_ID, expires_at=2_000_000_000, nonce=0, start=1_700_000_000
    )
    offer = companion.grant_offer(
        lanes,
        [f"lane {i}" for i in range(len(lanes))],
        session_address=Account.create().address.lower(),
        delegator=account,
        chain_id=CHAIN_ID,
        manager=contracts["manager"],
        enforcers=contracts["enforcers"],
        salt=7,
    )
    offer.update(
        {
            "offer_id": "off_" + "1" * 16,
            "account": account,
            "delegate": offer["delegations"][0]["delegate"],
            "key_id": "sk_" + "2" * 16,
            "nonce": "0",
            "expires_at": 2_000_000_000,
        }
    )

    def signed(o: dict) -> dict:
        body = json.dumps({"offer_hash": offer_hash(o)}, sort_keys=True, separators=(",", ":"))
        sig = signer_key.sign(GRANT_OFFER_DOMAIN.encode() + b"\n" + body.encode()).signature.hex()
        return {**o, "signer_sig": sig}

    def check(o: dict) -> str:
        return page.evaluate(
            "([t, k, a]) => window.owliaTestkit.checkOffer(t, k, a)",
            [json.dumps(o), signer_key.verify_key.encode().hex(), account],
        )

    honest = signed(offer)
    assert check(honest) == "ok"
    leaves = list(_leaves(offer))

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(leaves), st.sampled_from(["flip", "other"]))
    def changed(leaf, how):
        path, value = leaf
        altered = json.loads(json.dumps(honest))
        target = altered
        for key in path[:-1]:
            target = target[key]
        if isinstance(value, str) and how == "flip" and value:
            new = value[:-1] + ("0" if value[-1] != "0" else "1")
        elif isinstance(value, bool):
            new = not value
        elif isinstance(value, int):
            new = value + 1
        else:
            new = str(value) + "x"
        target[path[-1]] = new
        assert check(altered) != "ok", (path, new)  # the bridge changed it: refused
        resigned = signed({k: v for k, v in altered.items() if k != "signer_sig"})
        verdict = check(resigned)  # even signed by the signer, a document unlike its delegation is refused
        if path[0] in ("typed_data", "delegations", "account", "delegate", "chain_id", "manager") and path[
            -1
        ] not in ("args", "signature"):
            assert verdict != "ok", (path, new)

    changed()


def test_the_page_refuses_a_swap_lane_that_pays_anyone_but_its_account(
    phone, grant_tier, fresh_build, tmp_path
):  # noqa: F811
    """A signer that offers a swap lane whose pinned recipient is another address (a stolen signer host,
    its offer signed with the signer's own key and words that say "your account") gets nothing signed:
    the page reads the swap lane's recipient from its AllowedCalldata terms itself."""
    from bot.devmarket import dev_policy_with_market
    from companion_bridge.companion import tier3 as companion
    from policies.loader import load_policy
    from signer.tier3.grant_offers import offer_hash
    from signer.wire.delegation import Delegation
    from signer.wire.grants import SWAP, derive_lanes, describe
    from signer.wire.messages import GRANT_OFFER_DOMAIN
    from tests.conftest import DEV_POLICY
    from tests.tier3.test_swap_lane_grants import MARKET

    page = phone.page
    page.evaluate((fresh_build / "testkit.js").read_text())
    contracts = grant_tier.anvil.contracts
    signer_key = SigningKey.generate()
    account, thief = Account.create().address.lower(), Account.create().address.lower()
    path = tmp_path / "market-policy.yaml"
    path.write_text(dev_policy_with_market(DEV_POLICY.read_text(), MARKET))
    policy = load_policy(path)

    def offer_for(payee: str) -> dict:
        lanes = derive_lanes(
            policy, CHAIN_ID, expires_at=2_000_000_000, nonce=0, start=1_700_000_000, delegator=payee
        )
        assert any(lane.asset == SWAP for lane in lanes)
        offer = companion.grant_offer(
            lanes,
            [describe(lane, policy, CHAIN_ID).replace(payee, account) for lane in lanes],
            session_address=Account.create().address.lower(),
            delegator=payee,
            chain_id=CHAIN_ID,
            manager=contracts["manager"],
            enforcers=contracts["enforcers"],
            salt=7,
        )
        if payee != account:  # the thief's pins, in delegations from this phone's account
            moved = [
                Delegation.from_json({**d, "delegator": account, "signature": "0x"})
                for d in offer["delegations"]
            ]
            offer["delegations"] = [d.to_json() for d in moved]
            offer["typed_data"] = [d.typed_data(CHAIN_ID, contracts["manager"]) for d in moved]
        offer.update(
            {
                "offer_id": "off_" + "3" * 16,
                "account": account,
                "delegate": offer["delegations"][0]["delegate"],
                "key_id": "sk_" + "4" * 16,
                "nonce": "0",
                "expires_at": 2_000_000_000,
            }
        )
        body = json.dumps({"offer_hash": offer_hash(offer)}, sort_keys=True, separators=(",", ":"))
        sig = signer_key.sign(GRANT_OFFER_DOMAIN.encode() + b"\n" + body.encode()).signature.hex()
        return {**offer, "signer_sig": sig}

    def check(o: dict) -> str:
        return page.evaluate(
            "([t, k, a]) => window.owliaTestkit.checkOffer(t, k, a)",
            [json.dumps(o), signer_key.verify_key.encode().hex(), account],
        )

    assert check(offer_for(account)) == "ok"
    verdict = check(offer_for(thief))
    assert f"swap lane would pay its tokens to {thief}, not your account" in verdict, verdict


# Last: it revokes the phone's device.
def test_a_revoked_device_gets_no_offer_and_cannot_answer(phone, grant_tier):
    tier = grant_tier
    token = tier.stack.client_token(f"bridgey{time.monotonic_ns() % 10**9}", Scope.BRIDGE)
    offer = ask_offer(tier, phone, token)
    main_key = coincurve.PrivateKey(phone.main_key)
    from signer.wire.delegation import Delegation, sign_digest

    signatures = [
        "0x" + sign_digest(Delegation.from_json(d).signing_digest(CHAIN_ID, offer["manager"]), main_key).hex()
        for d in offer["delegations"]
    ]
    device_id, _ = device_proof(phone)
    signer_call(tier, tier.admin, "companion.revoke", {"device_id": device_id})
    with pytest.raises(Exception, match="the device was revoked"):
        ask_offer(tier, phone, token)
    _, call = answer(tier, phone, token, offer, signatures)
    with pytest.raises(Exception, match="the device was revoked"):
        call()
