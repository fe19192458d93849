"""`owlia doctor`: is everything this home needs installed, configured, reachable and logged in?

Liveness, not security (that is `owlia security audit`). Every failure names the command that
fixes it. Probes talk to the real endpoints with short timeouts and never echo an exception: a
Telegram token sits in the URL path, and an error message would carry it to the terminal.
"""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from bot.ops.checks import Check, Finding, Report, Severity, Skip, run_checks
from bot.ops.context import OpsContext
from bot.ops.sandbox import probe_sandbox

CRIT, WARN, INFO = Severity.CRITICAL, Severity.WARNING, Severity.INFO
MIN_PYTHON = (3, 11)
DEFAULT_LLM_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
TELEGRAM_API = "https://api.telegram.org"
DISCORD_API = "https://discord.com/api/v10"
DEFAULT_BRIDGE_URL = "https://127.0.0.1:8765"
BRIDGE_URL_ENV = "OWLIA_BRIDGE_URL"
BRIDGE_CA_ENV = "OWLIA_BRIDGE_CA"  # the bridge's own certificate, to verify it beyond loopback (compose)


def check_python(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-PY-001: the interpreter and every installed dependency satisfy owliabot's requirements.

    Versions are compared with `packaging` when it is installed (it is not a dependency, and the
    slim images lack it); without it, each requirement is at least checked to be installed.
    """
    if sys.version_info[:2] < MIN_PYTHON:
        yield Finding(
            "DOC-PY-001",
            CRIT,
            f"Python {sys.version.split()[0]} is older than 3.11",
            "install Python 3.11+ and reinstall: `pip install 'owliabot[bot]'`",
        )
    try:
        requires = metadata.requires("owliabot") or []
    except metadata.PackageNotFoundError:
        yield Finding(
            "DOC-PY-001", CRIT, "owliabot is not installed in this environment", "pip install 'owliabot[bot]'"
        )
        return
    for line in requires:
        name, spec, extra = _split_requirement(line)
        if extra not in (None, "bot", "bridge"):
            continue  # dev extras and the like are not needed to run
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            yield Finding("DOC-PY-001", CRIT, f"{name} is not installed", f"pip install '{name}{spec}'")
            continue
        if spec and not _satisfies(version, spec):
            yield Finding(
                "DOC-PY-001", CRIT, f"{name} {version} does not satisfy {spec}", f"pip install '{name}{spec}'"
            )


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*?)\s*(?:;(.*))?$")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _split_requirement(line: str) -> tuple[str, str, str | None]:
    """`name[x]>=1,<2; extra == "bot"` -> ("name", ">=1,<2", "bot")."""
    match = _REQUIREMENT.match(line)
    if match is None:
        return line.strip(), "", None
    extra = _EXTRA.search(match.group(3) or "")
    return match.group(1), match.group(2).replace(" ", ""), extra.group(1) if extra else None


def _satisfies(version: str, spec: str) -> bool:
    try:
        from packaging.specifiers import SpecifierSet  # lazy: 4 ms, 284 KiB
    except ImportError:
        return True  # presence was checked; without packaging we do not guess at version rules
    return SpecifierSet(spec).contains(version, prereleases=True)


def check_config(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-CONF-001."""
    if not (ctx.home / "config.yaml").exists():
        yield Finding("DOC-CONF-001", CRIT, f"no config.yaml in {ctx.home}", "owlia init")
    elif ctx.config_error:
        yield Finding("DOC-CONF-001", CRIT, ctx.config_error, f"edit {ctx.home / 'config.yaml'}")


def check_workspace(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-WS-001: the context files the system prompt is built from."""
    from bot.workspace import context_file_problems  # lazy: 4 ms, 948 KiB (2 imports)
    from bot.workspace.templates import TEMPLATES

    workspace = ctx.need_config().workspace(ctx.home)
    for problem in context_file_problems(workspace):
        yield Finding(
            "DOC-WS-001", WARN, problem, "fix the file by hand; `owlia init` recreates only missing ones"
        )
    missing = [
        name for name in TEMPLATES if not (workspace / name).exists() and not (workspace / name).is_symlink()
    ]
    if missing:
        yield Finding("DOC-WS-001", WARN, f"workspace {workspace} lacks {', '.join(missing)}", "owlia init")


def check_llm(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-LLM-001 (a credential per profile) / DOC-LLM-002 (its endpoint answers HTTP)."""
    from bot.auth.credentials import env_var_for  # lazy: 19 ms, 3028 KiB (4 imports)
    from bot.auth.errors import AuthStoreError
    from bot.auth.store import AuthStore
    from bot.llm.models import UnknownModel, resolve_model

    store = AuthStore.in_home(ctx.home)
    usable = credentialed = 0
    for profile in ctx.need_config().bot.llm.profiles:
        try:
            ref = resolve_model(profile.model)
        except UnknownModel as exc:
            yield Finding(
                "DOC-LLM-001",
                CRIT,
                f"profile {profile.name}: {exc}",
                f"fix bot.llm.profiles ({profile.name})",
            )
            continue
        credential = profile.credential or profile.name
        try:
            stored = store.get(credential)
        except AuthStoreError as exc:
            yield Finding("DOC-LLM-001", CRIT, f"auth.json cannot be used: {exc}", "owlia auth setup")
            return
        if stored is None and not ctx.env.get(env_var_for(credential), "").strip():
            yield Finding(
                "DOC-LLM-001",
                WARN,
                f"profile {profile.name} has no credential (auth.json entry "
                f"{credential!r} or {env_var_for(credential)})",
                "owlia auth setup",
            )
            continue
        credentialed += 1
        url = profile.base_url or ref.info.default_base_url or DEFAULT_LLM_URLS.get(ref.info.api)
        status = http_status(url, timeout=ctx.http_timeout) if url else None
        if status is None:
            yield Finding(
                "DOC-LLM-002",
                WARN,
                f"profile {profile.name}: {url} is not reachable",
                "check the network / proxy, or the profile's base_url",
            )
            continue
        usable += 1
    if usable == 0 and credentialed == 0:
        # a console-only user: slash commands, balances and transfers work without a model
        yield Finding(
            "DOC-LLM-001",
            WARN,
            "no language model is set up: the bot answers slash commands "
            "(/balance, /send, /status) but cannot chat",
            "owlia auth setup",
        )
    elif usable == 0:
        yield Finding(
            "DOC-LLM-001", CRIT, "no model profile is usable: the agent cannot answer", "owlia auth setup"
        )


def check_signer(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-SIGNER-001: the signer answers on its socket, with this home's token, and is unlocked."""
    import asyncio  # lazy: 40 ms, 3496 KiB (4 imports)

    from signer.wire.client import SignerClient
    from signer.wire.exchange import SignerError, SignerUnavailable, load_token
    from signer.wire.replies import StatusReply

    paths = ctx.signer_paths()
    try:
        token = load_token(ctx.secrets_dir / "signer.token")
    except SignerError as exc:
        yield Finding(
            "DOC-SIGNER-001",
            CRIT,
            exc.message,
            "as the signer's user: owlia signer client add bot --scope sign "
            "--out <home>/secrets/signer.token",
        )
        return

    async def status() -> StatusReply:
        async with SignerClient(paths.socket, token, timeout=ctx.rpc_timeout) as client:
            return await client.status()

    unreachable = (
        "start it: `systemctl start owliabot-signer`, `docker compose up -d signer` or `owlia signer serve`"
    )
    try:
        result = asyncio.run(asyncio.wait_for(status(), ctx.rpc_timeout))
    except SignerUnavailable as exc:
        yield Finding("DOC-SIGNER-001", CRIT, f"no signer answering: {exc.message}", unreachable)
        return
    except SignerError as exc:
        yield Finding(
            "DOC-SIGNER-001",
            CRIT,
            f"the signer refused: {exc.message}",
            "check secrets/signer.token; reissue with `owlia signer client add`",
        )
        return
    except (OSError, asyncio.TimeoutError) as exc:
        yield Finding(
            "DOC-SIGNER-001", CRIT, f"no signer on {paths.socket} ({type(exc).__name__})", unreachable
        )
        return
    if not result.unlocked:
        yield Finding("DOC-SIGNER-001", CRIT, "the signer is locked", "restart it with its passphrase")
    if result.frozen:
        yield Finding(
            "DOC-SIGNER-001",
            WARN,
            "the signer is frozen (kill switch): it signs nothing",
            "unfreeze from the companion app when you are sure",
        )


def check_chains(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-CHAIN-001: each chain's RPC answers and reports the chain id the config claims."""
    from bot.devchain import rpc  # lazy: 2 ms, 924 KiB

    for chain in ctx.need_config().chains:
        try:
            got = int(rpc(chain.rpc_url, "eth_chainId", timeout=ctx.rpc_timeout), 16)
        except Exception as exc:  # noqa: BLE001 - any failure means unreachable
            yield Finding(
                "DOC-CHAIN-001",
                CRIT,
                f"chain {chain.id} ({chain.name}): RPC not reachable ({type(exc).__name__})",
                f"check chains[{chain.id}].rpc_url, or start it (`owlia up`)",
            )
            continue
        if got != chain.id:
            yield Finding(
                "DOC-CHAIN-001",
                CRIT,
                f"chain {chain.name}: the RPC reports chain id {got}, config says {chain.id}",
                "point rpc_url at the right network; never sign against a mismatched chain",
            )


def check_channels(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-CHAN-001: every enabled channel with a token logs in (getMe / users/@me)."""
    channels = ctx.need_config().bot.channels
    probes = {
        # Bot API methods take POST (as the telegram client sends them); Discord's REST is plain GET with a Bot header
        "telegram": lambda token, base: _call_json(
            "POST", f"{base or TELEGRAM_API}/bot{token}/getMe", {}, ctx.http_timeout
        ),
        "discord": lambda token, base: _call_json(
            "GET", f"{base or DISCORD_API}/users/@me", {"Authorization": f"Bot {token}"}, ctx.http_timeout
        ),
    }
    checked = 0
    for name, probe in probes.items():
        settings = getattr(channels, name)
        token = ctx.channel_token(name)
        if not settings.enabled or token is None:
            continue
        checked += 1
        status, body = probe(token, settings.api_base)
        if status != 200 or not _logged_in(name, body):
            what = (
                "rejected the token"
                if status in (401, 403, 404)
                else f"answered {status}"
                if status
                else "is not reachable"
            )
            yield Finding(
                "DOC-CHAN-001",
                CRIT,
                f"{name}: the API {what}",
                f"put a valid token in {ctx.secrets_dir / (name + '.token')} (0600) or ${settings.token_env}",
            )
    if checked == 0:
        raise Skip("no channel has a token (console only)")


def _logged_in(channel: str, body: object) -> bool:
    """getMe answers {"ok": true, "result": {...}}; users/@me answers the user object itself."""
    if not isinstance(body, dict):
        return False
    return body.get("ok") is True if channel == "telegram" else "id" in body


def check_bridge(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-BRIDGE-001: the companion bridge answers and a companion is connected to it.

    The bridge is optional (without it escalated requests wait, unapproved, until they expire), so
    no bridge at all is a skip; a bridge with no companion connected is a warning.
    """
    given = ctx.env.get(BRIDGE_URL_ENV)
    # `owlia bridge serve` speaks http on 127.0.0.1:8765 unless given --tls-cert (then https, as in compose):
    # unnamed, the bridge is looked for at both, so a default bridge is never reported missing.
    candidates = (
        [given.rstrip("/")] if given else [DEFAULT_BRIDGE_URL, DEFAULT_BRIDGE_URL.replace("https", "http", 1)]
    )
    for url in candidates:
        status, body = _call_json(
            "GET",
            f"{url}/v1/health",
            {},
            ctx.http_timeout,
            loopback_tls=True,
            cafile=ctx.env.get(BRIDGE_CA_ENV),
        )
        if status is not None:
            break
    if status is None:
        raise Skip(
            f"no companion bridge at {' or '.join(candidates)} (optional; set {BRIDGE_URL_ENV} if it runs "
            "elsewhere)"
        )
    if status != 200 or not isinstance(body, dict) or body.get("ok") is not True:
        yield Finding(
            "DOC-BRIDGE-001",
            CRIT,
            f"the companion bridge at {url} answered {status}",
            "docker compose logs bridge / journalctl, then restart it",
        )
    elif not body.get("connections"):
        yield Finding(
            "DOC-BRIDGE-001",
            WARN,
            "the bridge runs but no companion is connected: escalated requests cannot be approved",
            "owlia companion pair, then open the app",
        )


def check_sandbox(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-SANDBOX-001."""
    probe = probe_sandbox(ctx.need_config().bot.skills)
    if probe.backend is None:
        yield Finding(
            "DOC-SANDBOX-001",
            WARN,
            f"no skill sandbox: {probe.detail}; skills will not run",
            "apt-get install bubblewrap",
        )


def http_status(url: str, *, timeout: float) -> int | None:
    """Any HTTP answer (even 404) proves the endpoint is reachable; None if nothing answered."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=timeout) as resp:  # noqa: S310
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return None


def _call_json(
    method: str,
    url: str,
    headers: dict[str, str],
    timeout: float,
    *,
    loopback_tls: bool = False,
    cafile: str | None = None,
) -> tuple[int | None, object]:
    """(status, JSON body) or (None, None) when nothing answered. Never raises, never echoes the URL.

    `cafile`: verify the server against that certificate (hostname included) instead of the system's."""
    context = None
    if cafile and url.startswith("https://"):
        try:
            context = ssl.create_default_context(cafile=cafile)
        except (OSError, ValueError):
            return None, None
    elif loopback_tls and url.startswith("https://127.0.0.1"):
        context = ssl._create_unverified_context()  # our own bridge's self-signed cert, probed on loopback
    request = urllib.request.Request(
        url,
        data=b"" if method == "POST" else None,
        method=method,
        headers={"User-Agent": "owliabot-doctor", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:  # noqa: S310
            return resp.status, json.loads(resp.read(1 << 20))
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (OSError, ValueError):
        return None, None


COMPOSE_HINT = (
    "install Compose v2 (the `docker compose` plugin, {min} or newer): Docker's apt repository "
    "`docker-compose-plugin`, or its release binary as ~/.docker/cli-plugins/docker-compose; "
    "Debian 12's `docker-compose` package (1.29) cannot read the file"
)


def compose_version_finding(text: str | None) -> Finding | None:
    """DOC-COMPOSE-001 for the output of `docker compose version --short` (None: no Compose v2)."""
    from bot.ops.compose import MIN_COMPOSE_VERSION  # lazy: 5 ms, 1128 KiB

    floor = ".".join(map(str, MIN_COMPOSE_VERSION))
    hint = COMPOSE_HINT.format(min=floor)
    if text is None:
        return Finding(
            "DOC-COMPOSE-001", CRIT, "docker is installed but Compose v2 (`docker compose`) is not", hint
        )
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", text.strip())
    if match is None:
        return Finding("DOC-COMPOSE-001", WARN, "could not read the Compose version", hint)
    found = tuple(int(part) for part in match.groups())
    if found < MIN_COMPOSE_VERSION:
        return Finding("DOC-COMPOSE-001", CRIT, f"Compose {match.group(0)} is older than {floor}", hint)
    return None


COMPOSE_MARK = "# OwliaBot on docker compose."  # the first line of bot.ops.compose.HEADER


def compose_setups(ctx: OpsContext) -> list[Path]:
    """The compose files `owlia init --docker` wrote that this doctor can see: in the home's `docker/`
    (init's default) or the directory it runs in (`--dir DIR`, then `cd DIR`, as the guide does)."""
    found = []
    for candidate in (ctx.home / "docker" / "docker-compose.yml", Path.cwd() / "docker-compose.yml"):
        try:
            with open(candidate, encoding="utf-8") as handle:
                if handle.readline().startswith(COMPOSE_MARK):
                    found.append(candidate)
        except (OSError, UnicodeDecodeError):
            continue
    return found


def check_compose(ctx: OpsContext) -> Iterator[Finding]:
    """DOC-COMPOSE-001: the Compose that would run `owlia init --docker`'s file can read it. Only a setup
    that uses it (a compose file of ours in sight) can fail on it: docker installed for something else
    (the README's setup installs docker.io) is no reason to fail a systemd or laptop install."""
    docker = shutil.which("docker", path=ctx.env.get("PATH"))
    if docker is None:
        raise Skip("no docker command here (not a compose host, or inside a container)")
    if not compose_setups(ctx):
        raise Skip(
            f"no compose setup here (neither {ctx.home / 'docker'} nor this directory has the "
            "docker-compose.yml `owlia init --docker` writes): this install does not run on Compose"
        )
    try:
        done = subprocess.run(
            [docker, "compose", "version", "--short"],
            capture_output=True,
            text=True,
            timeout=15,
            env=dict(ctx.env),
            stdin=subprocess.DEVNULL,
        )
        text = done.stdout if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        text = None
    if finding := compose_version_finding(text):
        yield finding


DOCTOR_CHECKS: tuple[Check, ...] = (
    Check("DOC-PY-001", "Python and packages", check_python),
    Check("DOC-CONF-001", "config.yaml is valid", check_config),
    Check("DOC-WS-001", "workspace files", check_workspace),
    Check("DOC-LLM-001", "model credentials and reachability", check_llm),
    Check("DOC-SIGNER-001", "signer reachable and unlocked", check_signer),
    Check("DOC-CHAIN-001", "chain RPC reachable with the configured chain id", check_chains),
    Check("DOC-CHAN-001", "channel tokens valid", check_channels),
    Check("DOC-BRIDGE-001", "companion bridge and pairing", check_bridge),
    Check("DOC-SANDBOX-001", "skill sandbox backend", check_sandbox),
    Check("DOC-COMPOSE-001", "Compose v2 recent enough for the compose file", check_compose),
)


def doctor(ctx: OpsContext) -> Report:
    return run_checks("doctor", DOCTOR_CHECKS, ctx)
