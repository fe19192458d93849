"""llm-cooldowns.json has several writers (the bot's routers, `owlia chat` beside the bot): a
cooldown one process records must survive another's write, or `/health` calls a failing provider
ready and the next start retries it at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bot.llm.cooldowns import CooldownStore

REPO = Path(__file__).resolve().parents[3]

# A writer that loads the store, then records what it is told, one stdin line at a time.
CHILD = """
import sys, time
from bot.llm.cooldowns import CooldownStore
store = CooldownStore(sys.argv[1])
print("loaded", flush=True)
for line in sys.stdin:
    verb, name = line.split()
    store.record_failure(name, time.time()) if verb == "fail" else store.record_success(name)
    print("done", flush=True)
"""


def test_two_processes_keep_each_others_cooldowns(tmp_path: Path):
    path = tmp_path / "state" / "llm-cooldowns.json"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for proc in procs:  # both loaded the (empty) file before either writes
            assert proc.stdout.readline().strip() == "loaded"

        def tell(proc: subprocess.Popen, line: str) -> None:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "done"

        bot, chat = procs
        tell(bot, "fail main")
        tell(chat, "fail backup")
        tell(chat, "fail main")  # the same provider failing in the other process: counted on
        tell(bot, "ok backup")
    finally:
        for proc in procs:
            proc.stdin.close()
            proc.wait(timeout=30)
    store = CooldownStore(path)
    assert store.get("main").failures == 2, "a cooldown recorded by the other process was lost"
    assert store.get("backup").failures == 0
