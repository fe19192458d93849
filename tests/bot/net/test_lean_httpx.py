"""httpx without its command line: the client works, rich and pygments are never imported, and the
placeholder is never put over a module already loaded (fresh interpreters: it acts at import time)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from bot.net.lean_httpx import skip_httpx_cli
print(skip_httpx_cli())
import httpx
print(httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(204))).get("http://x/").status_code)
print(sorted(m for m in ("rich", "pygments", "click") if m in sys.modules))
print(skip_httpx_cli())
try:
    httpx.main()
except SystemExit as exc:
    print("cli:", exc)
"""

LATE = """
import httpx
from bot.net.lean_httpx import skip_httpx_cli
print(skip_httpx_cli(), sys.modules["httpx._main"].__file__.endswith("_main.py"))
"""


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.splitlines()


def test_httpx_loads_without_its_cli_and_still_sends_requests() -> None:
    first, client, heavy, again, cli = _run(PROBE)
    assert first == "True" and client == "204"
    assert heavy == "[]"  # none of the CLI's libraries came in with httpx
    assert again == "False"  # once is enough; a second call changes nothing
    assert cli.startswith("cli: the httpx command line is not loaded")


def test_too_late_is_a_no_op() -> None:
    (line,) = _run("import sys\n" + LATE)
    assert line == "False True"  # the real CLI module stays
