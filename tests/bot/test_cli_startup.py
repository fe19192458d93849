"""`owlia --help` stays fast: the command tree imports nothing heavy (every command imports its own
machinery when it runs). Checked by what gets imported, which is stable, not by wall time, which is not."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("asyncio", "anthropic", "openai", "telegram", "discord", "fastapi", "uvicorn", "web3", "eth_account",
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


def test_sign_send_imports_only_the_client_not_the_daemon(tmp_path) -> None:
    """`owlia sign send` talks to a running signer: it needs the socket's path and the client, not the
    daemon's approvals, engine and policy loader (about 90 ms of imports per command)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    code = ("import sys, json\nfrom bot.cli.app import main\nsys.argv = ['owlia', '--home', sys.argv[1], 'sign', 'send',"
            " '--to', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', '--value', '1wei']\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
            "print(json.dumps([code, sorted(m for m in sys.modules if m.startswith(('signer.', 'policies.')))]))")
    proc = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True, timeout=60)
    code, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert code == 1 and "signer.token" in proc.stderr  # no client token here: it stops before any socket
    assert "signer.wire.settings" in loaded and "signer.wire.client" in loaded
    assert not {"signer.daemon", "signer.engine", "signer.approvals", "policies.loader"} & set(loaded), loaded
