"""`owlia up`: the whole local stack on embedded defaults, in the foreground.

Dev chain (anvil) -> signer daemon (its own process) -> a funded session key -> a client token
-> the bot with the console channel (and its loopback control plane). Everything lives under the
OwliaBot home; nothing here is for a real chain: the dev passphrase is generated and kept in a
0600 file next to the signer, which is only sane on anvil.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import typer

from bot.cli.common import fail, home_of, run

DEV_CONFIG = """\
# Written by `owlia up`: a local dev chain and a signer with embedded defaults.
chains:
  - {{ id: 31337, name: anvil, rpc_url: "http://127.0.0.1:{port}", dev: true }}
signer: {{}}
"""


def _owlia(home: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "--home", str(home), *args],
                          text=True, capture_output=True, **kwargs)


def _wait_for_socket(path: Path, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"the signer exited: {proc.stderr.read() if proc.stderr else ''}")
        if path.exists():
            return
        time.sleep(0.05)
    fail("the signer did not open its socket in time")


def up(
    ctx: typer.Context,
    port: int = typer.Option(8545, help="Dev chain port on 127.0.0.1."),
    demo: bool = typer.Option(False, help="Run a short signing demo, then stop everything."),
) -> None:
    """Start the dev chain and the signer with a funded session key; stop with Ctrl-C."""
    import json

    from bot.devchain import DevChain, DevChainError
    from signer.daemon import SignerPaths, init_home
    from signer.fsperm import ensure_private_dir, write_private_file
    from signer.settings import load_signer_config

    home = home_of(ctx)
    ensure_private_dir(home)
    config_path = home / "config.yaml"
    if not config_path.exists():
        write_private_file(config_path, DEV_CONFIG.format(port=port).encode())
    config = load_signer_config(home)
    dev_chain = next((c for c in config.chains if c.dev), None)
    if dev_chain is None:
        fail("config.yaml has no chain marked `dev: true`; `owlia up` only runs against a dev chain")
    chain = DevChain(port=int(dev_chain.rpc_url.rsplit(":", 1)[1]), chain_id=dev_chain.id)
    try:
        chain.start()
    except DevChainError as exc:
        fail(str(exc))
    signer_proc: subprocess.Popen | None = None
    try:
        typer.echo(f"dev chain {dev_chain.id} at {chain.url}")
        paths = SignerPaths.from_config(home, config)
        secrets_dir = ensure_private_dir(home / "secrets")
        passfile = secrets_dir / "signer.passphrase"
        if not passfile.exists():
            write_private_file(passfile, secrets.token_urlsafe(24).encode())
        if not (paths.home / "keystore.json").exists():
            from importlib import resources

            dev_policy = Path(str(resources.files("policies").joinpath("defaults/dev.yaml")))
            init_home(paths, bytearray(passfile.read_bytes().strip()), policy_file=dev_policy)
            typer.echo(f"signer initialized at {paths.home} (dev policy)")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        signer_proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "--home", str(home), "signer", "serve", "--passphrase-file", str(passfile)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
        )
        _wait_for_socket(paths.socket, signer_proc)
        token_file = secrets_dir / "signer.token"
        if not token_file.exists():
            out = _owlia(home, "signer", "client", "add", "bot", "--scope", "sign", "--out", str(token_file),
                         "--passphrase-file", str(passfile))
            if out.returncode:
                fail(out.stderr.strip())
        keys = json.loads(_owlia(home, "signer", "session-key", "list").stdout or "{}").get("session_keys", [])
        active = [k for k in keys if k["status"] == "active" and k["chain_id"] == dev_chain.id]
        if not active:
            created = _owlia(home, "signer", "session-key", "create", "--chain", str(dev_chain.id))
            if created.returncode:
                fail(created.stderr.strip())
            active = [json.loads(created.stdout)["session_key"]]
        key = active[0]
        _owlia(home, "signer", "session-key", "topup", key["key_id"])
        typer.echo(f"session key {key['key_id']} at {key['address']} funded up to its cap")
        typer.echo(f"signer ready on {paths.socket}")
        if demo:
            _demo(home)
            return
        typer.echo("bot: console channel below (Ctrl-D or /quit stops the whole stack)")
        from bot.cli.chat_cmd import _chat
        from bot.config import load_bot_config

        try:
            run(_chat(home, load_bot_config(home), None))
        except KeyboardInterrupt:
            typer.echo("stopping")
    finally:
        if signer_proc and signer_proc.poll() is None:
            signer_proc.terminate()
            signer_proc.wait(timeout=15)
        chain.stop()


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
    ]:
        result = _owlia(home, "chat", "-m", message)
        typer.echo(f"\n# {label}\nyou> {message}\n{result.stdout.strip()}{result.stderr.strip()}")
