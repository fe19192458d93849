"""`owlia skill`: install, review, enable and remove third-party skills.

Installing shows what the skill declares (tools and their tiers, network hosts, chain access,
resources, tree hash) and asks before anything is copied into place. A skill whose files or
permissions changed since then is refused by the bot until `owlia skill approve NAME`. Each
decision goes on record (bot.cli.decisions), as `owlia mcp`'s do.

The approval screen (what the skill may do, then what its author wrote under a `|` gutter) is
`bot.cli.screen`'s, shared with `owlia mcp`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from bot.cli.decisions import record_decision
from bot.cli.screen import DEFAULT_WIDTH, ask, author_rows, authors_part, plain_rows, screen_width, show
from bot.cli.switches import Kind, add_switches
from policies.kernel.cli import fail, home_of, print_json
from policies.kernel.text import visible

app = typer.Typer(help="Manage skills (third-party tools that run in a sandbox).", no_args_is_help=True)


def _store(ctx: typer.Context):
    from skills_runtime.store import SkillStore  # lazy: 102 ms, 19320 KiB

    return SkillStore(home_of(ctx))


def _value(value: Any) -> str:
    """An enum value or a default as JSON: a string quoted, so `"5"` and `5` differ on screen too."""
    return json.dumps(value, ensure_ascii=False)


def _argument_rows(name: str, prop: Any, required: bool, width: int) -> list[str]:
    """One argument: its fixed-form facts on the row, then its author-written parts under the gutter."""
    facts = [prop.type, "required" if required else "optional"]
    for label, number in (
        ("min", prop.minimum),
        ("max", prop.maximum),
        ("min length", prop.min_length),
        ("max length", prop.max_length),
    ):
        if number is not None:
            facts.append(f"{label} {number}")
    if prop.enum:
        facts.append(f"one of {len(prop.enum)} values")
    rows = plain_rows(f"argument {name}: {', '.join(facts)}", width, "    ")
    rows += author_rows(prop.description, "      ", width)
    if prop.enum:
        rows += author_rows("values: " + ", ".join(_value(v) for v in prop.enum), "      ", width, limit=None)
    if prop.default is not None:
        rows += author_rows(f"default: {_value(prop.default)}", "      ", width)
    if prop.pattern is not None:
        rows += author_rows(f"pattern: {prop.pattern}", "      ", width)
    return rows


def _permission_rows(manifest: Any, digest: str, width: int) -> list[str]:
    from skills_runtime.manifest import tool_name  # lazy: 79 ms, 11152 KiB

    rows = [*plain_rows(f"skill {manifest.name} v{manifest.version}", width), "tools:"]
    for decl in manifest.tools:
        rows += plain_rows(f"- {tool_name(manifest.name, decl.name)} [{decl.level}]", width, "  ")
    rows += plain_rows("network: " + (", ".join(manifest.network) if manifest.network else "none"), width)
    rows += plain_rows("chain reads: " + ("yes (read-only methods)" if manifest.chain_read else "no"), width)
    if any(t.level == "sign" for t in manifest.tools):
        rows += plain_rows(
            "signing: may ask the signer for transactions (your policy decides; escalated by default)", width
        )
    else:
        rows.append("signing: no")
    resources = manifest.resources.model_dump(exclude_none=True)
    rows += plain_rows(
        "resources: " + (", ".join(f"{k}={v}" for k, v in resources.items()) or "defaults"), width
    )
    rows += plain_rows(f"tree hash: {digest}", width)
    return rows


def describe(manifest: Any, digest: str, *, width: int = DEFAULT_WIDTH) -> str:
    """The text the user approves: everything the skill may do in plain words, then everything its
    author wrote (what the model will read), each row at most `width` columns."""
    from skills_runtime.manifest import tool_name  # lazy: 83 ms, 11196 KiB

    rows = _permission_rows(manifest, digest, width)
    rows += [
        *authors_part("the skill's author", width),
        f"  skill {manifest.name}:",
        *author_rows(manifest.description, "    ", width),
    ]
    for decl in manifest.tools:
        rows += plain_rows(f"tool {tool_name(manifest.name, decl.name)} [{decl.level}]:", width, "  ")
        rows += author_rows(decl.description, "    ", width)
        schema = decl.input_schema
        for name, prop in schema.properties.items():
            rows += _argument_rows(name, prop, name in schema.required, width)
    return visible("\n".join(rows), keep="\n")


def _guard(action):
    from skills_runtime.manifest import ManifestError  # lazy: 109 ms, 19272 KiB (3 imports)
    from skills_runtime.store import SkillError
    from skills_runtime.tree import TreeError

    try:
        return action()
    except (SkillError, ManifestError, TreeError) as exc:
        fail(visible(str(exc)))


@app.command("install")
def install(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A skill folder or a .zip/.tar.gz archive."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve the shown permissions without asking."),
    disabled: bool = typer.Option(False, help="Install without enabling."),
) -> None:
    """Copy a skill into ~/.owliabot/skills after you approve what it declares."""
    store = _store(ctx)
    prepared = _guard(lambda: store.prepare(path))
    try:
        show(describe(prepared.manifest, prepared.tree_hash, width=screen_width()))
        if prepared.previous is not None:
            show(
                f"replaces the installed v{prepared.previous['version']} "
                f"({prepared.previous['tree_hash'][:12]}...)"
            )
        ask("Install this skill with these permissions?", yes=yes, refusal="not installed")
    except BaseException:
        store.discard(prepared)
        raise
    skill = store.install(prepared, enabled=not disabled)
    previous = prepared.previous
    record_decision(
        ctx,
        "skill.installed",
        skill=skill.name,
        version=skill.manifest.version,
        tree_hash=skill.tree_hash,
        permissions=skill.manifest.permissions(),
        enabled=skill.enabled,
        replaced=None
        if previous is None
        else {"version": previous["version"], "tree_hash": previous["tree_hash"]},
    )
    typer.echo(f"installed {skill.name} ({'enabled' if skill.enabled else 'disabled'}); {RESTART}")


@app.command("list")
def list_skills(ctx: typer.Context) -> None:
    """Installed skills, whether they are enabled, and whether their files still match."""
    store = _store(ctx)
    rows = []
    for name, entry in sorted(_guard(store.entries).items()):
        try:
            store.load(name)
            state = "ok"
        except Exception as exc:  # noqa: BLE001 - shown, not raised: one broken skill must not hide the rest
            state = f"refused: {exc}"
        rows.append({"name": name, "version": entry["version"], "enabled": entry["enabled"], "state": state})
    print_json(rows)


@app.command("info")
def info(ctx: typer.Context, name: str) -> None:
    """What the skill declares and what you approved."""
    store = _store(ctx)
    entry = _guard(lambda: store.entry(name))
    manifest, digest = _guard(lambda: store.current(name))
    show(describe(manifest, digest, width=screen_width()))
    show(
        f"enabled: {entry['enabled']}; approved hash: {entry['tree_hash']}"
        + ("" if digest == entry["tree_hash"] else "  (CHANGED since approval)")
    )


@app.command("approve")
def approve(ctx: typer.Context, name: str, yes: bool = typer.Option(False, "--yes", "-y")) -> None:
    """Review a changed skill and pin its current files and permissions."""
    store = _store(ctx)
    entry = _guard(lambda: store.entry(name))
    manifest, digest = _guard(lambda: store.current(name))
    show(describe(manifest, digest, width=screen_width()))
    if digest == entry["tree_hash"] and manifest.permissions() == entry["permissions"]:
        typer.echo("unchanged; nothing to approve")
        return
    _guard(lambda: store.check_names(manifest))
    show(f"approved before: {entry['permissions']}")
    ask("Approve this version?", yes=yes, refusal="not approved")
    _guard(lambda: store.approve(name, digest))
    record_decision(
        ctx,
        "skill.approved",
        skill=name,
        version=manifest.version,
        tree_hash=digest,
        permissions=manifest.permissions(),
        replaced={"version": entry["version"], "tree_hash": entry["tree_hash"]},
    )
    typer.echo(f"approved {name}; {RESTART}")


RESTART = "a running bot loads it when restarted (disable and remove take effect at its next call)"


add_switches(
    app,
    Kind(
        noun="skill", record="skill", field="skill", store=_store, guard=_guard, enabled_note=f"; {RESTART}"
    ),
)
