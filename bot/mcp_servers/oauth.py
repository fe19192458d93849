"""OAuth 2.1 for remote MCP servers, as the MCP authorization spec describes it, through the SDK's client.

The SDK's `OAuthClientProvider` does the protocol: on a 401 it reads the server's protected-resource
metadata (RFC 9728, from `WWW-Authenticate` or the well-known URL), the authorization server's
metadata (RFC 8414), registers a client dynamically where offered (RFC 7591), runs the authorization
code flow with PKCE (S256) and the `resource` indicator (RFC 8707), and refreshes. What is ours:

* `owlia mcp login NAME` is the only place a person signs in: it listens once on a loopback port for
  the redirect (RFC 8252: `http://127.0.0.1:PORT/callback`), prints the authorization URL to open,
  and stores what it got. The bot never starts a sign-in: without a usable token or refresh token a
  call fails with the words to run `owlia mcp login NAME`.
* Tokens and the registered client live in `<home>/mcp/oauth/<name>.json` (0600, folder 0700), never
  in the registry, the audit or an error. `owlia mcp logout NAME` removes the file.
* One refresh per rotation across processes: the bot, `owlia mcp call` and another bot may hold the
  same refresh token, and a server that rotates refresh tokens accepts each one once. A refresh is
  made only under the file's lock (the same `locked_beside` lock file scheme as auth.json), and the
  file is read again under it: a process that finds the token already rotated by another takes the
  new one instead of spending the old one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from bot.mcp_servers.store import McpError, ServerDecl
from policies.kernel.files import (
    check_private_file,
    ensure_private_dir,
    read_regular_text,
    write_private_file,
)
from policies.kernel.locks import async_file_lock, lock_path_for, locked_beside

FOLDER = "oauth"
CALLBACK_PATH = "/callback"
LOGIN_TIMEOUT = 300.0


def token_path(home: Path, name: str) -> Path:
    return Path(home) / "mcp" / FOLDER / f"{name}.json"


class TokenFile:
    """The SDK's TokenStorage over one 0600 JSON file: `tokens` (with the absolute expiry) and `client`."""

    def __init__(self, home: Path, name: str) -> None:
        self.path = token_path(home, name)
        self.held = False
        """This process holds the file's lock already (a refresh): writes must not take it again."""

    def read(self) -> dict[str, Any]:
        try:
            check_private_file(self.path)
            data = json.loads(read_regular_text(self.path))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise McpError(
                f"{self.path} cannot be used ({type(exc).__name__}); remove it and sign in again with "
                "`owlia mcp login`"
            ) from None
        return data if isinstance(data, dict) else {}

    def write(self, data: dict[str, Any]) -> None:
        ensure_private_dir(self.path.parent.parent)
        ensure_private_dir(self.path.parent)
        write_private_file(self.path, json.dumps(data, sort_keys=True).encode())

    def update(self, **parts: Any) -> None:
        ensure_private_dir(self.path.parent.parent)
        ensure_private_dir(self.path.parent)
        with contextlib.ExitStack() as stack:
            if not self.held:
                stack.enter_context(locked_beside(self.path))
            data = self.read()
            data.update(parts)
            self.write(data)

    async def get_tokens(self) -> Any:
        raw = self.read().get("tokens")
        if not isinstance(raw, dict):
            return None
        body = {k: v for k, v in raw.items() if k != "expires_at"}
        if isinstance(raw.get("expires_at"), (int, float)):
            body["expires_in"] = max(0, int(raw["expires_at"] - time.time()))
        return OAuthToken.model_validate(body)

    async def set_tokens(self, tokens: Any) -> None:
        body = tokens.model_dump(mode="json", exclude_none=True)
        if tokens.expires_in is not None:
            body["expires_at"] = time.time() + int(tokens.expires_in)
        body.pop("expires_in", None)
        self.update(tokens=body)

    async def get_client_info(self) -> Any:
        raw = self.read().get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: Any) -> None:
        self.update(client=client_info.model_dump(mode="json", exclude_none=True))

    def expires_at(self) -> float | None:
        raw = self.read().get("tokens")
        value = raw.get("expires_at") if isinstance(raw, dict) else None
        return float(value) if isinstance(value, (int, float)) else None


