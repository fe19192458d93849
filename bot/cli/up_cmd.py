"""`owlia up`: the whole local stack on embedded defaults, in the foreground.

Dev chain (anvil) -> signer daemon (its own process) -> a funded session key -> a client token
-> the bot with the console channel (and its loopback control plane). Everything lives under the
OwliaBot home; nothing here is for a real chain: the dev passphrase is generated and kept in a
0600 file next to the signer, which is only sane on anvil.

The signer's code runs only in the signer's processes: `owlia up` runs `python -m signer.cli` to
initialize the signer home and to serve, and talks to it over its socket like any other client.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from bot.cli.chat_cmd import _chat
from policies.kernel.cli import fail, home_of, run

if TYPE_CHECKING:
    from signer.wire.settings import ChainSettings

DEV_CONFIG = """\
# Written by `owlia up`: a local dev chain and a signer with embedded defaults.
chains:
  - {{ id: 31337, name: anvil, rpc_url: "http://127.0.0.1:{port}", dev: true }}
signer: {{}}
"""


def _owlia(home: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), *args],
        text=True,
        capture_output=True,
        **kwargs,
    )


def _signer(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(_signer_cli(home, *args), stdin=subprocess.DEVNULL, text=True, capture_output=True)


def _signer_cli(home: Path, *args: str) -> list[str]:
    """The signer's own program (signer/cli/app.py): its code runs in its own process, never in ours."""
    return [sys.executable, "-m", "signer.cli", "--home", str(home), "signer", *args]


def _wait_for_socket(path: Path, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"the signer exited: {proc.stderr.read() if proc.stderr else ''}")
        if path.exists():
            return
        time.sleep(0.05)
    fail("the signer did not open its socket in time")


DEFAULT_PORT = 8545


