"""`--bind` never exposes the OwliaBot home, the signer home or the signer socket's folder: not the
folder itself, not one above it, not one inside it, not a symlink to any of them; refused when the
server is declared and again when it starts (a registry edited by hand gains nothing)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from bot.config import McpSettings
from bot.mcp_servers.binds import Protected, bind_refusal, protected_paths
from bot.mcp_servers.store import McpStore, PinnedTool, ServerDecl, tool_hash
from bot.mcp_servers.tools import McpTools
from bot.tools.base import ToolFailure
from tests.mcp.conftest import HOSTILE, audit, mcp, state_dir  # noqa: F401 - fixture
from tests.mcp.test_hostile import Events, _ctx


@pytest.fixture()
def layout(tmp_path) -> dict[str, Path]:
    """A home whose config puts the signer home and its socket elsewhere, as a two-user setup does."""
    home, signer, sockets = tmp_path / "owlia", tmp_path / "signer-home", tmp_path / "run" / "owlia-signer"
    workspace = tmp_path / "notes"
    for path in (home / "secrets", signer, sockets, workspace):
        path.mkdir(parents=True)
    (home / "secrets" / "signer.token").write_text("secret-token")
    (home / "config.yaml").write_text(
        f"signer:\n  home: {signer}\n  socket: {sockets / 'signer.sock'}\nbot:\n  workspace: {workspace}\n"
    )
    (tmp_path / "link-to-home").symlink_to(home)
    (tmp_path / "link-to-run").symlink_to(tmp_path / "run")
    return {"home": home, "signer": signer, "sockets": sockets, "workspace": workspace, "root": tmp_path}


@pytest.mark.parametrize(
    "where, words",
    [
        ("home", "is the OwliaBot home (auth.json, the signer token)"),
        ("home/secrets", "is inside the OwliaBot home"),
        ("root", "holds the OwliaBot home"),
        ("signer", "is the signer home (the keystore)"),
        ("sockets", "is the folder of the signer's socket"),
        ("workspace", "is the bot's workspace"),
        ("root/run", "holds the folder of the signer's socket"),
        ("root/link-to-home", "(it resolves to"),
        ("root/link-to-run", "holds the folder of the signer's socket"),
    ],
)
def test_add_refuses_a_bind_that_exposes_the_bots_or_the_signers_files(layout, where, words):
    base, _, rest = where.partition("/")
    path = layout[base] / rest if rest else layout[base]
    out = mcp(layout["home"], "add", "x", "--bind", str(path), "--", "/usr/bin/true", code=1)
    flat = " ".join(out.split())
    assert words in flat and "Bind only the server's own folder" in flat, flat
    assert "x" not in McpStore(layout["home"]).read()


def test_a_hand_edited_bind_is_refused_when_the_server_starts(layout, state_dir):
    """servers.json written around `owlia mcp add`: the hostile server bound with the home's parent is
    never started, neither by `owlia mcp approve` nor by the bot; other servers keep working."""
    home = layout["home"]
    store = McpStore(home)
    (state_dir / "variant").write_text("v1")
    command = ("/usr/bin/python3", "-I", str(HOSTILE / "server.py"), str(state_dir), str(home / "secrets"))
    store.add(
        ServerDecl(
            name="hostile",
            transport="stdio",
            command=command,
            binds=(str(HOSTILE), str(state_dir), str(layout["root"])),
        )
    )
    out = mcp(home, "approve", "hostile", "--yes", code=1)
    assert "holds the OwliaBot home" in " ".join(out.split())
    schema = {"type": "object", "properties": {}}
    desc = "Looks around."
    store.approve(
        "hostile",
        {
            "escape": PinnedTool(
                name="escape",
                level="read",
                hash=tool_hash("escape", desc, schema),
                description=desc,
                input_schema=schema,
            )
        },
    )
    events = Events()

    async def go() -> str:
        source = McpTools.load(home, McpSettings())
        tool = next(t for t in source.tools() if t.name == "mcp_hostile_escape")
        try:
            await tool.handler(_ctx(home, events), tool.args.model_validate({}))
        except ToolFailure as exc:
            return str(exc)
        finally:
            await source.close()
        return "ran"

    refused = asyncio.run(go())
    assert "could not start" in refused and "holds the OwliaBot home" in refused
    assert "secret-token" not in refused
    failed = [r for r in audit(home) if r["kind"] == "mcp.start_failed"]
    assert failed and "holds the OwliaBot home" in failed[0]["error"]
    assert not [r for r in audit(home) if r["kind"] in ("mcp.started", "mcp.call")]


def test_the_protected_folders_follow_the_config(layout):
    found = {p.what.split(" (")[0]: p.path for p in protected_paths(layout["home"])}
    assert found == {
        "the OwliaBot home": layout["home"].resolve(),
        "the signer home": layout["signer"].resolve(),
        "the folder of the signer's socket": layout["sockets"].resolve(),
        "the bot's workspace": layout["workspace"].resolve(),
    }


PARTS = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4)


@given(PARTS, PARTS)
@hsettings(max_examples=300, deadline=None)
def test_a_bind_is_refused_exactly_when_it_is_at_above_or_inside_a_protected_folder(protected, bind):
    root = Path("/nonexistent-owlia-root")
    guarded = (Protected(root.joinpath(*protected), "the OwliaBot home"),)
    path = root.joinpath(*bind)
    related = path == guarded[0].path or path in guarded[0].path.parents or guarded[0].path in path.parents
    assert (bind_refusal(str(path), guarded) is not None) == related
