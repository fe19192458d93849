"""`owlia mcp`: declare, review, approve and remove MCP servers.

`add` only records how to start or reach a server; nothing runs and nothing is offered to the agent.
`approve` starts the server (stdio servers in the sandbox), lists its tools and shows each one on
the approval screen `owlia skill install` uses (`bot.cli.screen`): the fixed-form facts on the row
(the name, the level you give it), then everything the server wrote (description, input schema)
under a `|` gutter, collapsed, escaped and wrapped narrower than the terminal, never cut (paged on
a terminal). A tool whose text is too long to read whole, or holds a character that does not show,
cannot be approved (`store.unshowable`). You give each tool a level: `write` (a confirmation per
call) unless you say `read` or `sign`, or `skip` to leave it out. What you saw is what is pinned (a
hash of name, description and schema) and what the model reads. `test` re-lists and compares.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from bot.cli.decisions import record_decision
from bot.cli.screen import ask, author_rows, authors_part, plain_rows, screen_width, show
from bot.cli.switches import Kind, add_switches
from policies.kernel import safejson
from policies.kernel.cli import fail, home_of, print_json
from policies.kernel.text import visible

app = typer.Typer(
    help="Manage MCP servers (third-party tools, run in the skills sandbox).", no_args_is_help=True
)
LEVELS = ("read", "write", "sign", "skip")
WHERE = "the server's tool list"


def _store(ctx: typer.Context):
    from bot.mcp_servers.store import McpStore  # lazy: 92 ms, 18708 KiB

    return McpStore(home_of(ctx))


def _guard(action):
    from pydantic import ValidationError  # lazy: 95 ms, 18880 KiB (2 imports)

    from bot.mcp_servers.store import McpError

    try:
        return action()
    except McpError as exc:
        fail(visible(str(exc)))
    except ValidationError as exc:
        fail(
            visible(
                "; ".join(f"{'.'.join(map(str, e['loc'])) or 'server'}: {e['msg']}" for e in exc.errors()[:5])
            )
        )


def _settings(ctx: typer.Context):
    from bot.config import McpSettings, load_bot_config  # lazy: 82 ms, 11188 KiB (2 imports)
    from signer.wire.settings import ConfigError

    try:
        return load_bot_config(home_of(ctx)).bot.mcp
    except (ConfigError, OSError):
        return McpSettings()


def list_live(ctx: typer.Context, entry: Any, *, everything: bool = False) -> Any:
    """Start the server the way the bot does (sandbox, limits) and list its tools; with `everything`,
    (tools, resources, prompts)."""
    from bot.mcp_servers.connection import McpCallError, McpConnection  # lazy: 786 ms, 66700 KiB (4 imports)
    from bot.mcp_servers.sandbox import McpSandbox
    from bot.observability.audit import BotAudit, skills_audit_path
    from skills_runtime.sandbox import SandboxUnavailable

    settings = _settings(ctx)
    if entry.decl.transport != "stdio" and entry.decl.url not in settings.allowed_urls:
        fail(f"{entry.decl.url} is not in bot.mcp.allowed_urls; add it to config.yaml first")
    from bot.mcp_servers.binds import protected_paths  # lazy: 115 ms, 20036 KiB

    audit = BotAudit(skills_audit_path(home_of(ctx)))
    sandbox = McpSandbox(settings, protected_paths(home_of(ctx)))

    async def go() -> Any:
        from bot.net.ssrf import FetchPolicy  # lazy: 8 ms, 1484 KiB

        conn = McpConnection(
            entry.decl, settings, audit, sandbox=sandbox, fetch_policy=FetchPolicy(), home=home_of(ctx)
        )
        try:
            await conn.start()
            if not everything:
                return conn.tools
            return (
                conn.tools,
                await conn.list_resources(settings.call_timeout),
                await conn.list_prompts(settings.call_timeout),
            )
        except McpCallError as exc:
            tail = conn.stderr_tail.strip()[-600:]
            raise McpCallError(
                f"{exc}" + (f"; its stderr ended with: {' '.join(tail.split())}" if tail else "")
            ) from None
        finally:
            await conn.close()
            sandbox.remove()

    try:
        import asyncio  # lazy: 17 ms, 6852 KiB; `owlia mcp list` and the rest need no event loop

        return asyncio.run(go())
    except (McpCallError, SandboxUnavailable, OSError) as exc:
        fail(visible(f"{entry.decl.name} could not be started: {exc}"))


def describe_tool(server: str, tool: Any, level: str | None, width: int) -> list[str]:
    """One tool on the approval screen: fixed-form row first, then the server's text under the gutter,
    whole. A tool that cannot be approved gets our row saying why, and none of its text (never pinned)."""
    from bot.mcp_servers.store import TOOL_NAME, schema_text, tool_name, unshowable  # lazy: 93 ms, 18892 KiB

    if TOOL_NAME.fullmatch(tool.name) is None:
        rows = plain_rows("tool with a name that cannot be offered (never used):", width, "  ")
        return rows + author_rows(f"name: {tool.name}", "    ", width, limit=120, where=WHERE)
    why = unshowable(tool.description, tool.input_schema)
    if why is not None:
        return plain_rows(
            f"tool {tool_name(server, tool.name)} cannot be approved (never used): {why}", width, "  "
        )
    rows = plain_rows(
        f"tool {tool_name(server, tool.name)}" + (f" [{level}]" if level else "") + ":", width, "  "
    )
    rows += author_rows(tool.description or "(no description)", "    ", width)
    rows += author_rows(f"input schema: {schema_text(tool.input_schema)}", "    ", width)
    return rows


def describe_server(entry: Any, width: int, settings: Any = None) -> list[str]:
    decl = entry.decl
    rows = plain_rows(f"MCP server {decl.name} ({decl.transport})", width)
    if decl.transport == "stdio":
        rows += plain_rows(
            "runs in the sandbox: no keys, no files but: "
            + (", ".join(decl.binds) or "none")
            + " (read-only)",
            width,
        )
        rows += plain_rows(
            "network: "
            + (
                ", ".join(decl.network) + " (ports 80/443, public addresses, through the bot's checked proxy)"
                if decl.network
                else "none"
            ),
            width,
        )
        if settings is not None:
            rows += plain_rows(
                f"memory: at most {settings.memory_ceiling_mb} MiB for the server and everything it "
                "starts, together (stopped above it)",
                width,
            )
        rows += author_rows("command: " + " ".join(decl.command), "  ", width)
    else:
        rows += author_rows(f"url: {decl.url}", "  ", width)
        if decl.headers:
            rows += plain_rows(
                "sends: " + ", ".join(f"{h} (value from secrets/{f})" for h, f in decl.headers.items()), width
            )
        if decl.oauth:
            rows += plain_rows("signs in with OAuth 2.1 (tokens in mcp/oauth/, 0600)", width)
    rows += plain_rows(
        "sampling: "
        + (
            "answered by your model with the server's own messages only (never the "
            "conversation), at most 4 a minute"
            if decl.sampling
            else "refused"
        )
        + "; elicitation and roots: refused",
        width,
    )
    return rows


@app.command("add")
def add(
    ctx: typer.Context,
    name: str,
    command: list[str] = typer.Argument(
        None, help="The stdio server's command (absolute path first), after --."
    ),
    url: str = typer.Option(None, help="A streamable-HTTP server's URL (must be in bot.mcp.allowed_urls)."),
    bind: list[str] = typer.Option([], help="A host path the server needs, bound read-only (repeat)."),
    network: list[str] = typer.Option([], help="A host (or *.domain) a stdio server may reach (repeat)."),
    env: list[str] = typer.Option([], help="KEY=VALUE for the server (never a secret; repeat)."),
    sampling: bool = typer.Option(
        False,
        help="Answer its sampling requests with the bot's model (only its "
        "own messages, never the conversation).",
    ),
    sse: bool = typer.Option(
        False, "--sse", help="The --url is a legacy HTTP+SSE endpoint (not streamable HTTP)."
    ),
    header_file: list[str] = typer.Option(
        [],
        "--header-file",
        help="HEADER=FILE: send HEADER with the value in "
        "<home>/secrets/FILE (0600), e.g. Authorization=github.token (repeat).",
    ),
    oauth: bool = typer.Option(False, "--oauth", help="Sign in with OAuth 2.1 (`owlia mcp login NAME`)."),
) -> None:
    """Declare a server. Nothing runs and nothing is offered until `owlia mcp approve NAME`."""
    from bot.mcp_servers.store import ServerDecl  # lazy: 92 ms, 18836 KiB

    pairs = dict(item.split("=", 1) for item in env if "=" in item)
    if len(pairs) != len(env):
        fail("--env takes KEY=VALUE")
    headers = dict(item.split("=", 1) for item in header_file if "=" in item)
    if len(headers) != len(header_file):
        fail("--header-file takes HEADER=FILE, the FILE being in the OwliaBot home's secrets/ folder")
    if sse and not url:
        fail("--sse describes a --url; a stdio server has none")
    if command and command[0].startswith(
        "/"
    ):  # the sandbox binds host paths: one missing here is missing there
        exe = Path(command[0])
        if not (exe.is_file() and os.access(exe, os.X_OK)):
            fail(
                f"{exe} is not an executable file on this machine: give the server's absolute path "
                "(`command -v NAME` prints it), after --"
            )
    decl = _guard(
        lambda: ServerDecl(
            name=name,
            transport=("sse" if sse else "http") if url else "stdio",
            command=tuple(command or ()),
            url=url,
            binds=tuple(bind),
            env=pairs,
            network=tuple(network),
            sampling=sampling,
            headers=headers,
            oauth=oauth,
        )
    )
    from bot.mcp_servers.binds import check_binds, protected_paths  # lazy: 122 ms, 20176 KiB

    _guard(lambda: check_binds(name, decl.binds, protected_paths(home_of(ctx))))
    _guard(lambda: _store(ctx).add(decl))
    record_decision(ctx, "mcp.added", server=name, decl=decl.model_dump(mode="json"))
    then = f"sign in with `owlia mcp login {name}`, then " if oauth else ""
    typer.echo(f"added {name} (disabled); {then}review and approve its tools with `owlia mcp approve {name}`")


@app.command("list")
def list_servers(ctx: typer.Context) -> None:
    """Servers, whether they are enabled, and the levels their approved tools have."""
    rows = [
        {
            "name": n,
            "transport": e.decl.transport,
            "enabled": e.enabled,
            "tools": {t: p.level for t, p in sorted(e.tools.items())},
            "resources": len(e.resources),
            "prompts": sorted(e.prompts),
        }
        for n, e in sorted(_guard(_store(ctx).read).items())
    ]
    print_json(rows)


@app.command("info")
def info(ctx: typer.Context, name: str) -> None:
    """The declaration and the approved tools, as pinned (the server is not started)."""
    entry = _guard(lambda: _store(ctx).entry(name))
    width = screen_width()
    rows = describe_server(entry, width)
    for pinned in entry.tools.values():
        rows += describe_tool(name, pinned, pinned.level, width)
    for resource in entry.resources.values():
        rows += describe_resource(resource, width)
    for kept in entry.prompts.values():
        rows += describe_prompt(kept, width)
    rows.append(f"enabled: {entry.enabled}")
    show("\n".join(rows))


def _levels(items: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in items:
        tool, _, level = item.partition("=")
        if level not in LEVELS:
            fail(f"--level takes TOOL=read|write|sign|skip, not {item!r}")
        found[tool] = level
    return found


def describe_resource(item: Any, width: int) -> list[str]:
    """One resource: our row (it is read-only), then the server's texts under the gutter, whole."""
    from bot.mcp_servers.store import resource_unshowable  # lazy: 103 ms, 18780 KiB

    why = resource_unshowable(item)
    if why is not None:
        return plain_rows(f"a resource that cannot be approved (never read): {why}", width, "  ")
    rows = plain_rows("resource (read only):", width, "  ")
    for label, text in (
        ("uri", item.uri),
        ("name", item.name),
        ("title", item.title),
        ("description", item.description),
        ("type", item.mime_type),
    ):
        if text:
            rows += author_rows(f"{label}: {text}", "    ", width)
    return rows


