"""`owlia --help` and `owlia sign send` stay fast: each imports only what it uses. Checked by what a real
`owlia` process imports (`python -X importtime`), which is stable, not by wall time, which is not on a
shared machine (bench/cli_bench.py times them; docs/benchmarks.md has the figures)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer.main

from bot.cli.app import MOUNTS, app
from bot.cli.lazy import summary
from policies.kernel.files import write_private_file

FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
# the command tree without any command
ROOT = {
    "bot",
    "bot.cli",
    "bot.cli.entry",
    "bot.cli.app",
    "bot.cli.lazy",
    "bot.cli.process",
    "bot.cli.values",
    "bot.cli.plain",
    *("bot.cli.say", "bot.cli.start_run", "bot.net", "bot.net.lean_httpx"),  # the entry's, under 1 ms
}
# `owlia sign send` on its typer-free path (bot/cli/entry.py): no command tree at all
SEND_PATH = {
    *("bot", "bot.cli", "bot.cli.entry", "bot.cli.process", "bot.cli.plain", "bot.cli.sign_send"),
    *("bot.cli.say", "bot.cli.start_run", "bot.net", "bot.net.lean_httpx"),
}
# the kernel modules the root loads: pydantic's plugin loader stood in before any command runs, and
# where the home is (os and pathlib only)
KERNEL_AT_ROOT = {"policies", "policies.kernel", "policies.kernel.pydantic_plugins", "policies.kernel.home"}
# what the whole command tree used to load for `--help`: rich's help panels (rich, markdown-it), every
# command's module, pydantic, the YAML parser, the event loop and everything heavier
HELP_NEVER = (
    "rich",
    "markdown_it",
    "pygments",
    "pydantic",
    "pydantic_core",
    "yaml",
    "asyncio",
    "signer",
    "companion_bridge",
    "skills_runtime",
    "policies",
    "anthropic",
    "openai",
    "aiogram",
    "telegram",
    "discord",
    "fastapi",
    "uvicorn",
    "web3",
    "eth_account",
    "aiohttp",
    "coincurve",
    "cryptography",
    "nacl",
    "Crypto",
    "cffi",
    "apscheduler",
    "docker",
)
# `owlia sign send` needs the sign command's body, the blocking wire client and the config: not typer
# or click (its command line is read without them), an event loop (asyncio, uvloop, and the ssl module
# asyncio imports), the signer's core (its daemon, engine, approvals, policy loader), keccak (pycryptodome
# loads cffi and pycparser), rich, nor any other command's module, nor pydantic's plugin loader and the
# package metadata reader it imports (policies/kernel/pydantic_plugins.py), nor the request models
# (signer.wire.requests), the replies it does not read (signer.wire.replies) or what `secrets` imports
# (hmac, random)
SEND_NEVER = (
    "typer",
    "click",
    "asyncio",
    "uvloop",
    "ssl",
    "signer.wire.client",
    "signer.wire.requests",
    "signer.wire.replies",
    "secrets",
    "hmac",
    "random",
    "policies.context",
    "pydantic.plugin._loader",
    "importlib.metadata",
    "email",
    "zipfile",
    "rich",
    "markdown_it",
    "Crypto",
    "cffi",
    "pycparser",
    "companion_bridge",
    "skills_runtime",
    "signer.daemon",
    "signer.engine",
    "signer.tier1.approvals",
    "signer.server",
    "signer.keystore",
    "signer.store",
    "policies.loader",
    "policies.evaluate",
    "anthropic",
    "openai",
    "aiogram",
    "telegram",
    "web3",
    "eth_account",
    "coincurve",
    "cryptography",
    "nacl",
)


def imported_by(*argv: str, home=None) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run `owlia ARGV` as its own process and list every module it imported."""
    args = [
        sys.executable,
        "-X",
        "importtime",
        "-m",
        "bot.cli",
        *(("--home", str(home)) if home else ()),
        *argv,
    ]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert lines, proc.stderr[-2000:]
    return proc, {line.rsplit("|", 1)[1].strip() for line in lines[1:]}


