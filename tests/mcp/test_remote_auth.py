"""Remote MCP servers that want credentials, run by the tests on loopback with the official SDK's server
side: a header value read from a 0600 file under secrets/ (streamable HTTP and the legacy SSE
transport), and OAuth 2.1 as the MCP authorization spec describes it (protected-resource metadata,
authorization-server discovery, dynamic client registration, PKCE, the resource indicator, rotating
refresh tokens), signed in with `owlia mcp login` through a real loopback redirect."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from bot.mcp_servers.remote import header_values
from bot.mcp_servers.store import McpError, ServerDecl
from tests.mcp.conftest import EVERYTHING, ROOT, audit, mcp

SERVER = Path(__file__).with_name("remote") / "server.py"
TOKEN = "s3cret-remote-token-0123456789"


def _free_port() -> int:
    with socket.socket() as probe:  # a free port, handed to the server (it does not report one it chose)
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait(proc: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else proc.returncode
            time.sleep(0.1)
    raise AssertionError("the remote server did not start")


class Remote:
    def __init__(self, base: str, log: Path) -> None:
        self.base, self.log = base, log

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture()
def remote(tmp_path):
    procs: list[subprocess.Popen] = []

    def start(mode: str, **env: str) -> Remote:
        port = _free_port()
        log = tmp_path / f"remote-{port}.log"
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(port), mode, str(log), TOKEN],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        procs.append(proc)
        _wait(proc, port)
        return Remote(f"http://127.0.0.1:{port}", log)

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def _home(tmp_path: Path, *urls: str) -> Path:
    home = tmp_path / "home"
    (home / "secrets").mkdir(parents=True, mode=0o700)
    (home / "config.yaml").write_text("bot:\n  mcp:\n    allowed_urls: [" + ", ".join(urls) + "]\n")
    return home


def _secret(home: Path, name: str, value: str, mode: int = 0o600) -> None:
    path = home / "secrets" / name
    path.write_text(value)
    path.chmod(mode)


def _nothing_leaked(home: Path, secret: str) -> None:
    for path in [
        p for p in home.rglob("*") if p.is_file() and "secrets" not in p.parts and "oauth" not in p.parts
    ]:
        assert secret not in path.read_text(errors="replace"), path


def test_a_header_from_a_secret_file_over_streamable_http(tmp_path, remote):
    server = remote("bearer")
    url = f"{server.base}/mcp"
    home = _home(tmp_path, url)
    mcp(home, "add", "remote", "--url", url, "--header-file", "Authorization=remote.token")
    assert "the Authorization header's value file" in mcp(home, "approve", "remote", "--yes", code=1)
    _secret(home, "remote.token", f"Bearer {TOKEN}\n", mode=0o644)
    assert "chmod 600" in mcp(home, "approve", "remote", "--yes", code=1)
    assert not server.events()  # nothing was sent while the secret could not be used
    _secret(home, "remote.token", f"Bearer {TOKEN}\r\nX-Forged: 1")
    assert "must be one line of visible ASCII" in mcp(home, "approve", "remote", "--yes", code=1)
    _secret(home, "remote.token", f"Bearer {TOKEN}\n")
    out = mcp(home, "approve", "remote", "--others", "read", "--yes")
    assert "sends: Authorization (value from secrets/remote.token)" in out
    assert "hello from the remote server" in mcp(home, "call", "remote", "whoami")
    assert {e["ok"] for e in server.events()} == {True}
    _secret(home, "remote.token", "Bearer wrong")
    refused = mcp(home, "call", "remote", "whoami", code=1)
    assert "could not start" in refused and TOKEN not in refused and "wrong" not in refused
    assert server.events()[-1] == {"event": "bearer", "ok": False}
    _nothing_leaked(home, TOKEN)


def test_the_legacy_sse_transport_with_a_header(tmp_path, remote):
    server = remote("sse-bearer")
    url = f"{server.base}/sse"
    home = _home(tmp_path, url)
    _secret(home, "remote.token", f"Bearer {TOKEN}")
    mcp(home, "add", "legacy", "--sse", "--url", url, "--header-file", "Authorization=remote.token")
    mcp(home, "approve", "legacy", "--others", "read", "--yes")
    assert "hello from the remote server" in mcp(home, "call", "legacy", "whoami")
    assert [r["transport"] for r in audit(home) if r["kind"] == "mcp.started"] == ["sse"]
    _nothing_leaked(home, TOKEN)


def test_a_real_servers_legacy_sse_mode(tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        ["/usr/bin/node", str(EVERYTHING), "sse"],
        env={"PORT": str(port), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait(proc, port)
        url = f"http://127.0.0.1:{port}/sse"
        home = _home(tmp_path, url)
        mcp(home, "add", "everything", "--sse", "--url", url)
        mcp(home, "approve", "everything", "--level", "get-sum=read", "--others", "skip", "--yes")
        out = mcp(home, "call", "everything", "get-sum", "--args", '{"a": 20, "b": 22}')
        assert out.startswith("[result of MCP server everything, tool get-sum; untrusted]") and "42" in out
    finally:
        proc.kill()
        proc.wait()


def _owlia(home: Path, *args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "OWLIA_HOME": str(home), "COLUMNS": "100"}
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "mcp", *args],
        env=env,
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


def _login(home: Path, name: str) -> str:
    """`owlia mcp login` as a person runs it: open the address it prints (here: follow it with an HTTP
    client, as a browser would; the test server approves at once) and wait for it to finish."""
    proc = _owlia(home, "login", name)
    assert proc.stdout is not None
    url = None
    for line in proc.stdout:
        found = re.search(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)", line)
        if found:
            url = found.group(1)
            break
    assert url, proc.stderr.read() if proc.stderr else ""
    query = dict(httpx.URL(url).params)
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) >= 43
    assert query["redirect_uri"].startswith("http://127.0.0.1:") and query["resource"]
    page = httpx.get(url, follow_redirects=True, timeout=30)
    assert page.status_code == 200 and "Signed in" in page.text
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out


def test_oauth_sign_in_refresh_once_per_rotation_and_sign_out(tmp_path, remote):
    server = remote("oauth", ACCESS_SECONDS="3")
    url = f"{server.base}/mcp"
    home = _home(tmp_path, url)
    mcp(home, "add", "remote", "--url", url, "--oauth")
    assert "needs you to sign in: run `owlia mcp login remote`" in mcp(
        home, "approve", "remote", "--yes", code=1
    )
    assert not server.events()
    out = _login(home, "remote")
    assert "signed in to remote (1 tools)" in out
    kinds = [e["event"] for e in server.events()]
    assert kinds == ["register", "authorize", "exchange"]  # dynamic registration, then the code flow
    assert server.events()[1]["pkce"] and server.events()[1]["resource"] == url
    tokens = home / "mcp" / "oauth" / "remote.json"
    assert tokens.stat().st_mode & 0o777 == 0o600 and tokens.parent.stat().st_mode & 0o777 == 0o700
    stored = json.loads(tokens.read_text())
    assert stored["tokens"]["access_token"] and stored["tokens"]["refresh_token"]
    mcp(home, "approve", "remote", "--others", "read", "--yes")
    time.sleep(3.5)  # the access token has expired: the next two calls, at once, both need a refresh
    calls = [_owlia(home, "call", "remote", "whoami") for _ in range(2)]
    for proc in calls:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "hello from the remote server" in out
    refreshes = [e for e in server.events() if e["event"] == "refresh"]
    assert refreshes == [{"event": "refresh", "ok": True}]  # one refresh; the other process took its result
    _nothing_leaked(home, stored["tokens"]["refresh_token"])
    _nothing_leaked(home, stored["tokens"]["access_token"])
    assert "signed out of remote" in mcp(home, "logout", "remote")
    assert not tokens.exists()
    assert "needs you to sign in" in mcp(home, "call", "remote", "whoami", code=1)


@given(st.text(min_size=1, max_size=200))
@hsettings(max_examples=200, deadline=None)
def test_a_header_value_is_one_line_of_visible_ascii_or_refused(value):
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="owlia-hdr-"))
    (home / "secrets").mkdir(mode=0o700)
    _secret(home, "v.token", value)
    decl = ServerDecl(name="h", transport="http", url="http://127.0.0.1:1/mcp", headers={"X-Key": "v.token"})
    stripped = value.strip()
    fits = 0 < len(stripped) and all(0x20 <= ord(c) <= 0x7E for c in stripped)
    try:
        assert header_values(decl, home) == {"X-Key": stripped} and fits
    except McpError as exc:
        assert not fits and value not in str(exc) or not stripped
    finally:
        import shutil

        shutil.rmtree(home)
