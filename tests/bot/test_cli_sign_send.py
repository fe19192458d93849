"""`owlia sign send`'s typer-free path (bot/cli/entry.py, bot/cli/sign_send.py) is the typer command, minus
typer: it reads a command line only where typer reads it the same way, and prints the same bytes with the
same exit code. Compared against typer's real parser and the typer command run as its own process, on a
real signer on anvil."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import HealthCheck, given, settings, strategies as st
from typer._click.exceptions import ClickException
from typer.exceptions import Abort, Exit

from bot.cli.app import app
from bot.cli.sign_send import DEFAULT_CHAIN_ID, REQUIRED, SEND_OPTIONS, SendRequest, from_argv
from policies.kernel.files import write_private_file
from policies.kernel.home import resolve_home

FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
STRANGER = "0x000000000000000000000000000000000000dEaD"
ROOT_COMMAND = typer.main.get_command(app)
SEND_COMMAND = ROOT_COMMAND.commands["sign"].commands["send"]  # type: ignore[attr-defined]


def typer_reading(argv: list[str]) -> tuple[str, str, Path, dict[str, Any]] | None:
    """What the typer app makes of `argv`, parsed by its real parsers and converters (nothing invoked):
    the two command names, the home the command would use and the send command's values; None for
    a usage error, help or another kind of exit."""
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            with ROOT_COMMAND.make_context("owlia", list(argv)) as ctx:
                rest = [*ctx._protected_args, *ctx.args]
                if not rest:
                    return None
                group_name, group, rest = ROOT_COMMAND.resolve_command(ctx, rest)  # type: ignore[attr-defined]
                with group.make_context(group_name, rest, parent=ctx) as group_ctx:
                    rest = [*group_ctx._protected_args, *group_ctx.args]
                    if not rest:
                        return None
                    name, command, rest = group.resolve_command(group_ctx, rest)
                    with command.make_context(name, rest, parent=group_ctx) as command_ctx:
                        return group_name, name, resolve_home(ctx.params["home"]), dict(command_ctx.params)
    except (ClickException, Exit, Abort):
        return None


def as_typer_values(request: SendRequest) -> tuple[str, str, Path, dict[str, Any]]:
    values = dataclasses.asdict(request)
    return "sign", "send", values.pop("home"), values


# ---- the grammar -------------------------------------------------------------------------------


def test_the_grammar_is_the_typer_commands() -> None:
    """Every option of the typer command, with its name, its type, whether it is required and its default."""
    options = {opt: param for param in SEND_COMMAND.params for opt in param.opts}
    assert set(options) == set(SEND_OPTIONS)
    fields = {field.name: field for field in dataclasses.fields(SendRequest)}
    for opt, (name, kind) in SEND_OPTIONS.items():
        param = options[opt]
        assert param.name == name and param.nargs == 1 and not param.multiple and not param.secondary_opts
        assert param.envvar is None
        annotation = param.type_descriptor.annotation
        assert annotation is kind, (opt, annotation)
        assert param.required == (name in REQUIRED)
        if name not in REQUIRED:
            assert param.default == fields[name].default, opt
    assert fields["chain_id"].default == DEFAULT_CHAIN_ID
    (home,) = ROOT_COMMAND.params
    info = home.type_descriptor.parameter_info
    assert home.opts == ["--home"] and home.envvar == "OWLIA_HOME" and home.default is None
    assert (
        info.exists,
        info.file_okay,
        info.dir_okay,
        info.readable,
        info.writable,
        info.resolve_path,
        info.allow_dash,
    ) == (False, True, True, True, False, False, False)
    group = ROOT_COMMAND.commands["sign"]  # type: ignore[attr-defined]
    assert [p.name for p in group.params] == [] and list(group.commands) == ["send"]


def test_the_common_command_lines_take_the_typer_free_path(tmp_path: Path) -> None:
    home = str(tmp_path)
    for argv in (
        ["sign", "send", "--to", FRIEND, "--value", "1000wei"],
        ["--home", home, "sign", "send", "--to", FRIEND, "--value", "0.01eth", "--chain", "5"],
        [
            f"--home={home}",
            "sign",
            "send",
            f"--to={FRIEND}",
            "--value=5usdc",
            "--reason",
            "rent",
            "--idempotency-key",
            "rent-2026-11",
            "--data",
            "0x",
        ],
    ):
        fast = from_argv(argv, {})
        assert fast is not None, argv
        assert typer_reading(argv) == as_typer_values(fast)
    assert (
        from_argv(["sign", "send", "--to", FRIEND, "--value", "1wei"], {"OWLIA_HOME": home}).home == tmp_path
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["sign", "send", "--help"],
        ["sign", "send", "--to", FRIEND],
        ["sign", "send"],
        ["sign"],
        [],
        ["sign", "send", "--to", FRIEND, "--value", "1wei", "--to", FRIEND],  # repeated
        ["sign", "send", "--to", FRIEND, "--value", "1wei", "extra"],
        ["sign", "send", "--to", FRIEND, "--value", "1wei", "--chain", "0x5"],  # typer's converter words that
        ["sign", "send", "--to", FRIEND, "--value", "1wei", "--chain", "1" * 19],
        ["sign", "send", "--to", FRIEND, "--value", "1wei", "--", "x"],
        ["--home", "", "sign", "send", "--to", FRIEND, "--value", "1wei"],
        ["--home", "a", "--home", "b", "sign", "send", "--to", FRIEND, "--value", "1wei"],
        ["sign", "send", "--to", "\udcff", "--value", "1wei"],  # undecodable argv bytes
        ["signer", "send"],
        ["sign", "--home", "x", "send", "--to", FRIEND, "--value", "1wei"],
    ],
)
def test_anything_else_goes_to_typer(argv: list[str]) -> None:
    assert from_argv(argv, {}) is None


def test_a_completion_request_goes_to_typer() -> None:
    assert (
        from_argv(["sign", "send", "--to", FRIEND, "--value", "1wei"], {"_OWLIA_COMPLETE": "bash_complete"})
        is None
    )


VALUES = st.one_of(
    st.sampled_from(
        [
            FRIEND,
            "1000wei",
            "0.01eth",
            "",
            "-",
            "-1",
            "+5",
            "007",
            "5",
            "1_000",
            " 5",
            "5 ",
            "٣",
            "9" * 18,
            "9" * 19,
            "a=b",
            "--to",
            "--value",
            "--help",
            "sign",
            "send",
            "\udcff",
            "~/x",
            ".",
        ]
    ),
    st.text(st.characters(blacklist_characters="\x00"), max_size=12),
)
NAMES = st.sampled_from([*SEND_OPTIONS, "--home", "--help", "--chain-id", "--To", "-t", "--"])
REQUIRED_NAMES = [opt for opt, (name, _) in SEND_OPTIONS.items() if name in REQUIRED]


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[list[str], str | None]:
    """`[--home H] sign send OPTIONS`: mostly well formed (any values, options in any order, apart or
    joined by `=`), sometimes with one thing wrong; and an OWLIA_HOME or none."""
    argv: list[str] = []
    home_form = draw(st.sampled_from(["none", "apart", "joined"]))
    home = draw(st.sampled_from(["/tmp", "/no/such/home", "rel/home", "~/h", "", "\udcff", "a=b"]))
    if home_form == "apart":
        argv += ["--home", home]
    elif home_form == "joined":
        argv.append(f"--home={home}")
    argv += ["sign", "send"]
    names = draw(st.permutations(list(SEND_OPTIONS)))[: draw(st.integers(0, len(SEND_OPTIONS)))]
    if draw(st.booleans()):
        names = [*REQUIRED_NAMES, *(n for n in names if n not in REQUIRED_NAMES)]
    for name in names:
        value = draw(
            st.one_of(VALUES, st.integers(-(10**20), 10**20).map(str)) if name == "--chain" else VALUES
        )
        argv += [f"{name}={value}"] if draw(st.booleans()) else [name, value]
    wrong = draw(st.sampled_from(["nothing"] * 6 + ["insert", "bare", "drop"]))
    if wrong == "insert":
        argv.insert(draw(st.integers(0, len(argv))), draw(st.one_of(NAMES, VALUES)))
    elif wrong == "bare":
        argv.append(draw(NAMES))
    elif wrong == "drop" and argv:
        del argv[draw(st.integers(0, len(argv) - 1))]
    environ_home = draw(st.sampled_from([None, "", "/tmp", "/no/such/home"]))
    return argv, environ_home


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=command_lines())
def test_the_typer_free_reading_is_typers_wherever_it_reads_one(case: tuple[list[str], str | None]) -> None:
    """For any command line: either the typer-free path leaves it to typer, or typer's parsers and converters
    read the same command, home and values from it."""
    argv, environ_home = case
    saved = os.environ.pop("OWLIA_HOME", None)
    try:
        if environ_home is not None:
            os.environ["OWLIA_HOME"] = environ_home
        fast = from_argv(argv, os.environ)
        if fast is not None:
            assert typer_reading(argv) == as_typer_values(fast), argv
    finally:
        os.environ.pop("OWLIA_HOME", None)
        if saved is not None:
            os.environ["OWLIA_HOME"] = saved


# ---- the same bytes, the same exit ----------------------------------------------------------------

TYPER_PATH = "import sys; from bot.cli.app import main; sys.argv = ['owlia', *sys.argv[1:]]; main()"
VOLATILE = re.compile(rb'"(request_id|tx_hash|nonce|expires_at)": ("[^"]*"|\d+(\.\d+)?)')


def both_paths(*argv: str, env: dict[str, str] | None = None) -> list[tuple[int, bytes, bytes]]:
    """(exit code, stdout, stderr) of the console script's path (typer-free for a plain line) and of the
    typer app's, each as its own process; ids, hashes and nonces that differ per request masked. A
    `{path}` in an argument becomes each path's own name (an idempotency key each)."""
    runs = []
    for name, program in (("entry", ["-m", "bot.cli"]), ("typer", ["-c", TYPER_PATH])):
        done = subprocess.run(
            [sys.executable, *program, *(a.replace("{path}", name) for a in argv)],
            capture_output=True,
            timeout=60,
            env=env if env is not None else os.environ.copy(),
        )
        runs.append((done.returncode, VOLATILE.sub(rb'"\1": X', done.stdout), done.stderr))
    return runs


