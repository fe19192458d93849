"""A local OAuth server that behaves like the real Anthropic and OpenAI (Codex) login endpoints.

Anthropic, authorization code + PKCE (JSON token endpoint at /v1/oauth/token):
  the test "user" approves with `approve(...)` or `approve_url(url)` and gets the `CODE#STATE`
  string the consent page would show. The token endpoint checks client_id, redirect_uri, state,
  and S256(code_verifier) against the approved challenge; codes are single-use and expire; refresh
  rotates the refresh token and invalidates the old one; presenting a spent refresh token again is
  treated as theft (RFC 9700 4.14.2): the token it was rotated into is revoked too, so the login is
  gone. `refresh_delay` holds each refresh answer that long, to make two clients' refreshes overlap.
  Errors are 400 `{"error", "error_description"}`.

OpenAI, device code as the Codex CLI speaks it (/api/accounts/deviceauth/usercode, .../token,
form-encoded code exchange at /oauth/token): polling answers 403 authorization_pending until the
test calls `approve_device`/`deny_device`; 400 slow_down when polled faster than
`device_min_interval`; 400 expired_token after `device_ttl`; 400 access_denied after a denial.

Every request is recorded (path, headers, parsed body, monotonic time) for assertions.

    with FakeOAuthServer() as fake:
        AnthropicOAuth(authorize_url=fake.anthropic_authorize_url, token_url=fake.anthropic_token_url)
        OpenAIDeviceLogin(issuer=fake.url)
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
ANTHROPIC_REDIRECT_URI = "https://console.anthropic.com/oauth/code/callback"
OPENAI_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def fake_jwt(claims: dict) -> str:
    return f"{_b64({'alg': 'none'})}.{_b64(claims)}.sig"


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


@dataclass
class _Code:
    challenge: str
    state: str | None
    redirect_uri: str
    client_id: str
    expires: float
    used: bool = False


@dataclass
class _Device:
    user_code: str
    expires: float
    status: str = "pending"  # pending | approved | denied
    last_poll: float | None = None
    code: str | None = None
    verifier: str | None = None


@dataclass
class _State:
    requests: list[RecordedRequest] = field(default_factory=list)
    codes: dict[str, _Code] = field(default_factory=dict)
    refresh_tokens: dict[str, str] = field(default_factory=dict)  # refresh token -> flavour
    rotated: dict[str, str] = field(default_factory=dict)  # spent refresh token -> the one it became
    reused: list[str] = field(default_factory=list)  # spent refresh tokens presented again
    access_tokens: set[str] = field(default_factory=set)
    devices: dict[str, _Device] = field(default_factory=dict)
    failures: list[int] = field(default_factory=list)  # statuses to answer the next token calls with
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeOAuthServer:
    def __init__(
        self,
        *,
        access_ttl: int = 3600,
        code_ttl: float = 300.0,
        device_ttl: float = 900.0,
        device_interval: float = 0.05,
        device_min_interval: float | None = None,
        refresh_delay: float = 0.0,
    ) -> None:
        self.access_ttl = access_ttl
        self.refresh_delay = refresh_delay
        self.code_ttl = code_ttl
        self.device_ttl = device_ttl
        self.device_interval = device_interval
        self.device_min_interval = device_interval if device_min_interval is None else device_min_interval
        self.state = _State()
        fake = self

        class Handler(_Handler):
            server_ref = fake

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- lifecycle --

    def __enter__(self) -> FakeOAuthServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def anthropic_authorize_url(self) -> str:
        return f"{self.url}/oauth/authorize"

    @property
    def anthropic_token_url(self) -> str:
        return f"{self.url}/v1/oauth/token"

    @property
    def requests(self) -> list[RecordedRequest]:
        return list(self.state.requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.state.requests if r.path == path]

    def fail_next(self, *statuses: int) -> None:
        """Answer the next token-endpoint calls with these HTTP statuses (e.g. 503)."""
        self.state.failures.extend(statuses)

    # -- the "user" at the consent page (Anthropic) --

    def approve(
        self,
        challenge: str,
        state: str,
        *,
        redirect_uri: str = ANTHROPIC_REDIRECT_URI,
        client_id: str = ANTHROPIC_CLIENT_ID,
    ) -> str:
        """Approve a login; returns the authorization code the consent page would show."""
        code = secrets.token_urlsafe(24)
        with self.state.lock:
            expires = time.monotonic() + self.code_ttl
            self.state.codes[code] = _Code(challenge, state, redirect_uri, client_id, expires)
        return code

    def approve_url(self, url: str) -> str:
        """Visit the printed authorization URL like claude.ai would; return the pasted `CODE#STATE`."""
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        assert query.get("response_type") == "code", query
        assert query.get("code") == "true", "claude.ai shows the code only with code=true"
        assert query.get("code_challenge_method") == "S256", query
        assert query.get("client_id") == ANTHROPIC_CLIENT_ID, query
        assert set(query.get("scope", "").split()) >= {"user:inference"}, query
        code = self.approve(
            query["code_challenge"],
            query["state"],
            redirect_uri=query["redirect_uri"],
            client_id=query["client_id"],
        )
        return f"{code}#{query['state']}"

    # -- the "user" at the device page (OpenAI) --

    def _device_by_user_code(self, user_code: str) -> _Device:
        return next(d for d in self.state.devices.values() if d.user_code == user_code)

    def approve_device(self, user_code: str) -> None:
        with self.state.lock:
            device = self._device_by_user_code(user_code)
            device.verifier = secrets.token_urlsafe(32)
            device.code = secrets.token_urlsafe(24)
            self.state.codes[device.code] = _Code(
                _s256(device.verifier),
                None,
                f"{self.url}/deviceauth/callback",
                OPENAI_CLIENT_ID,
                time.monotonic() + self.code_ttl,
            )
            device.status = "approved"

    def deny_device(self, user_code: str) -> None:
        with self.state.lock:
            self._device_by_user_code(user_code).status = "denied"

    @property
    def user_codes(self) -> list[str]:
        return [d.user_code for d in self.state.devices.values()]

    def is_live_refresh_token(self, token: str) -> bool:
        return token in self.state.refresh_tokens

    # -- token issuing --

    def _issue(self, flavour: str, now_epoch: float) -> dict[str, Any]:
        if flavour == "anthropic":
            access = "sk-ant-oat01-" + secrets.token_urlsafe(48)
            refresh = "sk-ant-ort01-" + secrets.token_urlsafe(48)
            body = {
                "token_type": "Bearer",
                "access_token": access,
                "refresh_token": refresh,
                "expires_in": self.access_ttl,
                "scope": "user:inference user:profile",
                "account": {"uuid": "acc-1", "email_address": "owl@example.com"},
            }
        else:
            access = fake_jwt({"exp": int(now_epoch) + self.access_ttl, "rnd": secrets.token_urlsafe(16)})
            refresh = "rt_" + secrets.token_urlsafe(48)
            body = {
                "access_token": access,
                "refresh_token": refresh,
                "id_token": fake_jwt({"email": "owl@example.com"}),
            }
        self.state.refresh_tokens[refresh] = flavour
        self.state.access_tokens.add(access)
        return body


def _error(error: str, description: str, status: int = 400) -> tuple[int, dict]:
    return status, {"error": error, "error_description": description}


class _Handler(BaseHTTPRequestHandler):
    server_ref: FakeOAuthServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        fake = self.server_ref
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        ctype = self.headers.get("content-type", "")
        if ctype.startswith("application/x-www-form-urlencoded"):
            body: Any = dict(urllib.parse.parse_qsl(raw.decode()))
        else:
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
        if fake.refresh_delay and isinstance(body, dict) and body.get("grant_type") == "refresh_token":
            time.sleep(fake.refresh_delay)  # outside the lock: concurrent refreshes overlap like on the net
        with fake.state.lock:
            fake.state.requests.append(
                RecordedRequest("POST", self.path, dict(self.headers.items()), body, time.monotonic())
            )
            routes = {
                "/v1/oauth/token": lambda: self._anthropic_token(fake, body, ctype),
                "/api/accounts/deviceauth/usercode": lambda: self._usercode(fake, body),
                "/api/accounts/deviceauth/token": lambda: self._device_poll(fake, body),
                "/oauth/token": lambda: self._openai_token(fake, body, ctype),
            }
            route = routes.get(self.path)
            if route is None:
                status, reply = 404, {"error": "not_found"}
            elif self.path.endswith("token") and "deviceauth" not in self.path and fake.state.failures:
                status, reply = (
                    fake.state.failures.pop(0),
                    {"error": "server_error", "error_description": "scripted failure"},
                )
            else:
                status, reply = route()
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # -- Anthropic --

    def _anthropic_token(self, fake: FakeOAuthServer, body: Any, ctype: str) -> tuple[int, dict]:
        if not ctype.startswith("application/json") or not isinstance(body, dict):
            return _error("invalid_request", "expected a JSON body")
        if body.get("client_id") != ANTHROPIC_CLIENT_ID:
            return _error("invalid_client", "unknown client_id", 401)
        grant = body.get("grant_type")
        if grant == "authorization_code":
            return self._redeem(fake, body, "anthropic", check_state=True)
        if grant == "refresh_token":
            return self._refresh(fake, body, "anthropic")
        return _error("unsupported_grant_type", f"grant_type {grant!r}")

    def _redeem(
        self, fake: FakeOAuthServer, body: dict, flavour: str, *, check_state: bool
    ) -> tuple[int, dict]:
        code = fake.state.codes.get(str(body.get("code")))
        if code is None or code.used:
            return _error("invalid_grant", "Invalid or already used authorization code")
        code.used = True  # single use, even when the rest of the request is wrong
        if time.monotonic() > code.expires:
            return _error("invalid_grant", "Authorization code expired")
        if body.get("client_id") != code.client_id:
            return _error("invalid_grant", "client_id does not match the authorization")
        if body.get("redirect_uri") != code.redirect_uri:
            return _error("invalid_grant", "redirect_uri does not match the authorization")
        if check_state and body.get("state") != code.state:
            return _error("invalid_grant", "state does not match the authorization")
        if _s256(str(body.get("code_verifier", ""))) != code.challenge:
            return _error("invalid_grant", "Invalid code verifier")
        return 200, fake._issue(flavour, time.time())

    def _refresh(self, fake: FakeOAuthServer, body: dict, flavour: str) -> tuple[int, dict]:
        token = str(body.get("refresh_token"))
        if token in fake.state.rotated:  # reuse of a spent token: revoke everything rotated from it
            fake.state.reused.append(token)
            while token in fake.state.rotated:
                token = fake.state.rotated[token]
                fake.state.refresh_tokens.pop(token, None)
            return _error("invalid_grant", "Refresh token already used; the login was revoked")
        if fake.state.refresh_tokens.get(token) != flavour:
            return _error("invalid_grant", "Refresh token not found or invalid")
        del fake.state.refresh_tokens[token]  # rotation: the old one is spent
        body_out = fake._issue(flavour, time.time())
        fake.state.rotated[token] = body_out["refresh_token"]
        return 200, body_out

    # -- OpenAI / Codex --

    def _usercode(self, fake: FakeOAuthServer, body: Any) -> tuple[int, dict]:
        if not isinstance(body, dict) or body.get("client_id") != OPENAI_CLIENT_ID:
            return _error("invalid_client", "unknown client_id", 401)
        device_id = "deviceauth_" + secrets.token_urlsafe(16)
        user_code = f"{secrets.randbelow(10**4):04d}-{secrets.token_hex(2).upper()}"
        fake.state.devices[device_id] = _Device(user_code, time.monotonic() + fake.device_ttl)
        # Like the real endpoint, the interval arrives as a string.
        return 200, {
            "device_auth_id": device_id,
            "user_code": user_code,
            "interval": str(fake.device_interval),
        }

    def _device_poll(self, fake: FakeOAuthServer, body: Any) -> tuple[int, dict]:
        device = fake.state.devices.get(str((body or {}).get("device_auth_id")))
        if device is None or device.user_code != (body or {}).get("user_code"):
            return _error("invalid_request", "unknown device authorization", 400)
        now = time.monotonic()
        too_fast = device.last_poll is not None and now - device.last_poll < fake.device_min_interval
        device.last_poll = now
        if now > device.expires:
            return _error("expired_token", "device code expired")
        if device.status == "denied":
            return _error("access_denied", "the user denied the request")
        if too_fast:
            return _error("slow_down", "polling too fast")
        if device.status == "pending":
            return _error("authorization_pending", "waiting for the user", 403)
        device.status = "redeemed"
        return 200, {
            "authorization_code": device.code,
            "code_challenge": _s256(device.verifier or ""),
            "code_verifier": device.verifier,
        }

    def _openai_token(self, fake: FakeOAuthServer, body: Any, ctype: str) -> tuple[int, dict]:
        if not isinstance(body, dict):
            return _error("invalid_request", "no body")
        if body.get("client_id") != OPENAI_CLIENT_ID:
            return _error("invalid_client", "unknown client_id", 401)
        grant = body.get("grant_type")
        if grant == "authorization_code":
            if not ctype.startswith("application/x-www-form-urlencoded"):
                return _error("invalid_request", "the code exchange is form-encoded")
            return self._redeem(fake, body, "openai", check_state=False)
        if grant == "refresh_token":
            return self._refresh(fake, body, "openai")
        return _error("unsupported_grant_type", f"grant_type {grant!r}")
