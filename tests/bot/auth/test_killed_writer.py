"""A process killed (kill -9) while it replaced auth.json leaves auth.json readable, and the temp
copy it was writing (the full set of login tokens) does not outlive the next write: after
`owlia auth logout`, no file in the home holds the removed key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bot.auth.store import ApiKeyEntry, AuthStore
from policies.kernel.files import ORPHAN_SECONDS

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-ant-api03-" + "K" * 60

WRITER = """
import sys
from bot.auth.store import ApiKeyEntry, AuthStore
store = AuthStore(sys.argv[1])
print("ready", flush=True)
i = 0
while True:
    i += 1
    store.put("anthropic", ApiKeyEntry(key=sys.argv[2]))
    store.put(f"other{i % 5}", ApiKeyEntry(key="sk-other-" + "o" * 40))
"""


def _orphans(home: Path) -> list[Path]:
    return sorted(home.glob(".auth.json.*.tmp"))


def test_a_killed_writer_leaves_no_readable_copy_of_a_removed_key(home: Path):
    store = AuthStore.in_home(home)
    for _ in range(60):  # kill mid-write until one kill lands between the temp file and its rename
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store.path), KEY], cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert isinstance(store.get("anthropic"), ApiKeyEntry)  # the old or the new file, never half
        if _orphans(home):
            break
    assert _orphans(home), "no kill landed mid-write in 60 tries"
    fresh = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "auth", "logout", "--provider", "other0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fresh.returncode == 0, fresh.stderr
    assert _orphans(home), "a temp file younger than ORPHAN_SECONDS is spared (its writer may live elsewhere)"
    for orphan in _orphans(home):  # the writer was killed a while ago
        stamp = orphan.stat().st_mtime - ORPHAN_SECONDS - 1
        os.utime(orphan, (stamp, stamp))

    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "auth", "logout", "--all"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert store.load() == {}
    assert _orphans(home) == []
    holding = [p.name for p in home.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert holding == [], "the logged-out key survives in these files"