def loaded_under(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_help_imports_no_command_and_nothing_heavy() -> None:
    proc, modules = imported_by("--help")
    assert proc.returncode == 0 and "Commands:" in proc.stdout
    heavy = set(loaded_under(modules, HELP_NEVER)) - KERNEL_AT_ROOT
    assert not heavy, heavy
    assert {m for m in modules if m.startswith("bot")} == ROOT


def test_the_guard_would_see_a_heavy_import() -> None:
    """The check above can fail: a command's own help loads that command's module."""
    proc, modules = imported_by("signer", "status", "--help")
    assert proc.returncode == 0
    assert "signer.cli.signer_cmd" in loaded_under(modules, HELP_NEVER)


def test_sign_send_imports_only_its_body_and_the_blocking_wire_client(tmp_path, monkeypatch) -> None:
    """`owlia sign send` talks to a running signer: it needs the socket's path and the client, not the
    daemon's approvals, engine and policy loader, nor the command tree, typer or an event loop. Here
    no signer listens: the command goes as far as the socket and prints the signer error as JSON."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("OWLIA_SIGNER_TOKEN", "t" * 32)
    proc, modules = imported_by("sign", "send", "--to", FRIEND, "--value", "1wei", home=home)
    assert proc.returncode == 1 and "cannot reach the signer" in json.loads(proc.stdout)["error"]
    assert {"signer.wire.settings", "signer.wire.blocking", "bot.cli.sign_send"} <= modules
    assert not loaded_under(modules, SEND_NEVER), loaded_under(modules, SEND_NEVER)
    assert {m for m in modules if m.startswith("bot")} == SEND_PATH
    assert len(modules) <= SEND_MODULE_BUDGET, len(modules)


def test_a_worded_error_loads_no_typer_to_print_itself(tmp_path) -> None:
    """No client token: the error is printed as typer's `fail` prints it (the same words and colours,
    tests/bot/test_cli_sign_send.py), by bot.cli.say: no typer, command tree or event loop loads for it."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    proc, modules = imported_by("sign", "send", "--to", FRIEND, "--value", "1wei", home=home)
    assert proc.returncode == 1 and proc.stderr.splitlines()[-1].startswith("error: no signer token")
    assert "bot.cli.say" in modules
    assert not {"typer", "click", "bot.cli.app", "asyncio"} & modules


# Modules `owlia sign send` imports up to the signer's socket: 201 at 2026-11-26 (pydantic, YAML, the
# blocking wire client; 310 with typer and asyncio up to its token check before this round, 340 before
# pydantic's plugin loader was skipped). A count, not a time: it does not move with the load. A new
# dependency of the path has to raise it here, on purpose.
SEND_MODULE_BUDGET = 205


def test_a_plugin_list_keeps_pydantic_plugin_loader(tmp_path, monkeypatch) -> None:
    """Only "no plugin at all" skips pydantic's loader: a user's list of plugins to leave out keeps
    the real one (it still loads the others), and the command's result is the same."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "some_plugin")
    proc, modules = imported_by("sign", "send", "--to", FRIEND, "--value", "1wei", home=home)
    assert proc.returncode == 1 and "signer.token" in proc.stderr
    assert {"pydantic.plugin._loader", "importlib.metadata"} <= modules


PROBE = """
import atexit, gc, json, sys

