"""Secret detection and redaction: each kind, the crypto exemptions, structured data, and speed."""

from __future__ import annotations

import secrets
import time

import pytest

from bot.security.redact import BIP39_WORDS, SecretFinding, contains_secret, find_secrets, redact, redact_obj

KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
TX = "0x" + "5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060"
ADDRESS = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
MNEMONIC = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

POSITIVE = [
    ("private_key", f"my key is 0x{KEY}, keep it"),
    ("private_key", f"key={KEY.upper()}"),
    ("mnemonic", f"backup: {MNEMONIC}."),
    (
        "mnemonic",
        "1. legal 2. winner 3. thank 4. year 5. wave 6. sausage\n7) worth 8) useful 9) legal "
        "10) winner 11) thank 12) yellow",
    ),
    ("mnemonic", "Legal, Winner, Thank, Year, Wave, Sausage, Worth, Useful, Legal, Winner, Thank, Yellow"),
    ("anthropic_key", "ANTHROPIC_KEY sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("openai_key", "use sk-proj-Ab3dEfGhIjKlMnOpQrStUvWx please"),
    ("openai_key", "sk-abcdefghij0123456789abcdef"),
    ("github_token", "ghp_" + "A1b2" * 9),
    ("github_token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("slack_token", "xoxb-123456789012-abcdefABCDEF"),
    ("aws_access_key", "aws AKIAIOSFODNN7EXAMPLE here"),
    ("aws_access_key", "ASIAY34FZKBOKMUTVV7A"),
    ("telegram_bot_token", "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw-"),
    ("owlia_token", "OWLIA_SIGNER_TOKEN is owl_0123456789ab_" + "Ab3-" * 10 + "xyz"),
    ("discord_bot_token", "token MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs in the config"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("bearer", "curl -H 'Authorization: Bearer abc.DEF-123_456'"),
    ("bearer", "authorization=Basic dXNlcjpwYXNzd29yZA=="),
    ("pem_private_key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----"),
    ("pem_private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut off"),
    (
        "xprv",
        "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi",
    ),
    (
        "xprv",
        "tprv8ZgxMBicQKsPd9TeAdPADNnSyH9SSUUbTVeFszDE23Ki6TBB5nCefAdHkK8Fm3qMQR6sHwA56zqRmKmxnHk37JkiFzvncDqoKmPWubu7hDF",
    ),
    ("assignment", "password=hunter2"),
    ("assignment", 'client_secret: "two words"'),
    ("assignment", "DB_PASSPHRASE = 'correct horse'"),
    ("assignment", "https://x.test/?api_key=abc123&page=2"),
]


@pytest.mark.parametrize("kind, text", POSITIVE)
def test_each_kind_is_found_and_redacted(kind, text):
    assert [f.kind for f in find_secrets(text)] == [kind]
    assert contains_secret(text)
    out = redact(text)
    assert f"[REDACTED:{kind}]" in out and redact(out) == out


def test_only_the_credential_is_replaced():
    assert redact("Authorization: Bearer abc123def456") == "Authorization: Bearer [REDACTED:bearer]"
    assert (
        redact("https://x.test/?api_key=abc123&page=2")
        == "https://x.test/?api_key=[REDACTED:assignment]&page=2"
    )
    assert redact(f"sent {MNEMONIC}!") == "sent [REDACTED:mnemonic]!"


NEGATIVE = [
    f"send 1.5 ETH to {ADDRESS} on base",
    "sig 0x" + "ab" * 65,  # a signature: longer than a key
    "0x" + "f" * 63,
    "the bearer of this note, the secretary, and the token holders",
    "sk-learn-compatible-estimators-for-everyone",
    "input_tokens: 120, max_tokens=4096, tokens used",
    "I need a password for the new account and a secret plan.",
    "abandon ability able about above absent absorb abstract absurd abuse access",  # 11 words
    "Today the ETH price is up 3.2% to $3,120.55 while gas is 12 gwei.",
    "task-management-framework-for-all",
    "see docs.example.com/Nothing.toSeeHere and version 1.2.3, owl_ is a prefix, nothing more",
    "Mainnet_and_testnet_configs.README.the_rest_of_the_filename_here.txt",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_text_is_left_alone(text):
    assert find_secrets(text) == [] and redact(text) == text


def test_findings_are_sorted_non_overlapping_and_merged():
    text = f"a=0x{KEY} then {MNEMONIC} and secret=0x{KEY}"
    findings = find_secrets(text)
    assert findings == sorted(findings, key=lambda f: f.start)
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:]))
    assert [f.kind for f in findings] == ["private_key", "mnemonic", "private_key"]
    assert isinstance(findings[0], SecretFinding) and text[findings[0].start : findings[0].end] == f"0x{KEY}"


def test_allow_keeps_public_hashes_case_insensitively_with_or_without_0x():
    text = f"tx {TX} confirmed; leaked 0x{KEY}"
    assert redact(text, allow=[TX.upper()[2:]]) == f"tx {TX} confirmed; leaked [REDACTED:private_key]"
    assert redact(text, allow=[TX]) == redact(redact(text, allow=[TX]), allow=[TX])


def test_redact_is_idempotent_on_mixed_input():
    text = "\n".join(t for _, t in POSITIVE) + f" password=0x{KEY} Bearer [REDACTED:jwt] secret: [REDACTED]"
    once = redact(text)
    assert redact(once) == once
    assert KEY not in once.lower() and "hunter2" not in once


def test_pem_block_swallows_earlier_markers_and_a_missing_end():
    text = "log: -----BEGIN PRIVATE KEY-----\nMIIEvQ [REDACTED:jwt] IBADANBgkqhkiG9w0BAQEFAASC\nmore"
    assert redact(text) == "log: [REDACTED:pem_private_key]"


def test_wordlist_is_the_full_bip39_list():
    assert len(BIP39_WORDS) == 2048 and {"abandon", "zoo", "legal"} <= BIP39_WORDS


def test_redact_obj_keys_and_containers():
    obj = {
        "api_key": "abc",
        "Password": 1234,
        "passphrase": None,
        "has_password": True,
        "access_token": "t",
        "accessToken": "t",
        "x-auth-token": "t",
        "bot_token": "t",
        "token": ADDRESS,
        "sell_token": "USDC",
        "token_ambiguous": {"token": "0123456789abcdefghijklmnop"},
        "input_tokens": 12,
        "output_tokens": 7,
        "token_transfer": {"token": ADDRESS, "amount": "1.5"},
        "Cookie": "sid=1",
        "authorization": "Basic x",
        "mnemonic": ["a"],
        "seed_phrase": "x",
        "privkey": "k",
        "tx_hash": TX,
        "blockHash": TX,
        "policy_hash": TX[2:],
        "hash": f"{TX} with sk-ant-api03-{'x' * 24}",
        "tree_hash": TX[2:],
        "treeHash": MNEMONIC,
        "note": f"key 0x{KEY}",
        "list": (f"0x{KEY}", 5, 1.5, None),
        "words": MNEMONIC.split(),
    }
    out = redact_obj(obj)
    for key in (
        "api_key",
        "Password",
        "access_token",
        "accessToken",
        "x-auth-token",
        "bot_token",
        "Cookie",
        "authorization",
        "mnemonic",
        "seed_phrase",
        "privkey",
    ):
        assert out[key] == "[REDACTED]", key
    assert out["passphrase"] is None and out["has_password"] is True
    assert out["token"] == ADDRESS and out["sell_token"] == "USDC"
    assert out["token_ambiguous"] == {"token": "[REDACTED]"}
    assert (out["input_tokens"], out["output_tokens"]) == (12, 7)
    assert out["token_transfer"] == {"token": ADDRESS, "amount": "1.5"}
    assert (out["tx_hash"], out["blockHash"], out["policy_hash"]) == (TX, TX, TX[2:])
    assert out["tree_hash"] == TX[2:]  # a skill's approved content hash is public
    assert out["treeHash"] == "[REDACTED:mnemonic]"  # a public-hash key vouches for 64 hex, nothing else
    assert out["hash"] == f"{TX} with [REDACTED:anthropic_key]"
    assert out["note"] == "key [REDACTED:private_key]"
    assert out["list"] == ("[REDACTED:private_key]", 5, 1.5, None)
    assert out["words"] == ["[REDACTED:mnemonic]"] * 12
    assert obj["note"] == f"key 0x{KEY}"  # a copy, not in place


def test_redact_obj_allow_and_depth():
    assert redact_obj({"result": f"sent {TX}"}, allow=[TX]) == {"result": f"sent {TX}"}
    deep: list = []
    node = deep
    for _ in range(200):
        node.append([])
        node = node[0]
    assert "[REDACTED]" in repr(redact_obj(deep))
    cyclic: dict = {}
    cyclic["self"] = cyclic
    redact_obj(cyclic)  # terminates


ADVERSARIAL = {
    "hex": "a" * 1_000_000,
    "hex-64-runs": ("0x" + "b" * 64 + "c") * 15_000,
    "eyJ": "eyJ" * 340_000,
    "jwt-dots": "eyJabcde." * 110_000,
    "sk-ant": "sk-ant-" * 145_000,
    "ghp": "ghp_" * 250_000,
    "bearer": "Bearer " * 145_000,
    "authorization": "authorization: " * 68_000,
    "password": "password=" * 112_000,
    "password-quote": 'password="' * 100_000,
    "pem": "-----BEGIN PRIVATE KEY-----" * 38_000,
    "digits": "1" * 1_000_000,
    "telegram": ("12345678:" + "a" * 34 + " ") * 23_000,
    "words": "abandon " * 125_000,
    "short-words": "a b " * 250_000,
    "numbered": "1. " * 333_000,
    "gap": "abandon" + " " * 1_000_000 + "#abandon",
    "markers": "[REDACTED:x]" * 83_000,
    "mixed": "".join(secrets.choice("ab0x-_.: \n=\"'eyJ") for _ in range(1_000_000)),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_one_megabyte_of_adversarial_input_is_fast(name):
    text = ADVERSARIAL[name]
    assert len(text) >= 990_000
    start = time.process_time()  # CPU time: other processes' load must not fail this test
    redact(text)
    # ~0.05-0.4 s here; catastrophic backtracking would take minutes. The bound leaves room for a
    # slow shared CI machine without letting a super-linear pattern through.
    assert time.process_time() - start < 3.0
