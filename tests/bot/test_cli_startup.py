"""`owlia --help` stays fast: the command tree imports nothing heavy (every command imports its own
machinery when it runs). Checked by what gets imported, which is stable, not by wall time, which is not."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("asyncio", "anthropic", "openai", "aiogram", "discord", "fastapi", "uvicorn", "web3", "eth_account",
         "aiohttp", "pydantic", "yaml", "coincurve", "cryptography", "nacl", "apscheduler", "docker")


def test_the_command_tree_imports_nothing_heavy() -> None:
    code = ("import sys, json; import bot.cli.app; "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                           text=True).stdout))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_help_lists_every_command_group() -> None:
    out = subprocess.run([sys.executable, "-m", "bot.cli", "--help"], check=True, capture_output=True,
                         text=True).stdout
    for command in ("up", "start", "chat", "init", "doctor", "signer", "pair", "cron", "skill", "companion",
                    "bridge", "security", "service"):
        assert f" {command} " in out, command