def report():
    from pydantic import BaseModel
    built, todo = [], [BaseModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__dict__.get("__pydantic_complete__"):
                built.append(sub.__module__ + "." + sub.__qualname__)
    print(json.dumps({"gc": gc.isenabled(), "built": sorted(built),
                      "typer_adapters": "typer._adapters" in sys.modules,
                      "typer": "typer" in sys.modules, "asyncio": "asyncio" in sys.modules,
                      "plugins": __import__("os").environ.get("PYDANTIC_DISABLE_PLUGINS")}), file=sys.stderr)

class Teardown:
    def __del__(self):
        print("teardown ran", file=sys.stderr)  # module teardown reaches it; the one-shot exit does not


teardown = Teardown()
atexit.register(report)
from bot.cli.entry import main
sys.argv = ["owlia", *sys.argv[1:]]
main()
"""


def probed(tmp_path, *argv: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run `owlia ARGV` as the console script does (`bot.cli.entry.main`) and report, from an atexit
    handler, what it built: the pydantic models that have validators, GC on or off."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    proc = subprocess.run([sys.executable, str(probe), *argv], capture_output=True, text=True, timeout=60)
    return proc, json.loads(next(line for line in reversed(proc.stderr.splitlines()) if line.startswith("{")))


def test_sign_send_builds_only_the_models_it_reads(tmp_path) -> None:
    """The work, not just the imports: up to the token check `owlia sign send` builds the settings models
    (the config) and nothing else: no reply or request model, no typer adapter; it runs with the cyclic
    GC off (one-shot) and loads no pydantic plugin."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    proc, seen = probed(tmp_path, "--home", str(home), "sign", "send", "--to", FRIEND, "--value", "1wei")
    assert proc.returncode == 1 and "signer.token" in proc.stderr
    assert set(seen["built"]) <= {
        "signer.wire.settings.SignerConfig",
        "signer.wire.settings.ChainSettings",
        "signer.wire.settings.SignerSettings",
    }, seen["built"]
    assert "signer.wire.settings.SignerConfig" in seen["built"]
    assert seen["gc"] is False and seen["typer_adapters"] is False and seen["plugins"] == "__all__"


def test_a_signed_send_builds_two_reply_models_and_exits_with_its_code(tmp_path, stack) -> None:
    """The whole command against a real signer on anvil: the auth and sign replies are the only reply
    models built; the answer is printed whole and the exit code is the outcome's (0 signed, 4 denied)
    through the one-shot exit, with neither typer nor an event loop loaded."""
    stack.funded_session_key()
    (stack.home / "secrets").mkdir(mode=0o700, exist_ok=True)
    write_private_file(stack.home / "secrets" / "signer.token", stack.client_token("cli").encode())
    send = ("--home", str(stack.home), "sign", "send", "--to", FRIEND, "--value", "1000wei")
    proc, seen = probed(tmp_path, *send)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "signed"
    assert sorted(seen["built"]) == [
        "signer.wire.settings.SignerConfig",
        "signer.wire.sign_replies.AuthReply",
        "signer.wire.sign_replies.SignReply",
    ]
    assert seen["gc"] is False and seen["typer_adapters"] is False and "teardown ran" not in proc.stderr
    assert seen["typer"] is False and seen["asyncio"] is False  # the typer-free path, a blocking socket
    denied, _ = probed(tmp_path, *send, "--chain", "5")
    assert denied.returncode == 4 and json.loads(denied.stdout)["status"] == "denied"


def test_help_lists_every_command_group() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--help"], check=True, capture_output=True, text=True
    ).stdout
    for command in (
        "up",
        "start",
        "chat",
        "init",
        "doctor",
        "signer",
        "pair",
        "cron",
        "skill",
        "companion",
        "bridge",
        "security",
        "service",
    ):
        assert f" {command} " in out, command


@pytest.mark.parametrize("name", list(MOUNTS))
def test_help_lists_what_each_command_says_of_itself(name: str) -> None:
    """The root's summaries are written next to the loaders so `--help` imports nothing: each must be the
    first paragraph of the help its command shows once loaded."""
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    assert MOUNTS[name].summary == summary(command.help)


def walk(command, path=()):
    yield path, command
    for name in list(getattr(command, "commands", {})):
        yield from walk(command.commands[name], (*path, name))


def test_every_command_loads_and_lists_whole_summaries() -> None:
    """Every command of every group is reachable through the lazy root, `owlia wallet pin` included, and
    a group's list shows each command's whole first paragraph (click would cut it at 45 characters)."""
    root = typer.main.get_command(app)
    paths = {path: command for path, command in walk(root)}
    assert ("wallet", "pin") in paths and ("signer", "client", "add") in paths and len(paths) > 80
    for path, command in paths.items():
        if path and command.help:
            assert command.short_help == summary(command.help), path


def test_help_is_plain_text_and_a_typo_gets_a_suggestion() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "sgn"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "No such command 'sgn'. Did you mean 'sign', 'signer'?" in done.stderr
    assert "╭" not in done.stderr  # no rich panel: rich is not loaded for help or usage errors


def test_the_root_group_reports_its_commands_without_loading_them() -> None:
    root = typer.main.get_command(app)
    code = (
        "import json, sys, typer.main; from bot.cli.app import app; "
        "root = typer.main.get_command(app); names = list(root.commands); 'sign' in root.commands; "
        "print(json.dumps([names, sorted(m for m in sys.modules if m.startswith('bot.cli.'))]))"
    )
    names, loaded = json.loads(
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    )
    assert names == list(MOUNTS) == list(root.commands)
    assert loaded == [
        *("bot.cli.app", "bot.cli.lazy", "bot.cli.plain", "bot.cli.process", "bot.cli.say", "bot.cli.values")
    ]
