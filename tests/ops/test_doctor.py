"""`owlia doctor` against real things: anvil, the signer daemon, local Telegram/Discord/LLM servers."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import threading
from pathlib import Path

import pytest
import typer
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from bot.cli import doctor_cmd
from bot.devchain import free_port
from bot.ops.checks import Report
from bot.ops.doctor import doctor
from policies.kernel.files import write_private_file
from tests.fakes.discord_server import BOT_TOKEN, FakeDiscord
from tests.fakes.telegram_server import FakeTelegramServer
from tests.ops.conftest import context, run_init, set_config


def run(home: Path, **kwargs) -> Report:
    kwargs.setdefault("rpc_timeout", 2.0)
    kwargs.setdefault("http_timeout", 2.0)
    # a bridge some other test (or developer) runs on the default port must not leak in here
    kwargs["env"] = {"OWLIA_BRIDGE_URL": f"http://127.0.0.1:{free_port()}", **kwargs.get("env", {})}
    return doctor(context(home, **kwargs))


def check(report: Report, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


def dead_chain(home: Path, chain_id: int = 31337) -> None:
    set_config(
        home,
        chains=[{"id": chain_id, "name": "anvil", "rpc_url": f"http://127.0.0.1:{free_port()}", "dev": True}],
    )


def test_fresh_home_names_what_to_run(home):
    dead_chain(home)
    report = run(home)
    assert check(report, "DOC-PY-001").status == "pass"
    assert check(report, "DOC-CONF-001").status == "pass"
    assert check(report, "DOC-WS-001").status == "pass"
    assert check(report, "DOC-SANDBOX-001").status == "pass"
    [signer] = check(report, "DOC-SIGNER-001").findings
    assert "owlia signer client add" in signer.hint
    [chain] = check(report, "DOC-CHAIN-001").findings
    assert "not reachable" in chain.message
    assert "owlia auth setup" in {f.hint for f in check(report, "DOC-LLM-001").findings}
    assert not report.ok


def test_missing_config_and_workspace_file(tmp_path):
    report = run(tmp_path / "nothing")
    assert check(report, "DOC-CONF-001").findings[0].hint == "owlia init"
    home = tmp_path / "home"
    run_init(home)
    (home / "workspace" / "SOUL.md").unlink()
    [finding] = check(run(home), "DOC-WS-001").findings
    assert "SOUL.md" in finding.message and finding.hint == "owlia init"


def test_invalid_config_is_reported_with_the_field(home):
    (home / "config.yaml").write_text("bot:\n  agent: {max_rounds: 0}\n")
    [finding] = check(run(home), "DOC-CONF-001").findings
    assert "max_rounds" in finding.message


@pytest.mark.chain
def test_signer_and_chain_ok_then_wrong_token_then_wrong_chain(make_stack, anvil, tmp_path):
    stack = make_stack().start()
    (stack.home / "secrets").mkdir(mode=0o700)
    write_private_file(stack.home / "secrets" / "signer.token", stack.client_token("bot").encode())
    report = run(stack.home)
    assert check(report, "DOC-SIGNER-001").status == "pass", check(report, "DOC-SIGNER-001")
    assert check(report, "DOC-CHAIN-001").status == "pass", check(report, "DOC-CHAIN-001")
    write_private_file(stack.home / "secrets" / "signer.token", b"owl_000000000000_" + b"A" * 43)
    [finding] = check(run(stack.home), "DOC-SIGNER-001").findings
    assert "refused" in finding.message
    stack.stop()
    [finding] = check(run(stack.home), "DOC-SIGNER-001").findings
    assert "no signer answering" in finding.message and "owlia signer serve" in finding.hint
    other = tmp_path / "other"
    run_init(other)
    set_config(other, chains=[{"id": 5, "name": "goerli", "rpc_url": anvil.url}])
    [finding] = check(run(other), "DOC-CHAIN-001").findings
    assert "31337" in finding.message and "config says 5" in finding.message


def test_telegram_token_checked_with_getme(home):
    with FakeTelegramServer() as tg:
        set_config(home, bot={"channels": {"telegram": {"api_base": tg.url}}})
        write_private_file(home / "secrets" / "telegram.token", tg.token.encode())
        assert check(run(home), "DOC-CHAN-001").status == "pass"
        assert tg.calls_of("getMe")
        wrong = "999999:not-the-token-of-this-bot_zzzzzzzzzzzzz"
        write_private_file(home / "secrets" / "telegram.token", wrong.encode())
        report = run(home)
    [finding] = check(report, "DOC-CHAN-001").findings
    assert "rejected the token" in finding.message
    assert wrong not in report.model_dump_json() and "not-the-token" not in report.model_dump_json()


def test_discord_token_checked_with_users_me(home):
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(FakeDiscord().start(), loop).result(10)
    try:
        set_config(home, bot={"channels": {"discord": {"api_base": server.api_base}}})
        report = run(home, env={"DISCORD_BOT_TOKEN": BOT_TOKEN})
        assert check(report, "DOC-CHAN-001").status == "pass", check(report, "DOC-CHAN-001")
        report = run(home, env={"DISCORD_BOT_TOKEN": "wrong.discord.token"})
        [finding] = check(report, "DOC-CHAN-001").findings
        assert (
            finding.message.startswith("discord: the API rejected") and "wrong.discord" not in finding.message
        )
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def test_no_channel_tokens_skips(home):
    assert check(run(home), "DOC-CHAN-001").status == "skip"


class _Any(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_llm_credential_and_reachability(home):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Any)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        set_config(
            home,
            bot={
                "llm": {
                    "profiles": [
                        {
                            "name": "local",
                            "model": "openai-compatible/llama3",
                            "base_url": url,
                            "credential": "local",
                        }
                    ]
                }
            },
        )
        assert check(run(home, env={"LOCAL_API_KEY": "k-local"}), "DOC-LLM-001").status == "pass"
        [finding, no_model] = check(run(home, env={}), "DOC-LLM-001").findings
        # no credential at all is a console-only setup: slash commands work, so a warning, not a failure
        assert "LOCAL_API_KEY" in finding.message and no_model.severity == "warning"
        assert "slash commands" in no_model.message
    finally:
        server.shutdown()
    ids = {f.id for f in check(run(home, env={"LOCAL_API_KEY": "k-local"}), "DOC-LLM-001").findings}
    assert ids == {"DOC-LLM-002", "DOC-LLM-001"}  # server gone: unreachable, so nothing is usable


def test_cli_json_and_exit_code(home):
    dead_chain(home)
    app = typer.Typer()
    app.command()(doctor_cmd.doctor)
    result = CliRunner().invoke(app, ["--json", "--timeout", "1"], env={"OWLIA_HOME": str(home)})
    assert result.exit_code == 1
    report = Report.model_validate(json.loads(result.output))
    assert report.kind == "doctor" and not report.ok
    assert {c.id for c in report.checks} >= {"DOC-PY-001", "DOC-SIGNER-001", "DOC-CHAIN-001", "DOC-CHAN-001"}
    text = CliRunner().invoke(app, ["--timeout", "1"], env={"OWLIA_HOME": str(home)})
    assert "[FAIL] DOC-CHAIN-001" in text.output and "fix:" in text.output


def test_no_bridge_is_a_skip(home):
    url = f"http://127.0.0.1:{free_port()}"
    assert check(run(home, env={"OWLIA_BRIDGE_URL": url}), "DOC-BRIDGE-001").status == "skip"


@pytest.mark.chain
def test_a_running_bridge_without_a_companion_is_a_warning(make_stack, tmp_path):
    import subprocess
    import sys
    import time
    import urllib.request

    from signer.wire.protocol import Scope

    stack = make_stack().start()
    token_file = tmp_path / "bridge.token"
    write_private_file(token_file, stack.client_token("bridge", Scope.BRIDGE).encode())
    port = free_port()
    # the bridge's own sub-app (`owlia bridge serve` once it is registered in bot/cli/app.py)
    bridge = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from companion_bridge.cli import app; app()",
            "serve",
            "--port",
            str(port),
            "--token-file",
            str(token_file),
        ],
        env={**os.environ, "OWLIA_HOME": str(stack.home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert bridge.poll() is None, bridge.stderr.read()
            try:
                urllib.request.urlopen(f"{url}/v1/health", timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the bridge did not come up"
                time.sleep(0.1)
        [finding] = check(run(stack.home, env={"OWLIA_BRIDGE_URL": url}), "DOC-BRIDGE-001").findings
        assert finding.severity == "warning" and "no companion is connected" in finding.message
        assert finding.hint.startswith("owlia companion pair")
    finally:
        bridge.terminate()
        bridge.wait(timeout=15)


versions = st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))


@settings(max_examples=300, deadline=None)
@given(low=versions, high=versions, have=versions)
def test_version_ranges_like_pyproject_are_enforced(low, high, have):
    from bot.ops.doctor import _satisfies, _split_requirement

    dotted = [".".join(map(str, v)) for v in (low, high, have)]
    name, spec, extra = _split_requirement(f"pkg-x[a,b] <{dotted[1]}, >={dotted[0]} ; extra == 'bot'")
    assert (name, extra) == ("pkg-x", "bot")
    assert _satisfies(dotted[2], spec) == (low <= have < high)


# -- DOC-COMPOSE-001 ------------------------------------------------------------------------------


def test_compose_version_floor_rejects_debians_compose_v1_and_accepts_v2():
    from bot.ops.doctor import compose_version_finding

    assert compose_version_finding("2.40.3\n") is None and compose_version_finding("v2.24.0") is None
    for old in ("1.29.2", "2.23.9", "v2.3.3"):
        finding = compose_version_finding(old)
        assert (
            finding is not None
            and finding.severity.value == "critical"
            and "docker-compose-plugin" in finding.hint
        )
    missing = compose_version_finding(None)
    assert missing is not None and "Compose v2" in missing.message and "1.29" in missing.hint
    assert compose_version_finding("garbage").severity.value == "warning"


@given(st.tuples(st.integers(0, 9), st.integers(0, 60), st.integers(0, 30)), st.booleans())
@settings(max_examples=200, deadline=None)
def test_compose_version_floor_is_exactly_the_minimum(version, prefixed):
    from bot.ops.compose import MIN_COMPOSE_VERSION
    from bot.ops.doctor import compose_version_finding

    text = ("v" if prefixed else "") + ".".join(map(str, version))
    assert (compose_version_finding(text) is None) == (version >= MIN_COMPOSE_VERSION)
