"""`owlia init`: create the OwliaBot home, a commented config.yaml and the agent's workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from policies.kernel.cli import fail, home_of

CONFIG_TEMPLATE = """\
# OwliaBot configuration. Secrets never go here: `owlia auth setup` stores LLM logins in
# auth.json (0600); the signer and gateway tokens live in secrets/ (0600).
chains:
  - {id: 31337, name: anvil, rpc_url: "http://127.0.0.1:8545", dev: true}

signer: {}

bot:
  llm:
    # Tried in order; a rate-limited or overloaded profile cools down and the next one answers.
    profiles:
      - {name: anthropic, model: sonnet}        # model ids: provider/model or an alias
      - {name: openai, model: gpt}
  agent:
    max_rounds: 20          # tool rounds per message
    history_turns: 20       # turns of history the model sees
  web:
    enabled: true
    allow_domains: []       # empty: any public site; e.g. ["*.coingecko.com"]
  prices:
    source: static          # static | coingecko
    static: {ETH: "3000"}
  gateway:
    host: 127.0.0.1         # the control plane; non-loopback needs the token in secrets/gateway.token
    port: 8787
"""


def init(
    ctx: typer.Context,
    docker: bool = typer.Option(
        False, "--docker", help="Write a docker compose setup (signer, bot, bridge) instead."
    ),
    directory: Optional[Path] = typer.Option(
        None, "--dir", help="Where the compose setup goes (<home>/docker)."
    ),
    rpc_url: str = typer.Option("http://anvil:8545", help="--docker: chain RPC as the containers reach it."),
    chain_id: int = typer.Option(31337, help="--docker: that chain's id."),
) -> None:
    """Create ~/.owliabot (0700) with config.yaml, secrets/ and the workspace; never overwrites."""
    from bot.cli.config_file import private_dir_or_fail  # lazy: 3 ms, 1360 KiB (3 imports)
    from bot.workspace import create_workspace
    from policies.kernel.files import write_private_file

    if docker:
        if directory is None:  # inside the home: keep the home itself private (0700)
            directory = private_dir_or_fail(home_of(ctx)) / "docker"
        _init_docker(directory, rpc_url, chain_id)
        return
    home = private_dir_or_fail(home_of(ctx))
    private_dir_or_fail(home / "secrets")
    config = home / "config.yaml"
    if config.is_dir():
        fail(f"{config} is a directory: move it away, then run `owlia init` again")
    if config.exists():
        typer.echo(f"kept existing {config}")
    else:
        write_private_file(config, CONFIG_TEMPLATE.encode())
        typer.echo(f"wrote {config}")
    written = create_workspace(home / "workspace")
    typer.echo(
        f"workspace {home / 'workspace'}: "
        + (f"created {', '.join(written)}" if written else "already there")
    )
    typer.echo(
        "next: `owlia auth setup` to log in to a model, `owlia up` for a local dev stack, then `owlia chat`"
    )


def _init_docker(root: Path, rpc_url: str, chain_id: int) -> None:
    from bot.ops.compose import chown_commands, write_compose_setup  # lazy: 17 ms, 6800 KiB

    setup = write_compose_setup(root, rpc_url=rpc_url, chain_id=chain_id)
    typer.echo(f"compose setup in {setup.root}: " + (", ".join(setup.written) or "already there"))
    profile = " --profile anvil" if rpc_url == "http://anvil:8545" else ""
    steps = (
        [] if setup.chowned else ["give each container its own files (as root):", *chown_commands(setup.root)]
    )
    if not setup.buildable:
        typer.echo(
            "this install has no source checkout and no bundled Dockerfiles, so the compose file has "
            "nothing to build, and it never pulls owliabot/* images (published nowhere). Install the "
            "package from a wheel or a checkout (`pip install .`), or use a checkout's own venv, then run "
            "this again.",
            err=True,
        )
        raise typer.Exit(1)
    steps += [
        f"cd {setup.root}",
        "docker compose build",
        "docker compose run --rm signer signer init --passphrase-file /run/secrets/signer_passphrase",
        f"docker compose{profile} up -d signer" + (" anvil" if profile else ""),
        # tee into the existing 0600 file keeps its mode and owner (the bot's uid)
        "docker compose exec -T signer owlia signer client add bot --scope sign"
        " --passphrase-file /run/secrets/signer_passphrase | sudo tee secrets/signer_token >/dev/null",
        "docker compose exec -T signer owlia signer client add bridge --scope bridge"
        " --passphrase-file /run/secrets/signer_passphrase | sudo tee secrets/bridge_token >/dev/null",
        "docker compose exec signer owlia signer session-key create",
        "sudoedit secrets/telegram_token   # paste the token @BotFather gave you (the file stays 0600)",
        "docker compose run --rm bot auth setup",
        f"docker compose{profile} up -d",
        "docker compose exec bot owlia doctor && docker compose exec bot owlia security audit",
        "DM your bot on Telegram, then: docker compose exec bot owlia pair approve <CODE>",
    ]
    typer.echo("next steps:")
    for step in steps:
        typer.echo(f"  {step}")
