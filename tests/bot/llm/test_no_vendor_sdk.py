"""The bot speaks to LLM providers without a vendor SDK: none is needed, none is imported, and the
import contract that says so fails when someone adds one back."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.test_architecture import ROOT, _project_copy, _run, _tool

SDKS = ("anthropic", "openai")


def test_the_sdks_are_not_dependencies():
    text = (ROOT / "pyproject.toml").read_text()
    for sdk in SDKS:
        assert f'"{sdk}>' not in text and f'"{sdk}"' not in text.split("[tool.importlinter]")[0]


def test_the_sdks_are_not_installed_here_so_every_test_runs_without_them():
    """This environment proves nothing needs them (lock files regenerated without them)."""
    assert [sdk for sdk in SDKS if importlib.util.find_spec(sdk) is not None] == []


def test_a_streamed_answer_from_each_provider_imports_no_sdk_and_no_second_http_stack():
    script = textwrap.dedent("""
        import asyncio, sys
        from bot.llm.providers import make_profile
        from bot.llm.types import Message, Request
        from tests.fakes.llm_server import FakeLLMServer, Reply

        async def main(server):
            for model, url in (("sonnet", server.url), ("gpt", server.openai_url)):
                profile = make_profile("p", model, api_key="k", base_url=url)
                async for _ in profile.provider.stream(Request((Message.user("hi"),), model=profile.model)):
                    pass
                await profile.provider.aclose()

        with FakeLLMServer() as server:
            server.enqueue(Reply(text=["a"]), Reply(text=["b"]))
            asyncio.run(main(server))
        print(sorted(m for m in ("anthropic", "openai", "httpx2", "httpx") if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "['httpx']"


def test_importing_an_sdk_in_the_bot_breaks_the_contract(tmp_path: Path):
    copy = _project_copy(tmp_path)
    with (copy / "bot" / "llm" / "providers.py").open("a") as handle:
        handle.write("\n\ndef _probe():\n    import anthropic  # noqa: F401 - the probe\n")
    out = _run([_tool("lint-imports"), "--no-cache"], cwd=copy)
    assert out.returncode != 0 and "bot.llm.providers -> anthropic" in out.stdout
