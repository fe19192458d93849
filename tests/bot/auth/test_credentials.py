"""CredentialResolver: refresh timing, one refresh for many callers, rotation, failures, env fallback."""

from __future__ import annotations

import asyncio
import socket

import pytest

from bot.auth.credentials import Credential, CredentialResolver
from bot.auth.errors import AuthError, AuthUnavailable, ReauthRequired
from bot.auth.store import ApiKeyEntry, AuthStore, OAuthEntry
from tests.bot.auth.conftest import anthropic_for

T0 = 1_700_000_000.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def login(fake, store: AuthStore, clock: Clock) -> OAuthEntry:
    client = anthropic_for(fake, clock=clock)
    request = client.start()
    entry = asyncio.run(client.exchange(request, fake.approve_url(request.url)))
    store.put("anthropic", entry)
    return entry


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/oauth/token"


@pytest.fixture()
def store(home) -> AuthStore:
    return AuthStore.in_home(home)


def resolver_for(fake, store: AuthStore, clock: Clock) -> CredentialResolver:
    return CredentialResolver(
        store.path, clock=clock, anthropic_client=anthropic_for(fake, clock=clock), env={}
    )


def refreshes(fake) -> int:
    return sum(1 for r in fake.requests_to("/v1/oauth/token") if r.body["grant_type"] == "refresh_token")


def test_refresh_happens_at_expiry_minus_5_minutes_and_not_before(fake, store):
    clock = Clock(T0)
    entry = login(fake, store, clock)
    resolver = resolver_for(fake, store, clock)

    clock.now = entry.expires_at - 301
    assert asyncio.run(resolver.get("anthropic")) == Credential("anthropic", "oauth", entry.access_token)
    assert refreshes(fake) == 0

    clock.now = entry.expires_at - 300
    cred = asyncio.run(resolver.get("anthropic"))
    assert refreshes(fake) == 1
    assert cred.kind == "oauth" and cred.secret != entry.access_token
    stored = store.get("anthropic")
    assert stored.access_token == cred.secret and stored.expires_at == clock.now + 3600
    assert stored.account == "owl@example.com"


def test_concurrent_gets_share_one_refresh(fake, store):
    clock = Clock(T0)
    entry = login(fake, store, clock)
    clock.now = entry.expires_at - 10
    resolver = resolver_for(fake, store, clock)

    async def many():
        return await asyncio.gather(*(resolver.get("anthropic") for _ in range(12)))

    creds = asyncio.run(many())
    assert refreshes(fake) == 1
    assert len({c.secret for c in creds}) == 1 and creds[0].secret != entry.access_token


def test_rotated_refresh_token_is_persisted_and_used_next_time(fake, store):
    clock = Clock(T0)
    first = login(fake, store, clock)
    clock.now = first.expires_at
    asyncio.run(resolver_for(fake, store, clock).get("anthropic"))
    second = store.get("anthropic")
    assert second.refresh_token != first.refresh_token
    assert not fake.is_live_refresh_token(first.refresh_token)
    assert fake.is_live_refresh_token(second.refresh_token)

    clock.now = second.expires_at  # a new process, reading only the file
    fresh = resolver_for(fake, store, clock)
    cred = asyncio.run(fresh.get("anthropic"))
    assert cred.secret == store.get("anthropic").access_token != second.access_token


def test_invalid_grant_tells_the_user_to_run_setup(fake, store):
    store.put(
        "anthropic",
        OAuthEntry(
            access_token="sk-ant-oat01-" + "a" * 40, refresh_token="sk-ant-ort01-revoked", expires_at=T0
        ),
    )
    resolver = resolver_for(fake, store, Clock(T0 + 1))
    with pytest.raises(ReauthRequired) as err:
        asyncio.run(resolver.get("anthropic"))
    assert isinstance(err.value, AuthError)
    assert "owlia auth setup --provider anthropic" in str(err.value)
    assert "sk-ant-ort01-revoked" not in str(err.value)


@pytest.mark.parametrize("failure", ["network", "503"])
def test_transient_failure_keeps_a_still_valid_token(fake, store, failure):
    clock = Clock(T0)
    entry = login(fake, store, clock)
    if failure == "503":
        fake.fail_next(503, 503)
        client = anthropic_for(fake)
    else:
        client = anthropic_for(fake, token_url=closed_port_url())
    resolver = CredentialResolver(store.path, clock=clock, anthropic_client=client, env={})

    clock.now = entry.expires_at - 60  # inside the margin, not yet expired
    assert asyncio.run(resolver.get("anthropic")).secret == entry.access_token
    clock.now = entry.expires_at + 1  # expired: nothing usable left
    with pytest.raises(AuthUnavailable, match="expired and could not be refreshed"):
        asyncio.run(resolver.get("anthropic"))
    assert store.get("anthropic") == entry  # nothing lost


def test_api_keys_and_env_fallback(store):
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-api03-" + "e" * 40,
        "OPENAI_API_KEY": " sk-env-" + "o" * 40 + "\n",
        "GROQ_API_KEY": "gsk_" + "g" * 30,
    }
    resolver = CredentialResolver(store.path, env=env)
    expected = Credential("anthropic", "api_key", env["ANTHROPIC_API_KEY"])
    assert asyncio.run(resolver.get("anthropic")) == expected
    assert asyncio.run(resolver.get("openai")).secret == env["OPENAI_API_KEY"].strip()
    assert asyncio.run(resolver.get("groq")).secret == env["GROQ_API_KEY"]
    assert asyncio.run(resolver.get("mistral")) is None

    store.put("anthropic", ApiKeyEntry(key="sk-ant-api03-" + "s" * 40))
    assert asyncio.run(resolver.get("anthropic")).secret == "sk-ant-api03-" + "s" * 40  # stored beats env
