"""`owlia chat` as a real process, `owlia init`, and the control plane wired to a real runtime."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request

import pytest

from bot.gateway import create_app, start_in_background
from bot.runtime.control import runtime_health


def owlia(home, *args, input_text=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), *args],
        input=input_text,
        text=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", **(env or {})},
    )


def test_chat_without_credentials_says_so_and_still_answers_commands(tmp_path):
    home = tmp_path / "home"
    out = owlia(home, "chat", input_text="/help\nhello\n/status\n/quit\n")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.index("owlia auth setup") < text.index("you> ")  # the hint comes at start
    assert "/send ADDRESS AMOUNT" in text  # /help
    assert "I can only run commands" in text  # a plain message
    assert (
        "no credential (run `owlia auth setup`)" in text and "signer: not reachable (no signer token" in text
    )
    assert oct((home / "sessions").stat().st_mode & 0o777) == "0o700"


def test_init_writes_a_private_home_and_never_overwrites(tmp_path):
    home = tmp_path / "h"
    first = owlia(home, "init")
    assert first.returncode == 0 and "wrote" in first.stdout
    (home / "config.yaml").write_text("bot: {}\n")
    second = owlia(home, "init")
    assert "kept existing" in second.stdout and (home / "config.yaml").read_text() == "bot: {}\n"
    assert {p.name for p in (home / "workspace").iterdir()} >= {"AGENTS.md", "SOUL.md", "MEMORY.md"}
    for path in (home, home / "secrets", home / "workspace"):
        assert path.stat().st_mode & 0o077 == 0


def test_bad_bot_config_names_the_field(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text(
        "bot:\n  agent:\n    max_rounds: 0\n  llm:\n    profiles:\n"
        "      - {name: a, model: sonnet, colour: blue}\n"
    )
    out = owlia(home, "chat", "-m", "/help")
    assert out.returncode == 1
    assert "bot.agent.max_rounds" in out.stderr and "bot.llm.profiles[0].colour" in out.stderr


@pytest.mark.chain
def test_control_plane_reports_the_real_stack(bot):
    async def probe():
        runtime = bot.runtime()
        app = create_app(
            events=runtime.events, metrics=runtime.metrics, health=runtime_health(runtime), token="t" * 40
        )
        running = await start_in_background(app, "127.0.0.1", 0, token="t" * 40)
        try:

            def get(path, token=None):
                request = urllib.request.Request(running.url + path)
                if token:
                    request.add_header("Authorization", f"Bearer {token}")
                try:
                    with urllib.request.urlopen(request, timeout=10) as response:
                        return response.status, response.read().decode()
                except urllib.error.HTTPError as exc:
                    return exc.code, exc.read().decode()

            health = await asyncio.to_thread(get, "/health")
            runtime.events.emit("agent", "run.finished", {"stop": "end"})
            events = await asyncio.to_thread(get, "/events/poll?type=agent", "t" * 40)
            denied = await asyncio.to_thread(get, "/metrics")
            return health, events, denied
        finally:
            await running.stop()
            await runtime.close()

    (status, body), (estatus, ebody), (mstatus, _) = asyncio.run(probe())
    report = json.loads(body)
    assert report["components"]["signer"]["ok"] and report["components"]["chain"]["ok"]
    assert report["components"]["providers"]["ok"] and status == 200
    assert estatus == 200 and json.loads(ebody)["events"][0]["name"] == "run.finished"
    assert mstatus == 401


def test_a_token_file_readable_by_others_is_named_with_its_fix_not_called_missing(tmp_path):
    """The token loader's reason reaches the user: a token there with mode 644 was reported as
    "No signer client token found", which sends the user to make a second one."""
    home = tmp_path / "home"
    assert owlia(home, "init").returncode == 0
    token = home / "secrets" / "signer.token"
    token.write_text("owl_000000000000_" + "x" * 30)
    token.chmod(0o644)
    out = owlia(home, "chat", input_text="/status\n/quit\n")
    assert out.returncode == 0, out.stderr
    fix = f"run `chmod 600 {token}`"
    assert f"No signer: {token} is readable by others (mode 644); {fix}" in out.stdout  # the banner
    assert f"signer: not reachable ({token} is readable by others (mode 644); {fix})" in out.stdout  # /status
    assert "owl_000000000000" not in out.stdout + out.stderr