def describe_prompt(item: Any, width: int) -> list[str]:
    """One prompt: our row (for you to use, never run by the model), then the server's texts, whole."""
    from bot.mcp_servers.store import prompt_unshowable  # lazy: 96 ms, 18932 KiB

    why = prompt_unshowable(item)
    if why is not None:
        return plain_rows(f"a prompt that cannot be approved (never used): {why}", width, "  ")
    rows = plain_rows("prompt (for you, with `owlia mcp prompt`; never run by the model):", width, "  ")
    rows += author_rows(f"name: {item.name}", "    ", width)
    for label, text in (("title", item.title), ("description", item.description)):
        if text:
            rows += author_rows(f"{label}: {text}", "    ", width)
    for arg, text, required in item.arguments:
        rows += author_rows(
            f"argument {arg} ({'required' if required else 'optional'}): {text}", "    ", width
        )
    return rows


def _choose(kind: str, count: int, flag: bool | None, yes: bool) -> bool:
    """Whether the shown resources or prompts are approved: the flag, else asked (no unless yes)."""
    if count == 0:
        return False
    if flag is not None:
        return flag
    if yes:
        return False  # default deny: --yes alone approves no resource and no prompt
    return typer.confirm(f"  approve these {count} {kind}?", default=False)


@app.command("approve")
def approve(
    ctx: typer.Context,
    name: str,
    level: list[str] = typer.Option([], help="TOOL=read|write|sign|skip (repeat); others are asked."),
    others: str = typer.Option(
        None, help="Level for every tool --level does not name (read/write/sign/skip)."
    ),
    resources: bool = typer.Option(
        None, "--resources/--no-resources", help="Let the model read the resources shown (read level)."
    ),
    prompts: bool = typer.Option(
        None, "--prompts/--no-prompts", help="Keep the prompts shown, for you to use with `owlia mcp prompt`."
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help="Do not ask: tools without --level get `write`; resources and prompts only with their flag.",
    ),
) -> None:
    """Start the server, show every tool (and resource and prompt), give each a level, and pin exactly
    what was shown."""
    from bot.mcp_servers.store import (  # lazy: 100 ms, 18808 KiB
        TOOL_NAME,
        PinnedTool,
        pin_prompt,
        pin_resource,
        prompt_unshowable,
        resource_unshowable,
        tool_hash,
        unshowable,
    )

    store = _store(ctx)
    entry = _guard(lambda: store.entry(name))
    live, live_resources, live_prompts = list_live(ctx, entry, everything=True)
    given = _levels(level)
    unknown = sorted(set(given) - {t.name for t in live})
    if unknown:
        fail(f"the server has no tool named {', '.join(unknown)}")
    for tool in live:
        why = unshowable(tool.description, tool.input_schema)
        if why is not None and given.get(tool.name, "skip") != "skip":
            fail(visible(f"{tool.name} cannot be approved: {why}"))
    width = screen_width()
    screen = describe_server(entry, width, _settings(ctx)) + authors_part("the server", width)
    for tool in live:  # the whole screen first, paged on a terminal; then one question per tool
        old = entry.tools.get(tool.name)
        if old is not None:
            same = old.hash == tool_hash(tool.name, tool.description, tool.input_schema)
            screen += plain_rows(
                f"(tool {tool.name}: {'unchanged' if same else 'CHANGED'} since approval)", width, "  "
            )
        screen += describe_tool(name, tool, None, width)
    for resource in live_resources:
        screen += describe_resource(resource, width)
    for prompt in live_prompts:
        screen += describe_prompt(prompt, width)
    show("\n".join(screen))
    pins: dict[str, PinnedTool] = {}
    for tool in live:
        if (
            TOOL_NAME.fullmatch(tool.name) is None
            or unshowable(tool.description, tool.input_schema) is not None
        ):
            continue
        old = entry.tools.get(tool.name)
        choice = given.get(tool.name, others)
        if choice is None:
            choice = (
                "write"
                if yes
                else typer.prompt(
                    f"  level for {tool.name} (read/write/sign/skip)", default=old.level if old else "write"
                )
            )
        if choice not in LEVELS:
            fail(f"{choice!r} is not one of {', '.join(LEVELS)}")
        if choice != "skip":
            pins[tool.name] = PinnedTool(
                name=tool.name,
                level=choice,
                hash=tool_hash(tool.name, tool.description, tool.input_schema),
                description=tool.description,
                input_schema=tool.input_schema,
            )
    readable = [r for r in live_resources if resource_unshowable(r) is None]
    usable = [p for p in live_prompts if prompt_unshowable(p) is None]
    resource_pins = (
        {r.uri: pin_resource(r) for r in readable}
        if _choose("resources", len(readable), resources, yes)
        else {}
    )
    prompt_pins = (
        {p.name: pin_prompt(p) for p in usable} if _choose("prompts", len(usable), prompts, yes) else {}
    )
    if not (pins or resource_pins or prompt_pins):
        fail("nothing approved; nothing changed")
    parts = [f"{t}={p.level}" for t, p in pins.items()]
    parts += [f"{len(resource_pins)} resources (read)"] if resource_pins else []
    parts += [f"{len(prompt_pins)} prompts (for you)"] if prompt_pins else []
    summary = ", ".join(parts)
    ask(f"Approve {summary}?", yes=yes, refusal="not approved")
    _guard(lambda: store.approve(name, pins, resource_pins, prompt_pins))
    record_decision(
        ctx,
        "mcp.approved",
        server=name,
        tools={t: {"level": p.level, "hash": p.hash} for t, p in pins.items()},
        resources={u: p.hash for u, p in resource_pins.items()},
        prompts={n: p.hash for n, p in prompt_pins.items()},
    )
    typer.echo(f"approved {name}: {summary}")


