"""PKCE values, masking and Credential's repr."""

from __future__ import annotations

from bot.auth.credentials import Credential
from bot.auth.mask import mask
from bot.auth.pkce import new_pkce, new_state, s256, same_secret


def test_s256_matches_rfc7636_appendix_b():
    assert (
        s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    )


def test_pkce_and_state_are_random_and_distinct():
    a, b = new_pkce(), new_pkce()
    assert a.verifier != b.verifier and len(a.verifier) == 43 and s256(a.verifier) == a.challenge
    assert new_state() != new_state()
    assert a.verifier not in repr(a)
    assert same_secret("abc", "abc") and not same_secret("abc", "abd")


def test_mask():
    secret = "sk-ant-api03-" + "z" * 30 + "WXYZ"
    assert mask(secret) == "sk-ant…WXYZ"
    assert mask("short-secret") == "…"
    assert mask("") == "…" and mask(None) == "…"


def test_credential_repr_masks():
    secret = "sk-proj-" + "q" * 40
    cred = Credential("openai", "api_key", secret)
    assert secret not in repr(cred) and secret not in str(cred) and secret not in f"{cred}"
    assert "sk-pro…qqqq" in repr(cred)