def _metadata(redirect_uri: str) -> Any:
    return OAuthClientMetadata(
        client_name="OwliaBot",
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def provider_class() -> type:
    """The SDK's provider with what the bot adds: the stored expiry, and refreshes under the file lock."""

    class LockedRefreshProvider(OAuthClientProvider):
        storage_file: TokenFile

        async def _initialize(self) -> None:
            await super()._initialize()
            self._load_expiry()

        def _load_expiry(self) -> None:
            expiry = self.storage_file.expires_at()
            self.context.token_expiry_time = expiry

        async def _auth_flow(self, request: Any) -> Any:
            async with self.context.lock:
                if not self._initialized:
                    await self._initialize()
                if not self.context.is_token_valid() and self.context.can_refresh_token():
                    async with async_file_lock(lock_path_for(self.storage_file.path)):
                        self.storage_file.held = True
                        stored = await self.storage_file.get_tokens()  # another process may have rotated it
                        if stored is not None and (
                            self.context.current_tokens is None
                            or stored.access_token != self.context.current_tokens.access_token
                        ):
                            self.context.current_tokens = stored
                            self._load_expiry()
                        if not self.context.is_token_valid() and self.context.can_refresh_token():
                            try:
                                response = yield await self._refresh_token()
                                if not await self._handle_refresh_response(response):
                                    self._initialized = False
                            finally:
                                self.storage_file.held = False
                        self.storage_file.held = False
            flow: Any = super()._auth_flow(request)
            response = None
            try:
                while True:
                    response = yield await flow.asend(response)
            except StopAsyncIteration:
                return

    return LockedRefreshProvider


def _provider(
    decl: ServerDecl, home: Path, redirect_uri: str, redirect_handler: Any, callback_handler: Any
) -> Any:
    assert decl.url is not None
    storage = TokenFile(home, decl.name)
    made = provider_class()(
        server_url=decl.url,
        client_metadata=_metadata(redirect_uri),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    made.storage_file = storage
    return made


def bot_auth(decl: ServerDecl, home: Path | None) -> Any:
    """The bot's OAuth: stored tokens, refreshed as needed; a new sign-in is refused with what to do."""
    if home is None:
        raise McpError(f"{decl.name}: its OAuth tokens are in the OwliaBot home, which is not known here")
    storage = TokenFile(home, decl.name)
    client = storage.read().get("client")
    if not storage.read().get("tokens"):
        raise McpError(f"{decl.name} needs you to sign in: run `owlia mcp login {decl.name}`")
    redirect = (client or {}).get("redirect_uris", ["http://127.0.0.1/callback"])[0]

    async def refuse(url: str) -> None:
        raise McpError(
            f"{decl.name} asks you to sign in again (its tokens were refused or expired): run "
            f"`owlia mcp login {decl.name}`"
        )

    async def never() -> Any:
        raise McpError(f"{decl.name} asks you to sign in again: run `owlia mcp login {decl.name}`")

    return _provider(decl, home, redirect, refuse, never)


class Callback:
    """A one-shot loopback HTTP listener for the authorization redirect (RFC 8252 section 7.3)."""

    def __init__(self) -> None:
        self.result: asyncio.Future[dict[str, str]] | None = None
        self.server: asyncio.AbstractServer | None = None
        self.port = 0

    async def start(self) -> str:
        self.result = asyncio.get_running_loop().create_future()
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.split(" ")
            target = urlparse(parts[1]) if len(parts) > 2 else None
            if target is None or parts[0] != "GET" or target.path != CALLBACK_PATH:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            body = (
                b"Signed in; you can close this page."
                if "code" in query
                else b"Sign-in failed; see the terminal."
            )
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            if self.result is not None and not self.result.done():
                self.result.set_result(query)
        except (TimeoutError, OSError, ValueError):
            pass
        finally:
            await writer.drain()
            writer.close()

    async def wait(self) -> Any:
        assert self.result is not None
        try:
            query = await asyncio.wait_for(self.result, LOGIN_TIMEOUT)
        except TimeoutError:
            raise McpError(
                f"no sign-in came back within {LOGIN_TIMEOUT:g}s; run `owlia mcp login` again"
            ) from None
        if "code" not in query:
            raise McpError(
                "the authorization server refused the sign-in: "
                f"{query.get('error', 'no code')} {query.get('error_description', '')}".strip()
            )
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


async def login_auth(decl: ServerDecl, home: Path, show_url: Any) -> tuple[Any, Callback]:
    """The provider for `owlia mcp login`: a loopback callback, the URL shown with `show_url`. A stored
    client registered for another redirect (another port) is dropped so that it registers again."""
    callback = Callback()
    redirect = await callback.start()
    storage = TokenFile(home, decl.name)
    storage.update(tokens=None, client=None)  # a sign-in starts clean: old tokens and registration go

    async def open_url(url: str) -> None:
        show_url(url)

    return _provider(decl, home, redirect, open_url, callback.wait), callback


def logout(home: Path, name: str) -> bool:
    """Remove the server's tokens and registration; False when there were none."""
    path = token_path(home, name)
    if not path.parent.is_dir():
        return False
    with locked_beside(path):
        try:
            path.unlink()
        except FileNotFoundError:
            return False
    return True
