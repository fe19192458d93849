"""`owlia chat`: talk to the bot on this terminal (the console channel)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from bot.cli.config_file import load_or_fail
from policies.kernel.cli import home_of, run

if TYPE_CHECKING:
    import asyncio


def chat(
    ctx: typer.Context,
    message: Optional[str] = typer.Option(
        None, "--message", "-m", help="Send one message, print the reply, exit."
    ),
) -> None:
    """Chat with OwliaBot here; slash commands (/help /balance /send ...) work even without a model."""
    home = home_of(ctx)
    run(_chat(home, load_or_fail(home), message))


async def _chat(home, config, message: str | None) -> None:
    import asyncio  # lazy: 170 ms, 23280 KiB (3 imports)

    from bot.channels.console import ConsoleChannel
    from bot.runtime.assemble import build_runtime

    runtime = build_runtime(home, config)
    try:
        assert runtime.core is not None
        channel = ConsoleChannel(runtime.core)
        if message is not None:
            await channel.one(message)
            return
        stop = asyncio.Event()
        control = asyncio.create_task(
            _control_plane(runtime, stop)
        )  # after the prompt: FastAPI is slow to import
        try:
            await channel.run(await banner(runtime))
        finally:
            stop.set()
            await control
    finally:
        await runtime.close()


async def _control_plane(runtime, stop: asyncio.Event) -> None:
    import asyncio  # lazy: 17 ms, 6876 KiB

    await asyncio.sleep(0.05)
    from bot.runtime.control import gateway  # lazy: 164 ms, 22480 KiB

    async with gateway(runtime):
        await stop.wait()


async def banner(runtime) -> str:
    from bot.channels.core import NO_LLM_HINT  # lazy: 143 ms, 21084 KiB

    lines = ["OwliaBot console. /help for commands, /quit to leave."]
    if not await runtime.llm.configured():  # checks credentials without importing the provider adapters
        lines.append(NO_LLM_HINT)
    from bot.workspace import context_file_problems  # lazy: 3 ms, 1292 KiB

    lines.extend(f"warning: {problem}" for problem in context_file_problems(runtime.services.workspace))
    if runtime.skills is not None:  # e.g. an unreadable registry.json: no skill runs, and the user hears why
        lines.extend(f"warning: {problem}" for problem in runtime.skills.problems)
    if runtime.mcp is not None:
        runtime.mcp.tools()  # reads servers.json (no server starts) and notes what keeps servers out
        lines.extend(f"warning: {problem}" for problem in runtime.mcp.problems)
    if runtime.services.signer is None:
        lines.append(f"No signer: {runtime.services.signer_problem} (or run `owlia up` for a dev stack).")
    gateway = runtime.config.bot.gateway
    if gateway.enabled:
        lines.append(
            f"Control plane: http://{gateway.host}:{gateway.port} "
            f"(bearer token in {runtime.home / 'secrets' / 'gateway.token'})"
        )
    return "\n".join(lines)