@pytest.fixture
def cli_stack(stack):
    stack.funded_session_key()
    (stack.home / "secrets").mkdir(mode=0o700, exist_ok=True)
    write_private_file(stack.home / "secrets" / "signer.token", stack.client_token("cli").encode())
    return stack


def test_every_outcome_is_the_typer_commands(cli_stack, tmp_path) -> None:
    """Signed, pending, denied, a refused amount, a signer error as JSON: the same output and exit code."""
    home = ("--home", str(cli_stack.home))
    cases = [
        (("--to", FRIEND, "--value", "1000wei"), 0),
        (("--to", STRANGER, "--value", "1000wei"), 3),
        (("--to", FRIEND, "--value", "1000wei", "--chain", "5"), 4),
        (("--to", FRIEND, "--value", "0.1.2eth"), 1),
        (("--to", FRIEND, "--value", "5"), 1),
        (("--to", FRIEND, "--value", "5nosuchtoken"), 1),
        (
            (
                "--to",
                FRIEND,
                "--value",
                "1000wei",
                "--idempotency-key",
                "cli-{path}-key",
                "--reason",
                "twice",
            ),
            0,
        ),
        (
            (
                "--to",
                FRIEND,
                "--value",
                "1000wei",
                "--idempotency-key",
                "cli-{path}-key",
                "--reason",
                "twice",
            ),
            0,
        ),  # replayed
        (
            ("--to", STRANGER, "--value", "2000wei", "--idempotency-key", "cli-{path}-key"),
            1,
        ),  # reused: the signer's error
        (("--to", "not-an-address", "--value", "1wei"), 1),
        (("--to", "dev-friend", "--value", "1000wei"), 0),  # a name from the signer's address book
        (
            ("--to", "DEV-FRIEND", "--value", "1wei", "--chain", "5"),
            1,
        ),  # the book has no such name on chain 5
    ]
    outputs = []
    for options, code in cases:
        fast, slow = both_paths(*home, "sign", "send", *options)
        assert fast == slow, options
        assert fast[0] == code, (options, fast)
        outputs.append(fast[1])
    assert b'"replayed": true' in outputs[7] and b'"status": "error"' in outputs[8]
    assert b'"status": "signed"' in outputs[10] and b"dev-friend" in outputs[10]


