"""`owlia service install`: run the bot and the signer as two system users under systemd."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
from pathlib import Path
from typing import Optional

import typer

from bot.ops.service_preflight import others_problem, trial_as
from policies.kernel.cli import fail

app = typer.Typer(help="Run OwliaBot as systemd services (no containers).", no_args_is_help=True)


@app.callback()
def group() -> None:
    """systemd services (a group, so `uninstall` can join `install`)."""


@app.command("install")
def install(
    unit_dir: Path = typer.Option(Path("/etc/systemd/system"), help="Where to write the unit files."),
    signer_user: str = typer.Option("owlia-signer"),
    bot_user: str = typer.Option("owlia-bot"),
    socket_group: str = typer.Option(
        "owlia-sock", help="The only group that may connect to the signer socket."
    ),
    signer_home: Path = typer.Option(Path("/var/lib/owliabot-signer"), help="The signer's state directory."),
    bot_home: Path = typer.Option(Path("/var/lib/owliabot"), help="The bot's home."),
    rpc_url: str = typer.Option("http://127.0.0.1:8545", help="Chain RPC for the generated config.yaml."),
    chain_id: int = typer.Option(31337),
    create_users: bool = typer.Option(True, help="Create the users and group if missing (needs root)."),
    python: Optional[Path] = typer.Option(
        None,
        help="The interpreter the units run, with owliabot installed (default: this one); the service "
        "users must be able to execute it and read the install.",
    ),
    dry_run: bool = typer.Option(False, help="Print the units instead of writing anything."),
) -> None:
    """Write owliabot-signer.service and owliabot.service (and the users they run as)."""
    import sys  # lazy: 14 ms, 2480 KiB (3 imports)

    from bot.ops.systemd import (
        BOT_UNIT,
        SIGNER_UNIT,
        ServiceLayout,
        bot_unit,
        install_commands,
        service_config,
        signer_unit,
    )
    from policies.kernel.files import ensure_private_dir, write_private_file

    layout = ServiceLayout(
        signer_user=signer_user,
        bot_user=bot_user,
        socket_group=socket_group,
        signer_home=signer_home,
        bot_home=bot_home,
        python=str(python.absolute()) if python else sys.executable,
    )
    units = {SIGNER_UNIT: signer_unit(layout), BOT_UNIT: bot_unit(layout)}
    if dry_run:
        if blocked := _not_traversable(Path(layout.python)):
            typer.secho(
                f"warning: {blocked} is closed to other users, so {signer_user} and {bot_user} cannot run "
                f"{layout.python}; install owliabot somewhere they can (e.g. /opt/owliabot/venv)",
                fg=typer.colors.YELLOW,
                err=True,
            )
        for name, text in units.items():
            typer.echo(f"# {unit_dir / name}\n{text}")
        return
    _preflight(layout, create_users)  # before any user, unit, home or config exists
    if create_users:
        for command in install_commands(layout):
            if not _exists(command):
                done = subprocess.run(command, capture_output=True, text=True)
                if done.returncode:
                    fail(f"{' '.join(command)}: {done.stderr.strip()}")
    unit_dir.mkdir(parents=True, exist_ok=True)
    for name, text in units.items():
        (unit_dir / name).write_text(text, encoding="utf-8")
        (unit_dir / name).chmod(0o644)
        typer.echo(f"wrote {unit_dir / name}")
    try:
        bot_uid = pwd.getpwnam(bot_user).pw_uid
    except KeyError:
        fail(f"no user {bot_user!r}: create it or drop --no-create-users")
    config = service_config(layout, bot_uid, rpc_url=rpc_url, chain_id=chain_id)
    for home, user in ((layout.signer_home, signer_user), (layout.bot_home, bot_user)):
        ensure_private_dir(home)
        if not (home / "config.yaml").exists():
            write_private_file(home / "config.yaml", config.encode())
        _chown_tree(home, user)
    typer.echo("\nnext steps (as root):")
    for step in (
        f"install -d -m 0700 {layout.passphrase_file.parent}; "
        f"(umask 077; head -c 32 /dev/urandom | base64 > {layout.passphrase_file})",
        f"sudo -u {signer_user} {layout.python} -m bot.cli --home {layout.signer_home} signer init "
        f"--passphrase-file {layout.passphrase_file}",
        "systemctl daemon-reload && systemctl enable --now owliabot-signer",
        f"sudo -u {bot_user} {layout.python} -m bot.cli --home {layout.bot_home} init",
        f"sudo -u {signer_user} {layout.python} -m bot.cli --home {layout.signer_home} "
        f"signer client add bot --scope sign --passphrase-file {layout.passphrase_file} "
        f"| sudo -u {bot_user} sh -c 'umask 077; cat > {layout.bot_home}/secrets/signer.token'",
        # the session key signs and pays for Tier 2 transfers: create it, then fund it (KEY_ID from create)
        f"sudo -u {signer_user} {layout.python} -m bot.cli --home {layout.signer_home} signer session-key create",
        f"sudo -u {signer_user} {layout.python} -m bot.cli --home {layout.signer_home} signer session-key topup KEY_ID",
        "systemctl enable --now owliabot",
        f"{layout.python} -m bot.cli --home {layout.bot_home} security audit --bot-user {bot_user}",
    ):
        typer.echo(f"  {step}")


def _preflight(layout, create_users: bool) -> None:
    """Refuse, with nothing written, a setup whose units could not start: a user or group missing
    with --no-create-users, or service users that cannot run the interpreter with OwliaBot."""
    nothing = "nothing was written"
    advice = (
        "Install owliabot where the service users can read it (e.g. `python3 -m venv /opt/owliabot/venv`, "
        "`/opt/owliabot/venv/bin/pip install owliabot`) and pass --python /opt/owliabot/venv/bin/python"
    )
    if not _exists(["groupadd", layout.socket_group]) and not create_users:
        fail(f"no group {layout.socket_group!r}: create it, or drop --no-create-users; {nothing}")
    users = (layout.signer_user, layout.bot_user)
    for user in users if not create_users else ():
        if not _exists(["useradd", user]):
            fail(f"no user {user!r}: create it, or drop --no-create-users; {nothing}")
    for user in users:
        if _exists(["useradd", user]):
            problem = trial_as(user, layout.python) if os.geteuid() == 0 else others_problem(layout.python)
        else:
            problem = others_problem(layout.python)
        if problem:
            fail(f"{user} could not start its service: {problem}. {advice}; {nothing}")


def _not_traversable(path: Path) -> Path | None:
    """The first directory above `path` that other users cannot enter, if any."""
    for parent in path.absolute().parents:
        if not parent.stat().st_mode & 0o001:
            return parent
    return None


def _exists(command: list[str]) -> bool:
    name = command[-1]
    try:
        (grp.getgrnam if command[0] == "groupadd" else pwd.getpwnam)(name)
        return True
    except KeyError:
        return False


def _chown_tree(path: Path, user: str) -> None:
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return
    for item in [path, *path.rglob("*")]:
        os.chown(item, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