@app.command("test")
def test(ctx: typer.Context, name: str) -> None:
    """Start the server and compare its tools with the pins (exit 3 if any changed)."""
    from bot.mcp_servers.store import prompt_hash, resource_hash, tool_hash  # lazy: 98 ms, 18844 KiB

    entry = _guard(lambda: _store(ctx).entry(name))
    tools, resources, prompts = list_live(ctx, entry, everything=True)
    live = {t.name: t for t in tools}
    report = {}
    for tool, pin in sorted(entry.tools.items()):
        now = live.get(tool)
        report[tool] = (
            "missing"
            if now is None
            else "ok"
            if tool_hash(now.name, now.description, now.input_schema) == pin.hash
            else "CHANGED"
        )
    live_resources = {
        r.uri: resource_hash(r.uri, r.name, r.title, r.description, r.mime_type) for r in resources
    }
    live_prompts = {p.name: prompt_hash(p.name, p.title, p.description, p.arguments) for p in prompts}
    found = {
        "resources": {
            u: (
                "missing" if u not in live_resources else "ok" if live_resources[u] == pin.hash else "CHANGED"
            )
            for u, pin in sorted(entry.resources.items())
        },
        "prompts": {
            n: ("missing" if n not in live_prompts else "ok" if live_prompts[n] == pin.hash else "CHANGED")
            for n, pin in sorted(entry.prompts.items())
        },
    }
    print_json(
        {
            "server": name,
            "started": True,
            "tools": report,
            **found,
            "not_approved": sorted(set(live) - set(entry.tools)),
        }
    )
    if any(v != "ok" for v in [*report.values(), *found["resources"].values(), *found["prompts"].values()]):
        raise typer.Exit(3)


