"""Two real processes (the bot and `owlia chat`, say) whose Anthropic token is due for refresh at once.

The provider rotates refresh tokens and revokes the login when a spent one comes back (the fake does
what RFC 9700 4.14.2 asks), so if both processes refresh with the same token the user is logged out.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from bot.auth.store import AuthStore
from tests.bot.auth.conftest import anthropic_for
from tests.fakes.oauth_server import FakeOAuthServer
from tests.processes import race

REPO = Path(__file__).resolve().parents[3]

# One "owlia" process: its own CredentialResolver on the shared auth.json, the real client pointed
# at the fake. It waits for "go" on stdin so both processes ask for a credential at the same moment.
CHILD = """
import asyncio, json, sys
from bot.auth.anthropic_oauth import AnthropicOAuth
from bot.auth.credentials import CredentialResolver
from bot.auth.errors import AuthError

store, authorize, token = sys.argv[1:4]
resolver = CredentialResolver(store, env={},
                              anthropic_client=AnthropicOAuth(authorize_url=authorize, token_url=token))
print("ready", flush=True)
sys.stdin.readline()
try:
    cred = asyncio.run(resolver.get("anthropic"))
    print(json.dumps({"secret": cred.secret}), flush=True)
except AuthError as exc:
    print(json.dumps({"error": str(exc)}), flush=True)
"""


def _login_due_for_refresh(fake: FakeOAuthServer, store: AuthStore) -> None:
    client = anthropic_for(fake, clock=lambda: time.time() - fake.access_ttl + 60)  # expires in 60 s
    request = client.start()
    store.put("anthropic", asyncio.run(client.exchange(request, fake.approve_url(request.url))))


def _race(fake: FakeOAuthServer, store: AuthStore, n: int) -> list[dict]:
    argv = [
        sys.executable,
        "-c",
        CHILD,
        str(store.path),
        fake.anthropic_authorize_url,
        fake.anthropic_token_url,
    ]
    done = race([argv] * n, cwd=REPO, timeout=60)
    assert [code for code, _, _ in done] == [0] * n, "\n".join(err for _, _, err in done)
    return [json.loads(out) for _, out, _ in done]


def test_two_processes_refresh_once_and_the_login_survives(home):
    with FakeOAuthServer(refresh_delay=0.5) as fake:
        store = AuthStore.in_home(home)
        _login_due_for_refresh(fake, store)
        first = store.get("anthropic")

        results = _race(fake, store, 3)

        refreshes = [
            r for r in fake.requests_to("/v1/oauth/token") if r.body["grant_type"] == "refresh_token"
        ]
        assert len(refreshes) == 1, "each process spent the same refresh token"
        assert fake.state.reused == []
        stored = store.get("anthropic")
        assert stored.refresh_token != first.refresh_token
        assert fake.is_live_refresh_token(stored.refresh_token), "the stored login was revoked: logged out"
        # Every process works with the one fresh access token; none was told to log in again.
        assert results == [{"secret": stored.access_token}] * 3
