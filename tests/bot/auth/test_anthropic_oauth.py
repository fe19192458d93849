"""Anthropic authorization code + PKCE against the fake token endpoint."""

from __future__ import annotations

import asyncio
import dataclasses
import urllib.parse

import pytest

from bot.auth.anthropic_oauth import CLIENT_ID, REDIRECT_URI, AnthropicOAuth, parse_pasted
from bot.auth.errors import AuthUnavailable, LoginFailed, ReauthRequired
from tests.bot.auth.conftest import anthropic_for


def test_authorization_url_has_the_real_parameters():
    request = AnthropicOAuth().start()
    parts = urllib.parse.urlsplit(request.url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://claude.ai/oauth/authorize"
    assert query == {
        "code": "true",
        "client_id": CLIENT_ID,
        "response_type": "code",
        "redirect_uri": REDIRECT_URI,
        "scope": "org:create_api_key user:profile user:inference",
        "code_challenge": query["code_challenge"],
        "code_challenge_method": "S256",
        "state": request.state,
    }
    assert request.verifier not in request.url and request.state != request.verifier


def test_full_exchange_sends_what_the_real_endpoint_expects(fake):
    client = anthropic_for(fake, clock=lambda: 1000.0)
    request = client.start()
    entry = asyncio.run(client.exchange(request, fake.approve_url(request.url)))
    assert entry.access_token.startswith("sk-ant-oat01-") and entry.expires_at == 1000.0 + 3600
    assert entry.account == "owl@example.com" and "user:inference" in entry.scopes
    sent = fake.requests_to("/v1/oauth/token")[0]
    assert sent.headers["Content-Type"] == "application/json"
    assert set(sent.body) == {"grant_type", "code", "state", "client_id", "redirect_uri", "code_verifier"}
    assert sent.body["grant_type"] == "authorization_code" and sent.body["code_verifier"] == request.verifier


def test_wrong_state_rejected_before_any_request(fake):
    client = anthropic_for(fake)
    request = client.start()
    code = fake.approve_url(request.url).split("#")[0]
    with pytest.raises(LoginFailed, match="state mismatch"):
        asyncio.run(client.exchange(request, f"{code}#{'x' * 32}"))
    assert fake.requests == []


def test_wrong_verifier_rejected_by_server_and_reported_clearly(fake):
    client = anthropic_for(fake)
    request = client.start()
    pasted = fake.approve_url(request.url)
    tampered = dataclasses.replace(request, verifier=AnthropicOAuth().start().verifier)
    with pytest.raises(LoginFailed) as err:
        asyncio.run(client.exchange(tampered, pasted))
    message = str(err.value)
    assert "invalid_grant" in message and "Invalid code verifier" in message and "owlia auth setup" in message
    for secret in (tampered.verifier, request.verifier, pasted.split("#")[0], request.state):
        assert secret not in message


def test_codes_are_single_use(fake):
    client = anthropic_for(fake)
    request = client.start()
    pasted = fake.approve_url(request.url)
    asyncio.run(client.exchange(request, pasted))
    with pytest.raises(LoginFailed, match="already used"):
        asyncio.run(client.exchange(request, pasted))


def test_expired_code_rejected(fake):
    fake.code_ttl = -1
    client = anthropic_for(fake)
    request = client.start()
    with pytest.raises(LoginFailed, match="expired"):
        asyncio.run(client.exchange(request, fake.approve_url(request.url)))


def test_garbage_paste_is_a_clear_error():
    with pytest.raises(LoginFailed, match="CODE#STATE"):
        parse_pasted("just-a-code")
    assert parse_pasted(" abc#def \n") == ("abc", "def")
    assert parse_pasted("https://console.anthropic.com/oauth/code/callback?code=abc&state=def") == (
        "abc",
        "def",
    )


def test_refresh_rotates_and_old_refresh_token_dies(fake):
    client = anthropic_for(fake)
    request = client.start()
    first = asyncio.run(client.exchange(request, fake.approve_url(request.url)))
    second = asyncio.run(client.refresh(first.refresh_token))
    assert second.refresh_token != first.refresh_token and second.access_token != first.access_token
    assert fake.requests_to("/v1/oauth/token")[-1].body == {
        "grant_type": "refresh_token",
        "refresh_token": first.refresh_token,
        "client_id": CLIENT_ID,
    }
    with pytest.raises(ReauthRequired) as err:
        asyncio.run(client.refresh(first.refresh_token))
    assert "owlia auth setup --provider anthropic" in str(err.value)
    assert first.refresh_token not in str(err.value)


def test_server_errors_are_transient(fake):
    fake.fail_next(503)
    with pytest.raises(AuthUnavailable, match="unavailable"):
        asyncio.run(anthropic_for(fake).refresh("whatever"))


def test_plain_http_only_on_loopback():
    with pytest.raises(ValueError, match="https"):
        AnthropicOAuth(token_url="http://example.com/v1/oauth/token")
