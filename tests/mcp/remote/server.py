"""A remote MCP server of the tests' own, built on the official SDK's server side, on loopback.

argv: PORT MODE LOG [TOKEN]
  bearer      streamable HTTP at /mcp; a request without `Authorization: Bearer TOKEN` gets 401 with
              the protected-resource metadata (RFC 9728), as the SDK's resource server answers it
  sse-bearer  the same over the legacy HTTP+SSE transport (/sse, /messages/)
  oauth       streamable HTTP at /mcp and its own OAuth 2.1 authorization server (the SDK's routes:
              RFC 8414 metadata, RFC 7591 registration, /authorize with PKCE, /token), which approves
              every authorization at once (the user's consent is not what is tested), issues access
              tokens valid for ACCESS_SECONDS (env, default 3600) and rotates refresh tokens: a refresh
              token works once. Every registration, authorization, exchange and refresh is a line of LOG.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT, MODE, LOG = int(sys.argv[1]), sys.argv[2], sys.argv[3]
TOKEN = sys.argv[4] if len(sys.argv) > 4 else ""
BASE = f"http://127.0.0.1:{PORT}"
ACCESS_SECONDS = int(os.environ.get("ACCESS_SECONDS", "3600"))


def log(event: str, **data: object) -> None:
    with open(LOG, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"event": event, **data}) + "\n")


class FixedToken:
    """The resource server's check of a header credential: one token."""

    async def verify_token(self, token: str) -> AccessToken | None:
        ok = secrets.compare_digest(token, TOKEN)
        log("bearer", ok=ok)
        return AccessToken(token=token, client_id="bearer", scopes=[]) if ok else None


class Provider:
    """An authorization server that keeps everything in memory and approves at once."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id or ""] = client_info
        log(
            "register",
            client_id=client_info.client_id,
            redirect_uris=[str(u) for u in client_info.redirect_uris or []],
        )

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        log(
            "authorize",
            client_id=client.client_id,
            pkce=bool(params.code_challenge),
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ACCESS_SECONDS,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=ACCESS_SECONDS,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        log("exchange", client_id=client.client_id)
        return self._issue(client.client_id or "", authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        if found is None:
            log("refresh", ok=False)
        return found

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotation: each refresh token works once
        log("refresh", ok=True)
        return self._issue(client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is not None and found.expires_at is not None and found.expires_at < time.time():
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main() -> None:
    if MODE == "oauth":
        server = MCPServer(
            "remote",
            auth_server_provider=Provider(),
            auth=AuthSettings(
                issuer_url=BASE,
                resource_server_url=f"{BASE}/mcp",
                validate_token_resource=True,
                client_registration_options=ClientRegistrationOptions(enabled=True),
            ),
        )
    else:
        server = MCPServer(
            "remote",
            token_verifier=FixedToken(),
            auth=AuthSettings(
                issuer_url=BASE, resource_server_url=f"{BASE}/mcp" if MODE == "bearer" else f"{BASE}/sse"
            ),
        )

    @server.tool()
    def whoami() -> str:
        """Says hello."""
        return "hello from the remote server"

    app = server.sse_app() if MODE == "sse-bearer" else server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")


main()
