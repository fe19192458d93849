"""The signer's commands as a program of their own: `python -m signer.cli --home H signer serve ...`.

`owlia` mounts the same groups; this root lets `owlia up` (and a service unit) run the signer as its
own process without the bot's command tree, so the bot's package never imports the signer's core.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from signer.cli import audit_cmd, policy_cmd, signer_cmd

app = typer.Typer(
    name="owlia-signer", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False
)


@app.callback()
def root(
    home: Optional[Path] = typer.Option(
        None, "--home", envvar="OWLIA_HOME", help="OwliaBot home. Default ~/.owliabot."
    ),
) -> None:
    """The signer's admin commands (the same as `owlia signer|audit|policy`)."""


app.add_typer(signer_cmd.app, name="signer")
app.add_typer(audit_cmd.app, name="audit")
app.add_typer(policy_cmd.app, name="policy")


def main() -> None:
    app()