def _forget_tokens(ctx: typer.Context, name: str) -> None:
    """A removed server's OAuth tokens go with it."""
    from bot.mcp_servers.oauth import logout  # lazy: 607 ms, 52828 KiB

    logout(home_of(ctx), name)


add_switches(
    app,
    Kind(noun="MCP server", record="mcp", field="server", store=_store, guard=_guard, forget=_forget_tokens),
)


def _call_arguments(text: str) -> dict[str, Any]:
    try:
        value = safejson.loads(text)
    except Exception:  # noqa: BLE001 - any parser failure is the same mistake for the user
        fail('--args must be a JSON object, such as \'{"timezone": "UTC"}\'')
    if not isinstance(value, dict):
        fail('--args must be a JSON object (in braces), such as \'{"timezone": "UTC"}\'')
    return value


def _callable(ctx: typer.Context, name: str, tool: str) -> Any:
    """The approved tool as the bot would offer it, or a worded refusal: what `call` may run."""
    entry = _guard(lambda: _store(ctx).entry(name))
    pinned = entry.tools.get(tool)
    if pinned is None:
        fail(
            visible(
                f"{tool} of {name} is not approved, so neither the bot nor this command runs it; review it "
                f"with `owlia mcp approve {name}`"
            )
        )
    if pinned.level == "sign":
        fail(
            visible(
                f"{tool} of {name} is a sign-level tool: what it returns goes to the signer as a transaction, "
                "which only the bot may ask for, in a private chat with you. `owlia mcp call` never signs; "
                "ask the bot, or give the tool the read or write level with `owlia mcp approve`"
            )
        )
    if not entry.enabled:
        fail(f"{name} is disabled; `owlia mcp enable {name}` first")
    return entry


