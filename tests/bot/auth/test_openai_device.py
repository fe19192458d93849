"""OpenAI device-code login (Codex's flow) against the fake: success, slow_down, expiry, denial."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from bot.auth.errors import LoginFailed, ReauthRequired
from bot.auth.openai_device import CLIENT_ID
from tests.bot.auth.conftest import openai_for
from tests.fakes.oauth_server import FakeOAuthServer


def approve_when_ready(fake: FakeOAuthServer, *, deny: bool = False, after: float = 0.0) -> threading.Thread:
    def user() -> None:
        while not fake.user_codes:
            time.sleep(0.01)
        time.sleep(after)
        (fake.deny_device if deny else fake.approve_device)(fake.user_codes[0])

    thread = threading.Thread(target=user, daemon=True)
    thread.start()
    return thread


async def login(client):
    code = await client.request_code()
    return code, await client.wait_for_tokens(code)


def test_device_login_success(fake):
    approve_when_ready(fake, after=0.2)
    code, entry = asyncio.run(login(openai_for(fake)))
    assert code.verification_url == f"{fake.url}/codex/device" and code.interval == pytest.approx(0.05)
    assert entry.account == "owl@example.com" and entry.expires_at > time.time() + 3000
    assert fake.requests_to("/api/accounts/deviceauth/usercode")[0].body == {"client_id": CLIENT_ID}
    polls = fake.requests_to("/api/accounts/deviceauth/token")
    assert len(polls) >= 2  # some authorization_pending first
    assert polls[0].body == {"device_auth_id": code.device_auth_id, "user_code": code.user_code}
    exchange = fake.requests_to("/oauth/token")[0]
    assert exchange.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert exchange.body["redirect_uri"] == f"{fake.url}/deviceauth/callback"
    assert exchange.body["grant_type"] == "authorization_code"


def test_slow_down_is_honoured():
    # The server advertises 0.05 s but enforces 0.2 s: the first too-fast poll earns a slow_down.
    with FakeOAuthServer(device_interval=0.05, device_min_interval=0.2) as fake:
        approve_when_ready(fake, after=0.6)
        _, entry = asyncio.run(login(openai_for(fake, slow_down_step=0.25)))
        assert entry.access_token
        polls = fake.requests_to("/api/accounts/deviceauth/token")
        gaps = [b.at - a.at for a, b in zip(polls, polls[1:])]
        assert gaps[0] < 0.2  # the advertised interval was too fast once...
        assert all(gap >= 0.29 for gap in gaps[1:])  # ...then interval 0.05 + 0.25 from there on


def test_server_side_expiry():
    with FakeOAuthServer(device_ttl=0.2) as fake:
        with pytest.raises(LoginFailed, match="expired"):
            asyncio.run(login(openai_for(fake)))


def test_local_deadline():
    with FakeOAuthServer() as fake:
        with pytest.raises(LoginFailed, match="expired"):
            asyncio.run(login(openai_for(fake, max_wait=0.3)))


def test_denial(fake):
    approve_when_ready(fake, deny=True, after=0.1)
    with pytest.raises(LoginFailed, match="denied"):
        asyncio.run(login(openai_for(fake)))
    assert fake.requests_to("/oauth/token") == []


def test_refresh_rotates(fake):
    approve_when_ready(fake)
    client = openai_for(fake)
    _, first = asyncio.run(login(client))
    second = asyncio.run(client.refresh(first.refresh_token))
    assert second.refresh_token != first.refresh_token
    assert fake.requests_to("/oauth/token")[-1].body == {
        "client_id": CLIENT_ID,
        "grant_type": "refresh_token",
        "refresh_token": first.refresh_token,
    }
    with pytest.raises(ReauthRequired, match="owlia auth setup --provider openai"):
        asyncio.run(client.refresh(first.refresh_token))
