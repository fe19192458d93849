"""`owlia auth`: log in to the LLM providers (or store API keys), see what is stored, log out.

Secrets are read from hidden prompts or stdin, never from arguments (which land in shell history
and `ps`), and every secret this command prints is masked.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any, Optional

import typer

if TYPE_CHECKING:
    from bot.auth.anthropic_oauth import AnthropicOAuth
    from bot.auth.openai_device import OpenAIDeviceLogin
    from bot.auth.store import AuthStore, Entry, OAuthEntry

from policies.kernel.cli import fail, home_of, print_json, run

app = typer.Typer(help="Provider logins (OAuth) and API keys for the LLM.", no_args_is_help=True)

OAUTH_PROVIDERS = ("anthropic", "openai")
KEY_PREFIXES = {"anthropic": "sk-ant-", "openai": "sk-"}
_PROVIDER_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


def anthropic_client() -> AnthropicOAuth:
    """The real endpoints; tests replace this factory to point at the local fake server."""
    from bot.auth.anthropic_oauth import AnthropicOAuth  # lazy: 85 ms, 18148 KiB

    return AnthropicOAuth()


def openai_client() -> OpenAIDeviceLogin:
    from bot.auth.openai_device import OpenAIDeviceLogin  # lazy: 86 ms, 18188 KiB

    return OpenAIDeviceLogin()


def _store(ctx: typer.Context) -> AuthStore:
    from bot.auth.store import AuthStore  # lazy: 71 ms, 15260 KiB

    return AuthStore.in_home(home_of(ctx))


def _provider(name: str) -> str:
    name = name.strip().lower()
    if not _PROVIDER_NAME.match(name):
        fail(f"bad provider name {name!r}: use lowercase letters, digits, '-', '_' or '.'")
    return name


def _when(epoch: float, now: float) -> str:
    stamp = dt.datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M %Z")
    left = int(epoch - now)
    return f"{stamp} (in {left // 60} min)" if left >= 0 else f"{stamp} ({-left // 60} min ago)"


def _save(ctx: typer.Context, provider: str, entry: Entry) -> AuthStore:
    from bot.auth.errors import AuthError  # lazy: 76 ms, 15244 KiB

    store = _store(ctx)
    try:
        previous = store.get(provider)
        store.put(provider, entry)
    except AuthError as exc:
        fail(str(exc))
    if previous is not None:
        typer.echo(f"replaced the {provider} {previous.kind} entry that was stored before")
    return store


def _report_oauth(provider: str, entry: OAuthEntry, store: AuthStore) -> None:
    from bot.auth.credentials import REFRESH_MARGIN  # lazy: 74 ms, 15224 KiB (2 imports)
    from bot.auth.mask import mask

    who = f" as {entry.account}" if entry.account else ""
    typer.echo(f"logged in to {provider}{who}; saved to {store.path} (mode 0600)")
    typer.echo(
        f"  access token {mask(entry.access_token)}, expires {_when(entry.expires_at, time.time())}; "
        f"refreshed automatically {int(REFRESH_MARGIN // 60)} minutes before expiry"
    )


def _setup_anthropic(ctx: typer.Context) -> None:
    from bot.auth.errors import AuthError  # lazy: 72 ms, 15244 KiB

    client = anthropic_client()
    request = client.start()
    typer.echo("1. Open this URL in a browser and approve access with your Claude account:\n")
    typer.echo(f"   {request.url}\n")
    typer.echo("2. Claude then shows a code of the form CODE#STATE. Copy all of it.")
    pasted = typer.prompt("3. Paste it here (input hidden)", hide_input=True)
    try:
        entry = run(client.exchange(request, pasted))
    except AuthError as exc:
        fail(str(exc))
    _report_oauth("anthropic", entry, _save(ctx, "anthropic", entry))


def _setup_openai(ctx: typer.Context) -> None:
    from bot.auth.errors import AuthError  # lazy: 75 ms, 15248 KiB

    client = openai_client()

    async def login() -> OAuthEntry:
        code = await client.request_code()
        minutes = max(1, round((code.deadline - time.monotonic()) / 60))
        typer.echo(f"1. Open {code.verification_url} and sign in to your ChatGPT account")
        typer.echo(f"2. Enter this one-time code (expires in {minutes} minutes): {code.user_code}")
        typer.echo("   Device codes are a phishing target: never enter one somebody sent you.")
        typer.echo("Waiting for approval… (Ctrl-C to cancel)")
        return await client.wait_for_tokens(code)

    try:
        entry = run(login())
    except AuthError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("cancelled; nothing was saved", code=130)
    _report_oauth("openai", entry, _save(ctx, "openai", entry))
    typer.echo(
        "  note: this is a ChatGPT-account token (as Codex uses); api.openai.com does not accept it "
        "as an API key. For the public API run `owlia auth setup --provider openai --method api-key`."
    )


def check_api_key(provider: str, key: str) -> str:
    """Catch pasting the wrong thing (a URL, a token, half a key) before storing it."""
    key = key.strip()
    if not key:
        raise ValueError("no API key given")
    if any(ch.isspace() for ch in key) or not key.isprintable():
        raise ValueError("the API key contains spaces or control characters; paste just the key")
    prefix = KEY_PREFIXES.get(provider)
    if prefix and not key.startswith(prefix):
        raise ValueError(f"{provider} API keys start with {prefix!r}; this one starts with {key[:3]!r}…")
    if provider == "anthropic" and key.startswith("sk-ant-oat"):
        raise ValueError("that is an Anthropic OAuth token, not an API key: use --method oauth")
    if len(key) < 20:
        raise ValueError("that is too short to be an API key")
    return key


def _setup_api_key(ctx: typer.Context, provider: str, from_stdin: bool) -> None:
    from bot.auth.mask import mask  # lazy: 74 ms, 15220 KiB (2 imports)
    from bot.auth.store import ApiKeyEntry

    if from_stdin:
        raw = sys.stdin.read()
    else:
        raw = typer.prompt(f"{provider} API key (input hidden)", hide_input=True)
    try:
        key = check_api_key(provider, raw)
    except ValueError as exc:
        fail(str(exc))
    store = _save(ctx, provider, ApiKeyEntry(key=key))
    typer.echo(f"saved {provider} API key {mask(key)} to {store.path} (mode 0600)")


@app.command("setup")
@app.command("setup")
def setup(
    ctx: typer.Context,
    provider: str = typer.Option(
        ...,
        "--provider",
        prompt="Provider (anthropic, openai, or another name)",
        help="anthropic, openai, or any other provider name (API key only).",
    ),
    method: Optional[str] = typer.Option(
        None, "--method", help="oauth | api-key (default: oauth for anthropic/openai)."
    ),
    api_key_stdin: bool = typer.Option(False, "--api-key-stdin", help="Read the API key from stdin."),
) -> None:
    """Log in (Anthropic: OAuth + PKCE, OpenAI: device code) or store an API key."""
    provider = _provider(provider)
    if method is None:
        method = "api-key" if api_key_stdin or provider not in OAUTH_PROVIDERS else "oauth"
    method = method.strip().lower().replace("_", "-")
    if method == "api-key":
        _setup_api_key(ctx, provider, api_key_stdin)
    elif method != "oauth":
        fail(f"unknown --method {method!r}: use oauth or api-key")
    elif api_key_stdin:
        fail("--api-key-stdin goes with --method api-key")
    elif provider == "anthropic":
        _setup_anthropic(ctx)
    elif provider == "openai":
        _setup_openai(ctx)
    else:
        fail(f"OAuth login is available for anthropic and openai only; use --method api-key for {provider}")


def describe(provider: str, entry: Entry, now: float) -> dict[str, Any]:
    """One status row; holds masked secrets only."""
    from bot.auth.credentials import needs_refresh  # lazy: 78 ms, 15232 KiB (3 imports)
    from bot.auth.mask import mask
    from bot.auth.store import ApiKeyEntry

    if isinstance(entry, ApiKeyEntry):
        return {"provider": provider, "source": "auth.json", "kind": "api_key", "secret": mask(entry.key)}
    state = "expired" if now >= entry.expires_at else "refresh due" if needs_refresh(entry, now) else "valid"
    return {
        "provider": provider,
        "source": "auth.json",
        "kind": "oauth",
        "secret": mask(entry.access_token),
        "account": entry.account,
        "scopes": list(entry.scopes),
        "expires_at": int(entry.expires_at),
        "expires_in": int(entry.expires_at - now),
        "state": state,
        "auto_refresh": True,
    }


@app.command("status")
@app.command("status")
def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """What is stored per provider (secrets masked), expiry, and the env-var fallbacks."""
    from bot.auth.credentials import env_var_for  # lazy: 77 ms, 15224 KiB (3 imports)
    from bot.auth.errors import AuthError
    from bot.auth.mask import mask

    store = _store(ctx)
    try:
        entries = store.load()
    except AuthError as exc:
        fail(str(exc))
    now = time.time()
    rows = [describe(name, entry, now) for name, entry in sorted(entries.items())]
    for provider in OAUTH_PROVIDERS:
        var = env_var_for(provider)
        if provider not in entries and os.environ.get(var, "").strip():
            rows.append(
                {
                    "provider": provider,
                    "source": f"env {var}",
                    "kind": "api_key",
                    "secret": mask(os.environ[var].strip()),
                }
            )
    if as_json:
        print_json({"path": str(store.path), "providers": rows})
        return
    if not rows:
        typer.echo(f"nothing stored in {store.path}; run `owlia auth setup --provider anthropic`")
        return
    typer.echo(f"{store.path}:")
    for row in rows:
        line = f"  {row['provider']:<10} {row['kind']:<8} {row['secret']:<12} from {row['source']}"
        if row["kind"] == "oauth":
            who = f", account {row['account']}" if row["account"] else ""
            line += (
                f"{who}, expires {_when(row['expires_at'], now)}, {row['state']}; "
                "refreshed automatically when used"
            )
        typer.echo(line)


@app.command("logout")
@app.command("logout")
def logout(
    ctx: typer.Context,
    provider: Optional[str] = typer.Option(None, "--provider", help="Remove this provider's entry."),
    all_: bool = typer.Option(False, "--all", help="Remove every stored entry."),
) -> None:
    """Delete stored logins/keys from auth.json (tokens are not revoked at the provider)."""
    from bot.auth.errors import AuthError  # lazy: 79 ms, 15232 KiB (2 imports)
    from bot.auth.store import OAuthEntry

    if (provider is None) == (not all_):
        fail("give either --provider NAME or --all")
    store = _store(ctx)
    try:
        removed = store.remove(None if all_ else [_provider(provider or "")])
    except AuthError as exc:
        fail(str(exc))
    if not removed:
        typer.echo(f"nothing stored for {provider}" if provider else "nothing stored")
        return
    for name, entry in sorted(removed.items()):
        typer.echo(f"removed {name} ({entry.kind}) from {store.path}")
    if any(isinstance(e, OAuthEntry) for e in removed.values()):
        typer.echo("deleted here only; to revoke the login itself, remove the app in your account settings")
