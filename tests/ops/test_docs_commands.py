"""Every shell block of README.md and docs/*.md is run as written, or visibly marked as an example.

A shell block is a fenced block labelled bash, sh, shell, console or zsh. Each one is either:

- run here, in document order, on one fresh HOME per doc (no OWLIA_/TELEGRAM_/DISCORD_ settings, no model
  key, this checkout's `owlia` first on PATH), so a doc's later commands see what its earlier ones made.
  WALKS below says, per doc, what each command must print and what a reader types at its prompts; a
  block the doc says to run "in a terminal of its own" runs in the background until it prints that it
  is ready (and, for a server, until its port accepts connections), and is stopped as a reader would
  (`/quit`, or Ctrl-C);
- run by another test named in WALKS (`RunElsewhere`: README's quick start and the tier3.md setup,
  tests/ops/test_documented_commands.py); or
- marked as an example that needs a real account or the outside world (a Telegram token, an OAuth
  server, Docker, root...) by this line, visible to a reader, just before the block (blank lines
  between are fine):

      *Example only, needs a real Telegram account.*

  The reason after "needs" must not be empty.

What a reader fills in, the test fills in too, from an earlier command's output (a walk's `fill`:
`sk_...`, `dev_...`, `j1a2b3c4`, the pairing link); nothing else in a command is changed but the ports. The dev chain's and the bridge's ports, 8545 and 8765 as
written, become free ports (other stacks run on this machine), which also proves the `--port` options
reach the commands after them.

A block that is neither run nor marked fails `test_every_shell_block_is_run_or_marked`, which says
which doc, which line and how to mark it; a walk whose doc changed (another first command, more or
fewer commands) fails there too, before anything runs.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.ops.doc_commands import ROOT, DocBlock, Lines, doc_blocks, documented_docs, reader_env

pytestmark = pytest.mark.timeout(600)

DEV_PORTS = ("8545", "8765")  # the dev chain's and the bridge's, as the docs write them
HOW_TO_MARK = (
    "Either run it: add it to WALKS in tests/ops/test_docs_commands.py (each command, what it must print), "
    "or, if it needs a real account or the outside world, put this line just before the block:\n"
    "    *Example only, needs <what: a real Telegram account, a Docker engine, root...>.*"
)


@dataclass(frozen=True)
class Cmd:
    """One command of a block, in order: how it starts, what it must print, what a reader types at its
    prompts, its exit status; `after` = (a terminal's first command, text, times): wait until that
    terminal has printed the text that many times first (the reader watches it)."""

    starts: str
    says: tuple[str, ...] = ()
    typed: str = ""
    code: int = 0
    after: tuple[str, str, int] | None = None


@dataclass(frozen=True)
class Here:
    """A block run command by command in the reader's terminal."""

    cmds: tuple[Cmd, ...]

    @property
    def starts(self) -> str:
        return self.cmds[0].starts


@dataclass(frozen=True)
class Terminal:
    """A block run "in a terminal of its own": in the background, as one script, until stopped."""

    starts: str
    ready: str  # the line that says it is up
    says: tuple[str, ...] = ()  # in its whole output, checked once it has stopped
    typed: str = ""  # what the reader types into it (stdin stays open)
    stop: str | None = None  # typed to stop it; None: Ctrl-C (SIGINT to its process group)
    until: str | None = None  # stopped before the block starting so; None: at the doc's end
    port: str | None = None  # a port (as written) that must accept connections before going on
    stopped: int = 0  # its exit status once stopped (130: interrupted by Ctrl-C, as a shell reports it)


@dataclass(frozen=True)
class RunElsewhere:
    """A block another test runs as written."""

    starts: str
    test: str  # path::name


Step = Here | Terminal | RunElsewhere


@dataclass(frozen=True)
class Walk:
    steps: tuple[Step, ...]
    cwd: str = "home"  # or "checkout": the block uses paths of the checkout (.venv/bin, examples)
    fill: dict[str, str] = field(default_factory=dict)  # placeholder as written -> regex (group 1)


FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
DOCUMENTED = "tests/ops/test_documented_commands.py"

WALKS: dict[str, Walk] = {
    "README.md": Walk(
        cwd="checkout",
        steps=(
            RunElsewhere(
                "bash .ci/setup && .venv/bin/owlia up --demo",
                f"{DOCUMENTED}::test_the_run_command_in_the_readme_works_as_written",
            ),
            Terminal(
                ".venv/bin/owlia up --port 8545",
                ready="console channel below",
                stop="/quit\n",
                says=("dev chain 31337 at http://127.0.0.1:", "signer ready", "bye"),
            ),
            Here(
                (
                    Cmd(f'.venv/bin/owlia chat -m "/send {FRIEND}', says=("Signed and sent", "0.001 ETH")),
                    Cmd(".venv/bin/owlia sign send", says=('"status": "signed"', '"broadcast": true')),
                    Cmd(".venv/bin/owlia audit verify", says=('"ok": true', '"problems": []')),
                )
            ),
            RunElsewhere(
                "bash .ci/setup && .venv/bin/python -m pytest -q",
                f"{DOCUMENTED}::test_ci_runs_exactly_the_test_command_in_the_readme",
            ),
        ),
    ),
    "docs/bot.md": Walk(
        steps=(
            Terminal(
                "owlia init",
                ready="console channel below",
                stop="/quit\n",
                until="owlia start",
                says=("wrote ", "signer ready", "bye"),
            ),
            Here(
                (
                    Cmd('owlia chat -m "/balance"', says=("Balances on anvil (31337)", "session key 0x")),
                    Cmd(
                        "owlia chat",
                        typed="/balance\n/quit\n",
                        says=("OwliaBot console", "No language model is set up", "Balances on anvil", "bye"),
                    ),
                )
            ),
            Terminal(
                "owlia start",
                ready="Ctrl-C stops.",
                says=("owlia: running with no chat channel", "telegram skipped: no token"),
            ),
        ),
    ),
    "docs/companion.md": Walk(
        fill={
            "sk_...": r"session key (sk_[0-9a-f]+)",
            "dev_...": r"paired as (dev_[0-9a-f]+)",
            "'http://127.0.0.1:8765/app/#v=1&id=pair_...&code=...&signer=...'": r"owlia companion link ('[^']+')",
        },
        steps=(
            Terminal("owlia init && owlia up --port 8545", ready="console channel below", stop="/quit\n"),
            Here((Cmd("owlia signer client add bridge", says=("token for bridge (bridge) written to",)),)),
            Terminal(
                "owlia bridge serve --port 8765",
                ready="bridge on http://127.0.0.1:",
                port="8765",
                stopped=130,
            ),
            Here(
                (
                    Cmd(
                        "owlia companion pair",
                        says=(
                            "pairing code:",
                            "owlia companion link 'http://127.0.0.1:",
                            "written to pair.png",
                        ),
                    ),
                )
            ),
            Here(
                (
                    Cmd("(umask 077; echo"),
                    Cmd("owlia companion init", says=("main account 0x", "BACK IT UP NOW")),
                    Cmd("owlia companion link", says=("paired as dev_",)),
                    Cmd("owlia chain fund main 1eth", says=("sent 1eth to",)),
                )
            ),
            Terminal(
                "owlia companion run --passphrase-file ~/.main.pass",
                ready="connected to http://127.0.0.1:",
                typed="a\na\n",
                says=("APPROVAL REQUEST", "SEND 0.001 ETH", "top up session key", "approve: signed"),
                stopped=130,
            ),
            Here(
                (
                    Cmd(
                        'owlia chat -m "/send 0x000000000000000000000000000000000000dEaD',
                        says=("Waiting for your approval",),
                    ),
                    Cmd('owlia chat -m "/send dev-friend 0.001eth"', says=("Signed and sent", "dev-friend")),
                    Cmd("owlia companion topup", says=('"status": "pending_approval"', "top up session key")),
                    Cmd(
                        "owlia companion outstanding",
                        says=("0 outstanding, 2 settled",),
                        after=("owlia companion run", "approve: signed", 2),
                    ),
                    Cmd("owlia companion freeze", says=('"frozen": true',)),
                    Cmd("owlia companion unfreeze", says=('"frozen": false',)),
                    Cmd("owlia companion list", says=('"device_id": "dev_', '"active": true')),
                    Cmd("owlia companion revoke", says=("revoked",)),
                )
            ),
        ),
    ),
    "docs/cron.md": Walk(
        fill={"j1a2b3c4": r"added (j[0-9a-f]+)"},
        steps=(
            Here(
                (
                    Cmd("owlia cron add --at", says=("added j", "once at")),
                    Cmd("owlia cron add --every 6h", says=("every 6 h",)),
                    Cmd('owlia cron add --cron "0 9 * * 1-5"', says=("cron '0 9 * * 1-5' (Europe/Berlin)",)),
                    Cmd(
                        "owlia cron list",
                        says=('"payload": "send the reminder: renew the domain"', '"target": "telegram:123"'),
                    ),
                    Cmd("owlia cron history -n 20", says=("[]",)),
                    Cmd("owlia cron rm", says=("removed j",)),
                )
            ),
        ),
    ),
    "docs/skills.md": Walk(
        cwd="checkout",
        steps=(
            Here(
                (
                    Cmd(
                        "owlia skill install skills_runtime/examples/gas_tracker",
                        typed="y\n",
                        says=("skill_gas_tracker_gas_price", "installed gas_tracker (enabled)"),
                    ),
                    Cmd("owlia skill list", says=('"name": "gas_tracker"', '"state": "ok"')),
                    Cmd("owlia skill info gas_tracker", says=("skill gas_tracker v1.0.0", "network: none")),
                    Cmd("owlia skill disable gas_tracker", says=("disabled gas_tracker",)),
                    Cmd("owlia skill approve gas_tracker", says=("nothing to approve",)),
                    Cmd("owlia skill remove gas_tracker", typed="y\n", says=("removed gas_tracker",)),
                )
            ),
        ),
    ),
    "docs/mcp.md": Walk(
        cwd="checkout",
        steps=(
            Here(
                (
                    Cmd("owlia mcp add time", says=("added time (disabled)",)),
                    Cmd("owlia mcp add everything", says=("added everything (disabled)",)),
                    Cmd("owlia mcp add remote", says=("added remote (disabled)",)),
                    Cmd("owlia mcp add keyed", says=("added keyed (disabled)",)),
                    Cmd("owlia mcp add hosted", says=("sign in with `owlia mcp login hosted`",)),
                    Cmd("owlia mcp add legacy", says=("added legacy (disabled)",)),
                    Cmd(
                        "owlia mcp approve time ",
                        typed="read\nskip\ny\n",
                        says=("level for get_current_time", "approved time: get_current_time=read"),
                    ),
                    Cmd("owlia mcp approve time --level", says=("approved time: get_current_time=read",)),
                    Cmd("owlia mcp list", says=('"get_current_time": "read"', '"transport": "sse"')),
                    Cmd("owlia mcp info time", says=("get_current_time",)),
                    Cmd("owlia mcp test time", says=('"get_current_time": "ok"',)),
                    Cmd("owlia mcp call time get_current_time", says=('"timezone": "UTC"', "untrusted")),
                    Cmd("owlia mcp approve everything", says=("approved everything: echo=read", "prompts")),
                    Cmd("owlia mcp prompt everything args-prompt", says=("What's weather in Lisbon?",)),
                    Cmd("owlia mcp disable time", says=("disabled time",)),
                    Cmd("owlia mcp remove time", typed="y\n", says=("removed time",)),
                )
            ),
        ),
    ),
    "docs/self-hosting.md": Walk(
        steps=(
            Here((Cmd("owlia init --docker --dir ~/owliabot-deploy", says=("docker compose build",)),)),
            RunElsewhere(
                "owlia init && owlia up --demo",
                f"{DOCUMENTED}::test_the_laptop_path_in_self_hosting_works_as_written",
            ),
            Here(
                (
                    # on this fresh home nothing runs yet: doctor says what is missing, and exits 1
                    Cmd("owlia doctor", code=1, says=("NOT OK", "fix: ")),
                    Cmd("owlia security audit", says=("OK: 0 critical",)),
                )
            ),
        ),
    ),
    "docs/tier3.md": Walk(
        steps=(
            RunElsewhere(
                "owlia init ",
                f"{DOCUMENTED}::test_the_tier3_dev_setup_runs_as_written_on_a_fresh_home",
            ),
            RunElsewhere(
                "(umask 077; echo 'a dev chain main key passphrase' > ~/main.pass)",
                f"{DOCUMENTED}::test_the_tier3_dev_setup_runs_as_written_on_a_fresh_home",
            ),
        ),
    ),
}


def runnable_blocks(doc: str, text: str | None = None) -> list[DocBlock]:
    return [block for block in doc_blocks(doc, text) if block.is_shell and block.mark is None]


def walk_problems(doc: str, text: str | None = None, walks: dict[str, Walk] = WALKS) -> list[str]:
    """Why the doc's unmarked shell blocks and its walk do not match, block for block (empty: they do)."""
    blocks = runnable_blocks(doc, text)
    steps = walks[doc].steps if doc in walks else ()
    problems: list[str] = []
    for index, block in enumerate(blocks):
        step = steps[index] if index < len(steps) else None
        if step is None or not block.first.startswith(step.starts):
            expected = f"the walk expects a block starting {step.starts!r} here" if step else "no walk step"
            problems.append(f"{block.where()} is neither run nor marked ({expected}). {HOW_TO_MARK}")
            continue
        if isinstance(step, Here):
            if not any(cmd.says for cmd in step.cmds):
                problems.append(f"{block.where()}: the walk checks nothing it prints (give a command `says`)")
            commands = block.commands
            if len(commands) != len(step.cmds) or any(
                not command.startswith(cmd.starts) for command, cmd in zip(commands, step.cmds)
            ):
                problems.append(
                    f"{block.where()} changed: its commands {commands} no longer match the walk's "
                    f"{[cmd.starts for cmd in step.cmds]} in tests/ops/test_docs_commands.py. {HOW_TO_MARK}"
                )
        if isinstance(step, RunElsewhere):
            path, _, name = step.test.partition("::")
            if f"def {name}(" not in (ROOT / path).read_text(encoding="utf-8"):
                problems.append(f"{block.where()}: {step.test}, said to run it, does not exist")
    for step in steps[len(blocks) :]:
        problems.append(f"{doc}: the walk's step starting {step.starts!r} has no block left in the doc")
    return problems


def test_every_shell_block_is_run_or_marked() -> None:
    problems: list[str] = []
    for doc in documented_docs():
        for block in doc_blocks(doc):
            if block.is_shell and block.mark is not None and not block.mark_reason:
                problems.append(
                    f"{block.where()} is marked {block.mark!r} without saying what it needs: write "
                    "*Example only, needs <a real Telegram account, a Docker engine, root...>.*"
                )
            if not block.is_shell and block.lang in ("", "text") and block.first.startswith("owlia "):
                problems.append(
                    f"{block.where()} holds owlia commands in a block that is not labelled as shell: label it "
                    f"```bash. {HOW_TO_MARK}"
                )
        problems += walk_problems(doc)
    assert set(WALKS) <= set(documented_docs()), set(WALKS) - set(documented_docs())
    assert not problems, "\n\n".join(problems)


def test_a_new_block_neither_run_nor_marked_fails_and_says_how_to_mark_it() -> None:
    """The check itself, on a doc as another change might leave it: a walked block, a marked one, a new one."""
    doc = "docs/new.md"
    walks = {doc: Walk(steps=(Here((Cmd("owlia init", says=("wrote",)),)),))}
    text = (
        "# New\n\n```bash\nowlia init   # the home\n```\n\n*Example only, needs a real Telegram account.*\n\n"
        "```bash\nowlia start\n```\n\n```console\n$ owlia up --port 8545\ndev chain 31337 at ...\n```\n"
    )
    [problem] = walk_problems(doc, text, walks)
    assert problem.startswith("docs/new.md:13 (```console block starting 'owlia up --port 8545')")
    assert "neither run nor marked" in problem and "*Example only, needs <what:" in problem
    assert (
        walk_problems(doc, text.replace("```console", "*Example only, needs a phone.*\n\n```console"), walks)
        == []
    )


def test_a_mark_without_a_reason_is_refused() -> None:
    """The check itself: an empty reason, or none, is not a mark that counts."""
    for mark, reason in (
        ("*Example only, needs a real Telegram account.*", "a real Telegram account"),
        ("*Example only, needs .*", ""),
        ("*Example only.*", ""),
        ("*Example only, needs root on a Linux server with systemd.*", "root on a Linux server with systemd"),
    ):
        block = DocBlock(doc="x.md", line=1, lang="bash", text="owlia up", mark=mark)
        assert block.mark_reason == reason, mark


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Running:
    step: Terminal
    proc: subprocess.Popen
    lines: Lines
    where: str


class Reader:
    """One reader following one doc on a fresh HOME: runs its blocks, keeps what they printed."""

    def __init__(self, doc: str, home: Path) -> None:
        self.doc = doc
        self.walk = WALKS[doc]
        self.env = reader_env(home)
        self.cwd = ROOT if self.walk.cwd == "checkout" else home
        self.ports = {port: str(free_port()) for port in DEV_PORTS}
        self.printed: list[str] = []
        self.terminals: list[Running] = []

    def as_typed(self, text: str) -> str:
        """The command with what the reader fills in: placeholders from earlier output, free ports."""
        for placeholder, pattern in self.walk.fill.items():
            if placeholder in text:
                found = re.search(pattern, "".join(self.printed) + self.terminal_output())
                assert found, f"{self.doc}: nothing printed so far gives {placeholder!r} ({pattern})"
                text = text.replace(placeholder, found.group(1))
        for written, port in self.ports.items():
            text = re.sub(rf"\b{written}\b", port, text)
        return text

    def terminal_output(self) -> str:
        return "".join("".join(t.lines.seen) for t in self.terminals)

    def here(self, block: DocBlock, step: Here) -> None:
        for command, cmd in zip(block.commands, step.cmds):
            if cmd.after is not None:
                starts, text, times = cmd.after
                [terminal] = [t for t in self.terminals if t.step.starts.startswith(starts)]
                terminal.lines.wait_for(text, timeout=120, times=times)
            typed = self.as_typed(command)
            done = subprocess.run(
                ["bash", "-o", "pipefail", "-c", typed],
                cwd=self.cwd,
                env=self.env,
                input=cmd.typed,
                capture_output=True,
                text=True,
                timeout=300,
            )
            out = done.stdout + done.stderr
            self.printed.append(out)
            where = f"{block.where()}, command {command!r}"
            assert done.returncode == cmd.code, (
                f"{where} exited {done.returncode}, not {cmd.code}:\n{out[-3000:]}"
            )
            for said in cmd.says:
                assert said in out, f"{where} did not print {said!r}:\n{out[-3000:]}"

    def start(self, block: DocBlock, step: Terminal) -> None:
        proc = subprocess.Popen(
            ["bash", "-c", self.as_typed(block.text)],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        running = Running(step, proc, Lines(proc), block.where())
        self.terminals.append(running)
        if step.typed:
            proc.stdin.write(step.typed)
            proc.stdin.flush()
        running.lines.wait_for(step.ready, timeout=300)
        if step.port is not None:
            self.wait_listening(int(self.ports[step.port]), running)

    @staticmethod
    def wait_listening(port: int, running: Running) -> None:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
            assert running.proc.poll() is None, f"{running.where} ended:\n" + "".join(running.lines.seen)
            assert time.monotonic() < deadline, f"{running.where}: nothing listens on {port}"
            time.sleep(0.1)

    def stop(self, running: Running) -> None:
        """As a reader stops it: its stop command typed, else Ctrl-C; then it must end cleanly."""
        if running.step.stop is not None:
            running.proc.stdin.write(running.step.stop)
            running.proc.stdin.flush()
        else:
            os.killpg(running.proc.pid, signal.SIGINT)
        code = running.proc.wait(timeout=120)
        out = running.lines.drain(timeout=10)
        self.terminals.remove(running)
        self.printed.append(out)
        assert code == running.step.stopped, f"{running.where} exited {code} when stopped:\n{out[-3000:]}"
        for said in running.step.says:
            assert said in out, f"{running.where} did not print {said!r}:\n{out[-3000:]}"

    def follow(self) -> None:
        blocks = runnable_blocks(self.doc)
        try:
            for block, step in zip(blocks, self.walk.steps):
                for running in [
                    t for t in self.terminals if t.step.until and block.first.startswith(t.step.until)
                ]:
                    self.stop(running)
                if isinstance(step, Here):
                    self.here(block, step)
                elif isinstance(step, Terminal):
                    self.start(block, step)
            for running in reversed(list(self.terminals)):
                self.stop(running)
        finally:
            for running in self.terminals:
                if running.proc.poll() is None:
                    os.killpg(running.proc.pid, signal.SIGTERM)
                    try:
                        running.proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        os.killpg(running.proc.pid, signal.SIGKILL)


RUN_HERE = [doc for doc, walk in WALKS.items() if any(not isinstance(s, RunElsewhere) for s in walk.steps)]


@pytest.mark.parametrize("doc", RUN_HERE)
def test_the_doc_runs_as_written_on_a_fresh_home(doc: str, tmp_path) -> None:
    assert not walk_problems(doc), walk_problems(doc)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    Reader(doc, home).follow()
