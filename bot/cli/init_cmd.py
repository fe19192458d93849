"""`owlia init`: create the OwliaBot home, a commented config.yaml and the agent's workspace."""

from __future__ import annotations

import typer

from bot.cli.common import home_of

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


def init(ctx: typer.Context) -> None:
    """Create ~/.owliabot (0700) with config.yaml, secrets/ and the workspace; never overwrites."""
    from signer.fsperm import ensure_private_dir, write_private_file

    from bot.workspace import create_workspace

    home = ensure_private_dir(home_of(ctx))
    ensure_private_dir(home / "secrets")
    config = home / "config.yaml"
    if config.exists():
        typer.echo(f"kept existing {config}")
    else:
        write_private_file(config, CONFIG_TEMPLATE.encode())
        typer.echo(f"wrote {config}")
    written = create_workspace(home / "workspace")
    typer.echo(f"workspace {home / 'workspace'}: " + (f"created {', '.join(written)}" if written else "already there"))
    typer.echo("next: `owlia auth setup` to log in to a model, `owlia up` for a local dev stack, "
               "then `owlia chat`")
