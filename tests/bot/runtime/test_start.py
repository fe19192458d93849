"""`owlia start` as a real process: configured channels run, a channel without a token is skipped
with a warning (never a crash), a DM is answered, and SIGTERM stops everything cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import yaml

from bot.workspace import create_workspace
from tests.bot.agent.conftest import FAKE_KEYS, Reply, default_bot_section, llm  # noqa: F401 - fixture
from tests.fakes.discord_server import BOT_TOKEN, FakeDiscord

OWNER = 42
ROOT = Path(__file__).resolve().parents[3]


def test_owlia_start_serves_discord_skips_telegram_and_stops_on_sigterm(tmp_path, llm) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    create_workspace(home / "workspace")
    llm.enqueue(Reply(text=["Hello from ", "owlia start."]))

    async def go() -> tuple[int, str]:
        server = await FakeDiscord().start()
        config = {
            "chains": [{"id": 31337, "name": "anvil", "rpc_url": "http://127.0.0.1:9", "dev": True}],
            "bot": default_bot_section(
                llm,
                gateway={"port": 0},
                channels={
                    "discord": {
                        "api_base": server.api_base,
                        "gateway_url": server.gateway_url,
                        "allow_from": [str(OWNER)],
                    }
                },
            ),
        }
        (home / "config.yaml").write_text(yaml.safe_dump(config))
        env = {**os.environ, "DISCORD_BOT_TOKEN": BOT_TOKEN, "ANTHROPIC_API_KEY": FAKE_KEYS["anthropic"]}
        env.pop("TELEGRAM_BOT_TOKEN", None)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "--home",
            str(home),
            "start",
            cwd=ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            await server.wait_identified(timeout=60)
            await server.dm(OWNER, "hello")
            dm = server.dm_channel(OWNER)
            await server.wait_for(
                lambda: [m for m in server.sent_to(dm) if m.content == "Hello from owlia start."], timeout=60
            )
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await server.stop()
        assert proc.stderr is not None
        return code, (await proc.stderr.read()).decode()

    code, stderr = asyncio.run(asyncio.wait_for(go(), 150))
    assert code == 0, stderr
    assert "running with discord" in stderr
    assert "telegram skipped: no token: set TELEGRAM_BOT_TOKEN" in stderr
    assert BOT_TOKEN not in stderr and FAKE_KEYS["anthropic"] not in stderr
