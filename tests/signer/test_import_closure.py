"""The signer's import closure stays small: no LLM SDK, chat library or web framework."""

import json
import subprocess
import sys

FORBIDDEN = (
    "anthropic",
    "openai",
    "aiogram",
    "telegram",
    "discord",
    "fastapi",
    "starlette",
    "uvicorn",
    "aiohttp.web",
    "httpx",
    "telegram",
    "bot.agent",
    "bot.channels",
    "companion_bridge",
    "skills_runtime",
)


def test_signer_daemon_imports_nothing_it_should_not():
    code = (
        "import sys, json\n"
        "import signer.daemon, signer.server, signer.engine, signer.methods, signer.keystore\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []
    assert "signer.engine" in loaded and "policies.evaluate" in loaded  # the probe did import the signer
