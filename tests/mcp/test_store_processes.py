"""servers.json written by several `owlia mcp` processes at once: no edit may be lost.

A lost edit is stale authority: a server the user disabled or removed comes back enabled when a
concurrent command writes the registry it read before the removal.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bot.mcp_servers.store import McpStore
from tests.processes import race

REPO = Path(__file__).resolve().parents[2]

# One CLI-like writer: adds and removes its own server in a loop, then leaves it added.
CHILD = """
import sys
from bot.mcp_servers.store import McpStore, ServerDecl

home, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
decl = ServerDecl(name=name, transport="http", url=f"https://{name}.example.com/mcp")
print("ready", flush=True)
sys.stdin.readline()
store = McpStore(home)
for _ in range(rounds):
    store.add(decl)
    store.remove(name)
store.add(decl)
"""


def test_concurrent_writers_lose_no_edit(tmp_path: Path):
    names = [f"srv{i}" for i in range(4)]
    done = race([[sys.executable, "-c", CHILD, str(tmp_path), name, "60"] for name in names], cwd=REPO)
    # A lost update shows as "an MCP server named ... exists" (a removal undone) or "no MCP server
    # named ..." (an addition undone) in the writer that trips over it, or a server missing at the end.
    assert [code for code, _, _ in done] == [0] * len(names), "\n".join(err for _, _, err in done)
    assert sorted(McpStore(tmp_path).read()) == names
