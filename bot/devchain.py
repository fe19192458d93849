"""A local anvil chain: the embedded default for `owlia up`, `owlia chain dev` and the tests.

anvil comes from npm (`@foundry-rs/anvil-linux-amd64`, see package.json), installed by .ci/setup.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
NPM_ANVIL = PROJECT_ROOT / "node_modules" / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
DEV_CHAIN_ID = 31337


class DevChainError(RuntimeError):
    pass


def anvil_binary() -> Path:
    """`OWLIA_ANVIL`, else the npm-installed binary, else `anvil` on PATH."""
    candidates = [os.environ.get("OWLIA_ANVIL"), str(NPM_ANVIL), shutil.which("anvil")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise DevChainError("anvil not found: run `bash .ci/setup` (it installs it from npm) or set OWLIA_ANVIL")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def rpc(url: str, method: str, params: list | None = None, timeout: float = 5.0):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - loopback dev chain only
        reply = json.loads(resp.read())
    if "error" in reply:
        raise DevChainError(f"{method}: {reply['error'].get('message')}")
    return reply["result"]


@dataclass
class DevChain:
    port: int = 8545
    chain_id: int = DEV_CHAIN_ID
    block_time: float | None = None  # None: mine each transaction at once
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> DevChain:
        if _listening(self.port):  # never mistake someone else's chain on this port for ours
            raise DevChainError(f"port {self.port} on 127.0.0.1 is already in use (`ss -ltnp` shows by what): stop "
                                "that process, or pick another port (`owlia up --port N` on a new home, or edit "
                                "the dev chain's rpc_url in config.yaml)")
        cmd = [str(anvil_binary()), "--host", "127.0.0.1", "--port", str(self.port),
               "--chain-id", str(self.chain_id), "--hardfork", "prague", "--silent"]  # prague: EIP-7702 (Tier 3)
        if self.block_time:
            cmd += ["--block-time", str(self.block_time)]
        self.process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        start_new_session=True)
        # anvil runs in its own session: if it never answers, or Ctrl-C comes meanwhile, nothing else
        # would stop it, and it would hold the port.
        try:
            self._wait_ready(self.process, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, process: subprocess.Popen[bytes], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise DevChainError(f"anvil on port {self.port} exited with {process.returncode}: "
                                    f"{err.strip()[:500]}")
            try:
                if int(rpc(self.url, "eth_chainId", timeout=1), 16) == self.chain_id and process.poll() is None:
                    return
            except (OSError, DevChainError):
                time.sleep(0.03)
        raise DevChainError(f"anvil did not answer on {self.url} within {timeout:.0f}s")

    def accounts(self) -> list[tuple[str, int]]:
        return [(a, int(rpc(self.url, "eth_getBalance", [a, "latest"]), 16)) for a in rpc(self.url, "eth_accounts")]

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> DevChain:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
