"""`owlia`: the root command and its groups.

Each command's module is imported only when that command runs (bot/cli/lazy.py): `owlia --help`
lists them from the summaries below, and `owlia sign send` loads the sign command alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer
from typer._click import Context
from typer.core import TyperGroup
from typer.exceptions import Abort

from bot.cli import process
from bot.cli.lazy import LazyGroup, Mount, Mountable, build
from bot.cli.say import error

MOUNTS: dict[str, Mount] = {}


def mount(
    name: str, summary: str, *, one_shot: bool = False
) -> Callable[[Callable[[], Mountable]], Callable[[], Mountable]]:
    """Mount a command under `name`: help lists `summary`; the loader's imports run when the command does.
    `one_shot`: the command sends a request, prints the answer and writes no file (bot/cli/process.py)."""

    def register(load: Callable[[], Mountable]) -> Callable[[], Mountable]:
        MOUNTS[name] = Mount(summary, load, one_shot)
        return load

    return register


class OwliaGroup(LazyGroup):
    mounts = MOUNTS

    def invoke(self, ctx: Context) -> Any:
        """A prompt (an option's, `typer.prompt`, `typer.confirm`) that gets no answer: click turns both
        Ctrl-C and end of input into `Abort`, which typer reports as a bare "Aborted!" and exit 1.
        Ctrl-C exits 130 as it does anywhere else (typer's main, for the KeyboardInterrupt raised
        here); end of input (stdin closed or not a terminal) says how to answer, and exits 1."""
        try:
            return super().invoke(ctx)
        except Abort as exc:
            typer.echo(err=True)  # after the prompt's text (and the `^C`): a line of its own
            if isinstance(exc.__context__, KeyboardInterrupt):
                raise KeyboardInterrupt from None
            if isinstance(exc.__context__, EOFError):
                _no_answer()
            raise
        except EOFError:  # getpass and input(): the passphrase prompts
            typer.echo(err=True)
            _no_answer()


app = typer.Typer(
    name="owlia",
    help="OwliaBot: a self-hosted AI agent whose signer no prompt can talk past your policy.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=OwliaGroup,
)


def _no_answer() -> NoReturn:
    error(
        "end of input at a prompt: run the command on a terminal to answer it, or give the "
        "answer as an option (see the command's --help, e.g. --yes or --passphrase-file)"
    )
    raise typer.Exit(1)


@app.callback()
def root(
    home: Optional[Path] = typer.Option(
        None,
        "--home",
        envvar="OWLIA_HOME",
        help="OwliaBot home (config.yaml, secrets, signer). Default ~/.owliabot.",
    ),
) -> None:
    """Run `owlia up` for a local stack on a dev chain; `owlia COMMAND --help` for each command."""


@mount("up", "Start the dev chain and the signer with a funded session key; stop with Ctrl-C.")
def _up() -> Mountable:
    from bot.cli.up_cmd import up  # lazy: 86 ms, 14540 KiB

    return up


@mount("start", "Run Telegram/Discord (those with a token), cron, heartbeat and the control plane.")
def _start() -> Mountable:
    from bot.cli.start_cmd import start  # lazy: 86 ms, 14540 KiB

    return start


@mount(
    "chat", "Chat with OwliaBot here; slash commands (/help /balance /send ...) work even without a model."
)
def _chat() -> Mountable:
    from bot.cli.chat_cmd import chat  # lazy: 86 ms, 14540 KiB

    return chat


@mount("init", "Create ~/.owliabot (0700) with config.yaml, secrets/ and the workspace; never overwrites.")
def _init() -> Mountable:
    from bot.cli.init_cmd import init  # lazy: 86 ms, 14540 KiB

    return init


@mount(
    "doctor",
    "Check Python, config, workspace, model logins, signer, chains, channels, sandbox; exit 1 on failure.",
)
def _doctor() -> Mountable:
    from bot.cli.doctor_cmd import doctor  # lazy: 86 ms, 14540 KiB

    return doctor


# The signer's, the bridge's and the companion's own commands: each runs in its own `owlia ...` process.
@mount("signer", "The signer daemon: the only process that holds keys.")
def _signer() -> Mountable:
    from signer.cli.signer_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("chain", "Local development chain (anvil).")
def _chain() -> Mountable:
    from bot.cli.chain_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("sign", "Ask the signer to sign (policy-checked like any agent request).", one_shot=True)
def _sign() -> Mountable:
    from bot.cli.sign_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("policy", "Check policy files and preview decisions.")
def _policy() -> Mountable:
    from signer.cli.policy_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("audit", "Verify and read the signer's audit log.")
def _audit() -> Mountable:
    from signer.cli.audit_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("auth", "Provider logins (OAuth) and API keys for the LLM.")
def _auth() -> Mountable:
    from bot.cli.auth_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("pair", "Pair chat users with the bot (default deny: strangers get a code you approve here).")
def _pair() -> Mountable:
    from bot.cli.pair_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("cron", "Scheduled jobs: reminders, system events and unattended assistant runs.")
def _cron() -> Mountable:
    from bot.cli.cron_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("companion", "Tier 1: your companion app and its pairing with the signer.")
def _companion() -> Mountable:
    from companion_bridge.companion.cli import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("wallet", "Tier 3: on-chain limits for the session key (EIP-7702 + delegations).")
def _wallet() -> Mountable:
    from bot.cli.chain_cmd import pin_contracts  # lazy: 86 ms, 14540 KiB (2 imports)
    from companion_bridge.companion.wallet_cli import app

    wallet = build("wallet", app)
    assert isinstance(wallet, TyperGroup)  # a sub-app with commands is a group
    wallet.add_command(build("pin", pin_contracts))  # configures the signer, no key involved
    return wallet


@mount("bridge", "The companion bridge (untrusted transport for Tier 1 approvals).")
def _bridge() -> Mountable:
    from companion_bridge.cli import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("skill", "Manage skills (third-party tools that run in a sandbox).")
def _skill() -> Mountable:
    from bot.cli.skill_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("mcp", "Manage MCP servers (third-party tools, run in the skills sandbox).")
def _mcp() -> Mountable:
    from bot.cli.mcp_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("security", "Security checks for this OwliaBot install.")
def _security() -> Mountable:
    from bot.cli.security_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


@mount("service", "Run OwliaBot as systemd services (no containers).")
def _service() -> Mountable:
    from bot.cli.service_cmd import app  # lazy: 86 ms, 14540 KiB

    return app


def main() -> None:
    """Every command through typer; `owlia` itself starts at bot.cli.entry.main."""
    process.prepare()
    process.run(app)
