"""servers.json written by several `owlia mcp` processes at once: no edit may be lost.

A lost edit is stale authority: a server the user disabled or removed comes back enabled when a
concurrent command writes the registry it read before the removal.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bot.mcp_servers.store import McpStore

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
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), name, "60"], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in names]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        errors = [proc.communicate(timeout=120)[1] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # A lost update shows as "an MCP server named ... exists" (a removal undone) or "no MCP server
    # named ..." (an addition undone) in the writer that trips over it, or a server missing at the end.
    assert [proc.returncode for proc in procs] == [0] * len(procs), "\n".join(errors)
    assert sorted(McpStore(tmp_path).read()) == names
