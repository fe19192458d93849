"""skills/registry.json written by several `owlia skill` processes at once: no edit may be lost.

`owlia skill disable a` racing `owlia skill disable b`: each read the registry, flipped its own
flag and wrote the whole file back, so one disable could come undone and the bot kept running a
skill the user had just turned off.
"""

from __future__ import annotations

import sys
from pathlib import Path

from policies.kernel.registry import write_registry
from skills_runtime.store import SkillStore
from tests.processes import race

REPO = Path(__file__).resolve().parents[2]

# One CLI-like writer: enables and disables its own skill in a loop, then leaves it disabled.
CHILD = """
import sys
from skills_runtime.store import SkillStore

home, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()
store = SkillStore(home)
for _ in range(rounds):
    store.set_enabled(name, False)
    store.set_enabled(name, True)
store.set_enabled(name, False)
"""


def test_concurrent_disables_all_stick(tmp_path: Path):
    names = [f"skill{i}" for i in range(4)]
    store = SkillStore(tmp_path)
    write_registry(store.registry_path, "skills", {name: {"enabled": True} for name in names})
    done = race([[sys.executable, "-c", CHILD, str(tmp_path), name, "60"] for name in names], cwd=REPO)
    assert [code for code, _, _ in done] == [0] * len(names), "\n".join(err for _, _, err in done)
    assert store.enabled() == [], "a skill the user disabled is enabled again"
    assert sorted(store.entries()) == names
