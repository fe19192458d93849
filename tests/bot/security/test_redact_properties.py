"""Property tests: keys and mnemonics never survive, ordinary text and addresses always do."""

from __future__ import annotations

import base64

from hypothesis import given, settings, strategies as st

from bot.security.redact import BIP39_WORDS, find_secrets, redact

WORDS = sorted(BIP39_WORDS)
SEPARATORS = [" ", "  ", ", ", ",", "\n", " \t", "; "]
PROSE = [
    "The market opened quietly this morning.",
    "Gas fees on mainnet were lower than usual, so I bridged some USDC to Base.",
    "Remember to check the contract on the block explorer before you approve anything.",
    "My friend says the secret to good trading is patience and a clear plan.",
    "We swapped 0.25 ETH for 812.40 USDC at 14:05 UTC, paying 3 gwei.",
    "Please send the report to alice@example.com by Friday!",
    "Is the bearer of this token allowed to vote on the proposal?",
    "Visit https://docs.example.org/guide?page=2 for more details.",
    "Prices: BTC $67,120, ETH $3,120.55, SOL $142.9 (up 4.1%).",
    "Nothing unusual happened; the bot reported 120 input tokens and 42 output tokens.",
]

hex_key = st.binary(min_size=32, max_size=32).map(bytes.hex)
address = st.tuples(
    st.binary(min_size=20, max_size=20), st.lists(st.booleans(), min_size=40, max_size=40)
).map(lambda t: "0x" + "".join(c.upper() if up else c for c, up in zip(t[0].hex(), t[1])))
prose = st.lists(st.sampled_from(PROSE), min_size=1, max_size=6).map(" ".join)


@given(
    st.text(max_size=200), hex_key, st.sampled_from(["", "0x", "0X"]), st.booleans(), st.text(max_size=200)
)
def test_a_private_key_in_random_text_is_gone_and_redact_is_idempotent(before, key, prefix, upper, after):
    key = key.upper() if upper else key
    text = f"{before} {prefix}{key} {after}"
    out = redact(text)
    assert key.lower() not in out.lower()
    assert redact(out) == out


@given(st.text(max_size=400))
def test_redact_is_idempotent_on_any_text(text):
    once = redact(text)
    assert redact(once) == once


@given(
    st.sampled_from([12, 15, 18, 21, 24]).flatmap(
        lambda n: st.lists(st.sampled_from(WORDS), min_size=n, max_size=n)
    ),
    st.sampled_from(SEPARATORS),
    st.booleans(),
    prose,
    prose,
)
def test_a_mnemonic_embedded_in_prose_is_redacted(words, sep, numbered, before, after):
    phrase = sep.join(f"{i}. {w}" if numbered else w for i, w in enumerate(words, 1))
    text = f"{before} {phrase} {after}"
    start = text.index(phrase)
    first_word = start + (phrase.index(words[0]))
    assert any(
        f.kind == "mnemonic" and f.start <= first_word and f.end >= start + len(phrase)
        for f in find_secrets(text)
    )
    out = redact(text)
    assert phrase not in out and "[REDACTED:mnemonic]" in out and redact(out) == out


@given(st.lists(st.one_of(prose, address), min_size=1, max_size=8).map(" ".join))
def test_prose_and_addresses_are_not_redacted(text):
    assert find_secrets(text) == []
    assert redact(text) == text


@settings(max_examples=50)
@given(hex_key, st.sampled_from(["0x", ""]), st.booleans(), prose)
def test_allow_listed_tx_hashes_survive(tx, prefix, upper_allow, context):
    tx_hash = prefix + tx
    allowed = ("0x" + tx).upper() if upper_allow else tx
    text = f"{context} Your transaction {tx_hash} is confirmed."
    assert redact(text, allow=[allowed]) == text
    assert tx_hash not in redact(text)


urlsafe = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=1
)


@settings(max_examples=300)
@given(
    user_id=st.integers(min_value=10**16, max_value=10**20 - 1),
    stamp=st.lists(urlsafe, min_size=6, max_size=6).map("".join),
    hmac=st.lists(urlsafe, min_size=27, max_size=38).map("".join),
    text=prose,
)
def test_a_discord_bot_token_never_survives(user_id, stamp, hmac, text):
    first = base64.b64encode(str(user_id).encode()).decode().rstrip("=")
    token = f"{first}.{stamp}.{hmac}"
    out = redact(f"{text} DISCORD_TOKEN {token} {text}")
    assert token not in out and first not in out and "[REDACTED:discord_bot_token]" in out


@settings(max_examples=200)
@given(
    client_id=st.binary(min_size=6, max_size=6).map(bytes.hex),
    secret=st.lists(urlsafe, min_size=43, max_size=43).map("".join),
    text=prose,
)
def test_the_signer_client_token_never_survives(client_id, secret, text):
    token = f"owl_{client_id}_{secret}"
    out = redact(f"{text} {token}, {text}")
    assert secret not in out and "[REDACTED:owlia_token]" in out