def test_every_refusal_before_the_signer_is_the_typer_commands(tmp_path) -> None:
    """No token, a token readable by others, a config that does not validate, no signer listening."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    argv = ("--home", str(home), "sign", "send", "--to", FRIEND, "--value", "1wei")
    environ = {k: v for k, v in os.environ.items() if k != "OWLIA_SIGNER_TOKEN"}
    no_token = both_paths(*argv, env=environ)
    assert no_token[0] == no_token[1] and no_token[0][0] == 1 and b"error: no signer token" in no_token[0][2]
    (home / "secrets").mkdir(mode=0o700)
    (home / "secrets" / "signer.token").write_text("t" * 32)
    (home / "secrets" / "signer.token").chmod(0o644)
    loose = both_paths(*argv, env=environ)
    assert loose[0] == loose[1] and b"readable by others" in loose[0][2]
    (home / "secrets" / "signer.token").chmod(0o600)
    unreachable = both_paths(*argv, env=environ)
    assert unreachable[0] == unreachable[1] and b"cannot reach the signer" in unreachable[0][1]
    (home / "config.yaml").write_text("chains:\n  - id: 0\n    name: x\n    rpc_url: ftp://x\nsigner: [1]\n")
    invalid = both_paths(*argv, env=environ)
    assert invalid[0] == invalid[1] and invalid[0][0] == 1 and b"invalid configuration" in invalid[0][2]
    (home / "config.yaml").write_text("chains: [\n")
    broken = both_paths(*argv, env=environ)
    assert broken[0] == broken[1] and b"is not valid YAML" in broken[0][2]


def test_a_worded_error_on_a_terminal_keeps_its_colour(tmp_path) -> None:
    """click colours `error: ...` red on a terminal and strips it elsewhere: the typer-free path prints
    it as `fail` does (bot/cli/say.py), so a terminal sees the same bytes."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    argv = ["--home", str(home), "sign", "send", "--to", FRIEND, "--value", "1wei"]
    environ = {k: v for k, v in os.environ.items() if k != "OWLIA_SIGNER_TOKEN"}
    seen = []
    for program in (["-m", "bot.cli"], ["-c", TYPER_PATH]):
        controller, terminal = pty.openpty()
        try:
            done = subprocess.run(
                [sys.executable, *program, *argv],
                stdout=subprocess.PIPE,
                stderr=terminal,
                timeout=60,
                env=environ,
            )
            os.close(terminal)
            terminal = -1
            chunks = []
            while True:
                try:
                    chunk = os.read(controller, 4096)
                except OSError:  # EIO: the terminal's other end is closed and drained
                    break
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(controller)
            if terminal >= 0:
                os.close(terminal)
        seen.append((done.returncode, done.stdout, b"".join(chunks)))
    assert seen[0] == seen[1]
    assert seen[0][0] == 1 and b"\x1b[31merror: no signer token" in seen[0][2]


def test_a_closed_stdout_keeps_the_outcomes_exit_code(cli_stack) -> None:
    """Started with stdout closed, the answer goes nowhere (click's echo writes nothing) and the exit
    code is still the outcome's, on both paths; before, the one-shot exit raised on the missing stream."""
    argv = ("--home", str(cli_stack.home), "sign", "send", "--to", FRIEND, "--value", "1000wei")
    for extra, code in (((), 0), (("--chain", "5"), 4)):
        for program in (["-m", "bot.cli"], ["-c", TYPER_PATH]):
            done = subprocess.run(
                [sys.executable, *program, *argv, *extra],
                stderr=subprocess.PIPE,
                timeout=60,
                preexec_fn=lambda: os.close(1),
            )
            assert (done.returncode, done.stderr) == (code, b""), (program, extra)