@app.command("call")
def call(
    ctx: typer.Context,
    name: str,
    tool: str,
    args: str = typer.Option("{}", "--args", help="The tool's arguments, a JSON object."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before a write-level tool runs."),
) -> None:
    """Run one approved tool as the bot would: the same sandbox, limits, pins and level (a sign-level
    tool is refused; a write-level one asks first)."""
    from bot.config import load_bot_config  # lazy: 197 ms, 24208 KiB (6 imports)
    from bot.mcp_servers.store import tool_name
    from bot.mcp_servers.tools import McpTools
    from bot.tools.base import ContextKind, ToolContext, ToolFailure
    from bot.tools.services import Services
    from signer.wire.settings import ConfigError

    arguments = _call_arguments(args)
    _callable(ctx, name, tool)
    home = home_of(ctx)
    try:
        config = load_bot_config(home)
    except ConfigError as exc:
        fail(visible(str(exc)))
    if not config.bot.mcp.enabled:
        fail("MCP servers are turned off in config.yaml (bot.mcp.enabled: false), so the bot runs none")
    policy = None
    if config.bot.web.enabled:  # the same narrowed web policy the bot gives a server with hosts
        from bot.net.ssrf import FetchPolicy  # lazy: 8 ms, 1484 KiB

        web = config.bot.web
        policy = FetchPolicy(
            allow_domains=web.allow_domains,
            deny_domains=web.deny_domains,
            allow_private=web.allow_private,
            allowed_ports=web.allowed_ports,
            max_bytes=web.max_bytes,
            timeout=web.timeout,
        )
    source = McpTools.load(home, config.bot.mcp, policy, signer=config.signer)
    wanted = tool_name(name, tool)
    found = next((t for t in source.tools() if t.name == wanted), None)
    if found is None:
        why = next((p for p in source.problems if p.startswith(f"{name}:")), "the bot does not offer it")
        fail(visible(f"{tool} of {name} is not offered to the bot: {why}"))
    from pydantic import ValidationError  # lazy: 17 ms, 4352 KiB

    try:
        checked = found.args.model_validate(arguments)
    except ValidationError as exc:  # worded by the pinned schema's check (McpArgs)
        problems = exc.errors()
        fail(
            visible(
                f"the arguments do not fit {tool}: " + (problems[0]["msg"] if problems else str(exc))[:400]
            )
        )
    if found.confirmation is not None:  # write level: the bot asks you per call, so does this command
        ask(visible(found.confirmation(checked)) + "?", yes=yes, refusal="not run")
    services = Services(
        workspace=config.workspace(home), default_chain_id=config.default_chain.id, state_dir=home / "state"
    )
    context = ToolContext(
        "cli", "cli", "owner", ContextKind.DM, services, run_id="mcp-call", call_id="mcp-call"
    )

    async def go() -> Any:
        try:
            return await found.handler(context, checked)
        finally:
            await source.close()

    import asyncio  # lazy: 18 ms, 6864 KiB

    try:
        output = asyncio.run(go())
    except ToolFailure as exc:
        fail(visible(str(exc)))
    show(output.content)
    if output.is_error:
        raise typer.Exit(1)


@app.command("prompt")
def prompt(
    ctx: typer.Context,
    name: str,
    prompt_name: str = typer.Argument(..., metavar="PROMPT"),
    args: str = typer.Option("{}", "--args", help="The prompt's arguments, a JSON object of strings."),
) -> None:
    """Print an approved prompt of a server, filled in, for you to read and use. The model never runs a
    prompt on its own: prompts are yours, like a template you pick."""
    from bot.mcp_servers.binds import protected_paths  # lazy: 744 ms, 66864 KiB (6 imports)
    from bot.mcp_servers.connection import McpCallError, McpConnection
    from bot.mcp_servers.sandbox import McpSandbox
    from bot.mcp_servers.store import prompt_hash
    from bot.observability.audit import BotAudit, skills_audit_path
    from skills_runtime.sandbox import SandboxUnavailable

    arguments = _call_arguments(args)
    if not all(isinstance(v, str) for v in arguments.values()):
        fail('a prompt\'s arguments are strings: --args \'{"name": "text"}\'')
    entry = _guard(lambda: _store(ctx).entry(name))
    pinned = entry.prompts.get(prompt_name)
    if pinned is None:
        fail(
            visible(
                f"{prompt_name} is not an approved prompt of {name}; review its prompts with "
                f"`owlia mcp approve {name} --prompts`"
            )
        )
    if prompt_hash(pinned.name, pinned.title, pinned.description, pinned.arguments) != pinned.hash:
        fail(
            visible(f"the pin of {prompt_name} is not what was approved (the hash differs); approve it again")
        )
    missing = [a for a, _, required in pinned.arguments if required and a not in arguments]
    unknown = sorted(set(arguments) - {a for a, _, _ in pinned.arguments})
    if missing or unknown:
        fail(
            visible(
                f"{prompt_name} needs the arguments "
                + ", ".join(a for a, _, _ in pinned.arguments)
                + (f"; missing: {', '.join(missing)}" if missing else "")
                + (f"; it takes no {', '.join(unknown)}" if unknown else "")
            )
        )
    settings = _settings(ctx)
    if entry.decl.transport != "stdio" and entry.decl.url not in settings.allowed_urls:
        fail(f"{entry.decl.url} is not in bot.mcp.allowed_urls; add it to config.yaml first")
    home = home_of(ctx)
    audit = BotAudit(skills_audit_path(home))
    sandbox = McpSandbox(settings, protected_paths(home))

    async def go() -> Any:
        from bot.net.ssrf import FetchPolicy  # lazy: 9 ms, 1484 KiB

        conn = McpConnection(
            entry.decl, settings, audit, sandbox=sandbox, fetch_policy=FetchPolicy(), home=home_of(ctx)
        )
        try:
            await conn.start()
            live = {p.name: p for p in await conn.list_prompts(settings.call_timeout)}
            now = live.get(prompt_name)
            if now is None or prompt_hash(now.name, now.title, now.description, now.arguments) != pinned.hash:
                audit.record("mcp.prompt_changed", server=name, prompt=prompt_name)
                raise McpCallError(
                    f"{name} changed its prompt {prompt_name} since you approved it (or it is gone); "
                    f"review it with `owlia mcp approve {name} --prompts`. Nothing was asked"
                )
            return await conn.request(
                "prompts/get",
                settings.call_timeout,
                lambda session: session.get_prompt(prompt_name, arguments),
            )
        finally:
            await conn.close()
            sandbox.remove()

    import asyncio  # lazy: 19 ms, 6864 KiB

    try:
        result = asyncio.run(go())
    except (McpCallError, SandboxUnavailable, OSError) as exc:
        fail(visible(str(exc)))
    audit.record("mcp.prompt", server=name, prompt=prompt_name, messages=len(result.messages))
    rows = [
        f"[prompt {prompt_name} of MCP server {name}; its text is the server's: read it before you use it]"
    ]
    for message in result.messages:
        text = getattr(message.content, "text", None)
        rows.append(
            f"{message.role}: "
            + (
                text
                if isinstance(text, str)
                else f"[{getattr(message.content, 'type', '?')} content omitted]"
            )
        )
    show("\n".join(rows))


@app.command("login")
def login(ctx: typer.Context, name: str) -> None:
    """Sign in to a remote server that uses OAuth 2.1: open the address shown, approve, and the tokens
    are kept in <home>/mcp/oauth/NAME.json (0600). The bot refreshes them; it never signs in itself."""
    from bot.mcp_servers.connection import McpCallError, McpConnection  # lazy: 864 ms, 66720 KiB (4 imports)
    from bot.mcp_servers.oauth import LOGIN_TIMEOUT, login_auth
    from bot.mcp_servers.store import McpError
    from bot.observability.audit import BotAudit, skills_audit_path

    entry = _guard(lambda: _store(ctx).entry(name))
    if not entry.decl.oauth:
        fail(f"{name} was not added with --oauth; it has nothing to sign in to")
    settings = _settings(ctx)
    if entry.decl.url not in settings.allowed_urls:
        fail(f"{entry.decl.url} is not in bot.mcp.allowed_urls; add it to config.yaml first")
    home = home_of(ctx)
    audit = BotAudit(skills_audit_path(home))

    def show_url(url: str) -> None:
        typer.echo(
            f"Open this address in your browser to sign in to {name} (waiting up to "
            f"{LOGIN_TIMEOUT:g}s):\n{visible(url)}"
        )

    async def go() -> list[Any]:
        auth, callback = await login_auth(entry.decl, home, show_url)
        conn = McpConnection(
            entry.decl, settings, audit, home=home, auth=auth, start_timeout=LOGIN_TIMEOUT + 30
        )
        try:
            await conn.start()
            return conn.tools
        finally:
            await conn.close()
            callback.close()

    import asyncio  # lazy: 20 ms, 6864 KiB

    try:
        tools = asyncio.run(go())
    except (McpCallError, McpError, OSError) as exc:
        fail(visible(f"{name}: signing in failed: {exc}"))
    record_decision(ctx, "mcp.login", server=name)
    typer.echo(f"signed in to {name} ({len(tools)} tools); review them with `owlia mcp approve {name}`")


@app.command("logout")
def logout(ctx: typer.Context, name: str) -> None:
    """Forget a remote server's OAuth tokens and client registration (sign in again with `login`)."""
    from bot.mcp_servers.oauth import logout as forget  # lazy: 694 ms, 52812 KiB

    _guard(lambda: _store(ctx).entry(name))
    if forget(home_of(ctx), name):
        record_decision(ctx, "mcp.logout", server=name)
        typer.echo(f"signed out of {name}: its tokens are removed")
    else:
        typer.echo(f"{name} had no stored sign-in")
