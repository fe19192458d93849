"""`owlia`: the root command and its groups."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from bot.cli import (
    auth_cmd, chain_cmd, chat_cmd, cron_cmd, doctor_cmd, init_cmd, mcp_cmd, pair_cmd, security_cmd, service_cmd,
    sign_cmd, skill_cmd, start_cmd, up_cmd,
)
from companion_bridge import cli as bridge_cmd
from companion_bridge.companion import cli as companion_cmd
from companion_bridge.companion import wallet_cli
from signer.cli import audit_cmd, policy_cmd, signer_cmd

app = typer.Typer(
    name="owlia",
    help="OwliaBot: a self-hosted AI agent whose signer no prompt can talk past your policy.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def root(
    home: Optional[Path] = typer.Option(
        None, "--home", envvar="OWLIA_HOME", help="OwliaBot home (config.yaml, secrets, signer). Default ~/.owliabot."
    ),
) -> None:
    """Run `owlia up` for a local stack on a dev chain; `owlia COMMAND --help` for each command."""


app.add_typer(signer_cmd.app, name="signer")
app.add_typer(chain_cmd.app, name="chain")
app.add_typer(sign_cmd.app, name="sign")
app.add_typer(policy_cmd.app, name="policy")
app.add_typer(audit_cmd.app, name="audit")
app.add_typer(auth_cmd.app, name="auth")
app.add_typer(pair_cmd.app, name="pair")
app.add_typer(cron_cmd.app, name="cron")
app.add_typer(companion_cmd.app, name="companion")
wallet_cli.app.command("pin")(chain_cmd.pin_contracts)  # configures the signer, no key involved
app.add_typer(wallet_cli.app, name="wallet")
app.add_typer(bridge_cmd.app, name="bridge")
app.add_typer(skill_cmd.app, name="skill")
app.add_typer(mcp_cmd.app, name="mcp")
app.add_typer(security_cmd.app, name="security")
app.add_typer(service_cmd.app, name="service")
app.command("up")(up_cmd.up)
app.command("start")(start_cmd.start)
app.command("chat")(chat_cmd.chat)
app.command("init")(init_cmd.init)
app.command("doctor")(doctor_cmd.doctor)


def main() -> None:
    app()
