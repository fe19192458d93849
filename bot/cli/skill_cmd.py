"""`owlia skill`: install, review, enable and remove third-party skills.

Installing shows what the skill declares (tools and their tiers, network hosts, chain access,
resources, tree hash) and asks before anything is copied into place. A skill whose files or
permissions changed since then is refused by the bot until `owlia skill approve NAME`.

Everything shown comes from the skill's author. SKILL.md parsing already refuses control, bidi and
invisible characters; here the text is escaped again with `visible()` and a description's further
lines are indented under a gutter, so nothing a skill wrote can pass for a line of this screen.
"""

from __future__ import annotations

from pathlib import Path

import typer

from bot.cli.common import fail, home_of, print_json
from policies.text import visible

app = typer.Typer(help="Manage skills (third-party tools that run in a sandbox).", no_args_is_help=True)


def _store(ctx: typer.Context):
    from skills_runtime.store import SkillStore

    return SkillStore(home_of(ctx))


def _echo(text: str) -> None:
    """Print text that holds skill-written parts: every hidden character escaped, newlines kept."""
    typer.echo(visible(text, keep="\n"))


def _block(text: str, indent: str) -> str:
    """A skill-written description inline: escaped, and any further line indented under a `|`
    gutter, so it cannot pose as a tool, network or signing line of the screen."""
    first, *rest = visible(text.strip(), keep="\n").split("\n")
    return "\n".join([first, *(f"{indent}| {line}" for line in rest)])


def describe(manifest, digest: str) -> str:
    """The text the user approves: everything the skill may do, in plain words."""
    from skills_runtime.manifest import tool_name

    lines = [f"skill {manifest.name} v{manifest.version}: {_block(manifest.description, '    ')}", "tools:"]
    lines += [f"  - {tool_name(manifest.name, t.name)} [{t.level}]: {_block(t.description, '      ')}"
              for t in manifest.tools]
    lines.append("network: " + (", ".join(manifest.network) if manifest.network else "none"))
    lines.append("chain reads: " + ("yes (read-only methods)" if manifest.chain_read else "no"))
    if any(t.level == "sign" for t in manifest.tools):
        lines.append("signing: may ask the signer for transactions (your policy decides; escalated by default)")
    resources = manifest.resources.model_dump(exclude_none=True)
    lines.append("resources: " + (", ".join(f"{k}={v}" for k, v in resources.items()) or "defaults"))
    lines.append(f"tree hash: {digest}")
    return visible("\n".join(lines), keep="\n")


def _guard(action):
    from skills_runtime.manifest import ManifestError
    from skills_runtime.store import SkillError
    from skills_runtime.tree import TreeError

    try:
        return action()
    except (SkillError, ManifestError, TreeError) as exc:
        fail(visible(str(exc)))


@app.command("install")
def install(ctx: typer.Context, path: Path = typer.Argument(..., help="A skill folder or a .zip/.tar.gz archive."),
            yes: bool = typer.Option(False, "--yes", "-y", help="Approve the shown permissions without asking."),
            disabled: bool = typer.Option(False, help="Install without enabling.")) -> None:
    """Copy a skill into ~/.owliabot/skills after you approve what it declares."""
    store = _store(ctx)
    prepared = _guard(lambda: store.prepare(path))
    try:
        _echo(describe(prepared.manifest, prepared.tree_hash))
        if prepared.previous is not None:
            _echo(f"replaces the installed v{prepared.previous['version']} "
                  f"({prepared.previous['tree_hash'][:12]}...)")
        if not yes and not typer.confirm("Install this skill with these permissions?", default=False):
            fail("not installed")
    except BaseException:
        store.discard(prepared)
        raise
    skill = store.install(prepared, enabled=not disabled)
    typer.echo(f"installed {skill.name} ({'enabled' if skill.enabled else 'disabled'})")


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
    _echo(describe(manifest, digest))
    _echo(f"enabled: {entry['enabled']}; approved hash: {entry['tree_hash']}"
               + ("" if digest == entry["tree_hash"] else "  (CHANGED since approval)"))


@app.command("approve")
def approve(ctx: typer.Context, name: str, yes: bool = typer.Option(False, "--yes", "-y")) -> None:
    """Review a changed skill and pin its current files and permissions."""
    store = _store(ctx)
    entry = _guard(lambda: store.entry(name))
    manifest, digest = _guard(lambda: store.current(name))
    _echo(describe(manifest, digest))
    if digest == entry["tree_hash"] and manifest.permissions() == entry["permissions"]:
        typer.echo("unchanged; nothing to approve")
        return
    _guard(lambda: store.check_names(manifest))
    _echo(f"approved before: {entry['permissions']}")
    if not yes and not typer.confirm("Approve this version?", default=False):
        fail("not approved")
    _guard(lambda: store.approve(name, digest))
    typer.echo(f"approved {name}")


@app.command("enable")
def enable(ctx: typer.Context, name: str) -> None:
    store = _store(ctx)
    _guard(lambda: store.set_enabled(name, True))
    typer.echo(f"enabled {name}")


@app.command("disable")
def disable(ctx: typer.Context, name: str) -> None:
    store = _store(ctx)
    _guard(lambda: store.set_enabled(name, False))
    typer.echo(f"disabled {name}")


@app.command("remove")
def remove(ctx: typer.Context, name: str, yes: bool = typer.Option(False, "--yes", "-y")) -> None:
    store = _store(ctx)
    _guard(lambda: store.entry(name))
    if not yes and not typer.confirm(f"Remove skill {name}?", default=False):
        fail("not removed")
    _guard(lambda: store.remove(name))
    typer.echo(f"removed {name}")
