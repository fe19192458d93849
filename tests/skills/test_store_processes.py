"""skills/registry.json written by several `owlia skill` processes at once: no edit may be lost.

`owlia skill disable a` racing `owlia skill disable b`: each read the registry, flipped its own
flag and wrote the whole file back, so one disable could come undone and the bot kept running a
skill the user had just turned off.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from policies.kernel.registry import write_registry
from skills_runtime.store import SkillStore

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
    assert [proc.returncode for proc in procs] == [0] * len(procs), "\n".join(errors)
    assert store.enabled() == [], "a skill the user disabled is enabled again"
    assert sorted(store.entries()) == names