def up(
    ctx: typer.Context,
    port: Optional[int] = typer.Option(
        None,
        min=1,
        max=65535,
        help="Dev chain port on 127.0.0.1 (default: config.yaml's, else 8545); "
        "recorded in config.yaml's dev chain.",
    ),
    demo: bool = typer.Option(False, help="Run a short signing demo, then stop everything."),
    tier3: bool = typer.Option(
        False,
        "--tier3",
        help="Also deploy the Tier 3 contracts and record them in config.yaml (docs/tier3.md).",
    ),
) -> None:
    """Start the dev chain and the signer with a funded session key; stop with Ctrl-C."""
    import json  # lazy: 91 ms, 12632 KiB (5 imports)

    from bot.cli.config_file import load_or_fail, private_dir_or_fail
    from bot.devchain import DevChain, DevChainError
    from policies.kernel.files import ensure_private_dir, write_private_file
    from signer.wire.settings import ConfigError, SignerPaths, load_signer_config

    home = home_of(ctx)
    private_dir_or_fail(home)
    config_path = home / "config.yaml"
    if not config_path.exists():
        write_private_file(config_path, DEV_CONFIG.format(port=port or DEFAULT_PORT).encode())
    bot_config = load_or_fail(
        home
    )  # the whole file, in the loader's words, before a chain or a signer starts
    try:
        config = load_signer_config(home)
    except ConfigError as exc:
        fail(str(exc))
    dev_chain = next((c for c in config.chains if c.dev), None)
    if dev_chain is None:
        fail("config.yaml has no chain marked `dev: true`; `owlia up` only runs against a dev chain")
    from urllib.parse import urlsplit  # lazy: 27 ms, 5160 KiB (2 imports)

    from bot.devchain import LOOPBACK_HOSTS

    where = urlsplit(dev_chain.rpc_url)
    if where.hostname not in {h.strip("[]") for h in LOOPBACK_HOSTS} or where.port is None:
        fail(
            f"the dev chain {dev_chain.id} in {config_path} is not a dev chain on this machine ({where.scheme}://"
            f"{where.hostname}...): `owlia up` runs anvil here, so its rpc_url must be http://127.0.0.1:PORT"
        )
    configured = where.port
    from bot.runtime.instance import INHERITED_ENV, InstanceBusy, single_instance  # lazy: 2 ms, 1220 KiB

    try:  # one bot per home: a second `owlia up` or an `owlia start` beside this one is refused (and this by them)
        lock_fd = ctx.with_resource(single_instance(home))
    except InstanceBusy as exc:
        fail(str(exc))
    ctx.call_on_close(_stop_on_sigterm())
    signer_exists = (SignerPaths.from_config(home, config).home / "keystore.json").exists()
    chain = DevChain(port=configured if port is None else port, chain_id=dev_chain.id)
    try:
        chain.start()
        if (
            chain.port != configured
        ):  # the signer and the bot read config.yaml: the port goes there, said out loud
            from bot.devchain import record_dev_rpc_url  # lazy: 26 ms, 5224 KiB

            old = record_dev_rpc_url(config_path, dev_chain.id, chain.url)
            typer.echo(
                f"recorded --port {chain.port} in {config_path}: the dev chain's rpc_url is now {chain.url} "
                f"(was {old})"
            )
            config = load_signer_config(home)
            bot_config = load_or_fail(home)
            dev_chain = next(c for c in config.chains if c.id == dev_chain.id)
        if tier3 and dev_chain.delegation is None:  # first time: deploy and record, as `owlia chain dev` does
            from bot.devcontracts import (  # lazy: 120 ms, 16028 KiB
                deploy_delegation_framework,
                record_in_config,
            )

            record_in_config(config_path, dev_chain.id, deploy_delegation_framework(chain.url))
            typer.echo(
                f"Tier 3 contracts deployed; recorded under chains[{dev_chain.id}].delegation in {config_path}"
            )
            config = load_signer_config(home)
            dev_chain = next(c for c in config.chains if c.id == dev_chain.id)
        elif dev_chain.delegation is not None:  # Tier 3 recorded before: the same addresses again
            from bot.devcontracts import deploy_delegation_framework  # lazy: 126 ms, 15996 KiB

            deployed = deploy_delegation_framework(chain.url)
            if deployed["manager"] != dev_chain.delegation.manager.lower():
                raise DevChainError(
                    "the Tier 3 contracts landed at other addresses than config.yaml records: "
                    "run `owlia chain dev` once to record them again"
                )
        market = _swap_market(chain.url, dev_chain, config_path, signer_exists)
    except (DevChainError, ConfigError) as exc:
        chain.stop()
        fail(str(exc))
    except BaseException:  # Ctrl-C while the contracts deploy: anvil (its own session) goes too
        chain.stop()
        raise
    signer_proc: subprocess.Popen | None = None
    bot_proc: subprocess.Popen | None = None
    try:
        typer.echo(f"dev chain {dev_chain.id} at {chain.url}")
        paths = SignerPaths.from_config(home, config)
        secrets_dir = ensure_private_dir(home / "secrets")
        passfile = secrets_dir / "signer.passphrase"
        if not passfile.exists():
            write_private_file(passfile, secrets.token_urlsafe(24).encode())
        if not (paths.home / "keystore.json").exists():
            dev_policy = Path(str(resources.files("policies").joinpath("defaults/dev.yaml")))
            if market is not None:  # the dev policy with the market listed, so the agent can swap on it
                from bot.devmarket import dev_policy_with_market  # lazy: 151 ms, 20788 KiB

                listed = secrets_dir / "dev-policy.yaml"
                write_private_file(listed, dev_policy_with_market(dev_policy.read_text(), market).encode())
                dev_policy = listed
            init = _signer(home, "init", "--passphrase-file", str(passfile), "--policy", str(dev_policy))
            if init.returncode:
                fail(f"the signer could not be initialized: {init.stderr.strip()}")
            typer.echo(f"signer initialized at {paths.home} (dev policy)")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        signer_proc = subprocess.Popen(
            _signer_cli(home, "serve", "--passphrase-file", str(passfile)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        _wait_for_socket(paths.socket, signer_proc)
        token_file = secrets_dir / "signer.token"
        if not token_file.exists():
            out = _signer(
                home,
                "client",
                "add",
                "bot",
                "--scope",
                "sign",
                "--out",
                str(token_file),
                "--passphrase-file",
                str(passfile),
            )
            if out.returncode:
                fail(out.stderr.strip())
        keys = json.loads(_signer(home, "session-key", "list").stdout or "{}").get("session_keys", [])
        active = [k for k in keys if k["status"] == "active" and k["chain_id"] == dev_chain.id]
        if not active:
            created = _signer(home, "session-key", "create", "--chain", str(dev_chain.id))
            if created.returncode:
                fail(created.stderr.strip())
            active = [json.loads(created.stdout)["session_key"]]
        key = active[0]
        _signer(home, "session-key", "topup", key["key_id"])
        typer.echo(f"session key {key['key_id']} at {key['address']} funded up to its cap")
        typer.echo(f"signer ready on {paths.socket}")
        if demo:
            _demo(home)
            return
        channels = _configured_channels(home, bot_config)
        if channels:  # the configured chat channels run too, as `owlia start` in a process of its own
            log_path = ensure_private_dir(home / "logs") / "bot.log"
            with open(log_path, "ab") as log_file:
                bot_proc = subprocess.Popen(
                    [sys.executable, "-m", "bot.cli", "--home", str(home), "start"],
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=log_file,
                    env={**env, INHERITED_ENV: str(lock_fd)},
                    pass_fds=(lock_fd,),
                )
            typer.echo(f"bot: {', '.join(channels)} running (log: {log_path})")
        typer.echo("bot: console channel below (Ctrl-D or /quit stops the whole stack)")
        try:
            run(_chat(home, bot_config, None))
        except KeyboardInterrupt:
            typer.echo("stopping")
    finally:
        if bot_proc and bot_proc.poll() is None:
            bot_proc.terminate()
            bot_proc.wait(timeout=20)
        if signer_proc and signer_proc.poll() is None:
            signer_proc.terminate()
            signer_proc.wait(timeout=15)
        chain.stop()


def _swap_market(url: str, dev_chain: ChainSettings, config_path: Path, signer_exists: bool) -> dict | None:
    """The dev swap market (bot.devmarket) on the fresh chain: deployed and recorded when config.yaml has
    none (a new home), deployed again at the recorded addresses when it has one; None on a home whose
    config.yaml records no market but whose signer already exists (its policy lists none)."""
    from bot.devchain import DevChainError  # lazy: 188 ms, 24124 KiB (3 imports)
    from bot.devcontracts import record_in_config
    from bot.devmarket import deploy_swap_market

    recorded = dev_chain.swap_market
    if recorded is None and signer_exists:
        return None
    market = deploy_swap_market(url)
    if recorded is None:
        record_in_config(config_path, dev_chain.id, market, key="swap_market")
    elif market["router"] != recorded.router.lower():
        raise DevChainError(
            "the swap market landed at other addresses than config.yaml records: "
            "remove chains[].swap_market from config.yaml, or run `owlia chain dev` once"
        )
    return market


def _stop_on_sigterm() -> Callable[[], object]:
    """SIGTERM (a service manager, `kill`, `timeout`) stops the stack as Ctrl-C does. Python's default
    ends the process at once, skipping the cleanup: anvil (in its own session), the signer and the bot
    went on running, holding the chain's port and the signer's socket. Returns what puts the
    process's own handler back, for when the command is done."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, before)


def _configured_channels(home: Path, config) -> list[str]:
    """The chat channels `owlia start` would run here: enabled, with a token."""
    from bot.channels.tokens import TokenError, load_token  # lazy: 2 ms, 1212 KiB

    found = []
    for name in ("telegram", "discord"):
        settings = getattr(config.bot.channels, name)
        try:
            if settings.enabled and load_token(home, settings, name):
                found.append(name)
        except TokenError as exc:
            typer.secho(f"bot: {name} skipped: {exc}", fg=typer.colors.YELLOW, err=True)
    return found


def _demo(home: Path) -> None:
    """The bot's console channel, offline: balance, then the signer's three outcomes."""
    friend = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
    stranger = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
    lookalike = friend[:6] + "0" * 32 + friend[-4:]
    for label, message in [
        ("balance", "/balance"),
        ("within limits, known recipient: auto-signed", f"/send {friend} 0.001eth"),
        ("new recipient: escalated to the companion app", f"/send {stranger} 0.001eth"),
        ("look-alike of a known address: denied", f"/send {lookalike} 0.001eth"),
        ("swap within limits, checked against the signer's own quote: auto-signed", "/swap 0.005 ETH TUSD"),
    ]:
        result = _owlia(home, "chat", "-m", message)
        typer.echo(f"\n# {label}\nyou> {message}\n{result.stdout.strip()}{result.stderr.strip()}")
