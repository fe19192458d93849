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
from urllib.parse import urlsplit

import yaml

from bot.config_text import set_chain_key
from policies.kernel.files import write_private_file

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


def wait_receipt_dev(url: str, tx_hash: str, timeout: float = 30.0) -> dict:
    """The receipt of a dev chain transaction once mined; DevChainError if it reverted or never came."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        receipt = rpc(url, "eth_getTransactionReceipt", [tx_hash])
        if receipt:
            if receipt.get("status") != "0x1":
                raise DevChainError(f"transaction {tx_hash} reverted")
            return receipt
        time.sleep(0.1)
    raise DevChainError(f"no receipt for {tx_hash} within {timeout:.0f} s")


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
            raise DevChainError(
                f"port {self.port} on 127.0.0.1 is already in use (`ss -ltnp` shows by what): stop "
                "that process, or pick another port (`owlia up --port N` or `owlia chain dev --port "
                "N`: either records it in config.yaml)"
            )
        cmd = [
            str(anvil_binary()),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--chain-id",
            str(self.chain_id),
            "--hardfork",
            "prague",
            "--silent",
        ]  # prague: EIP-7702 (Tier 3)
        if self.block_time:
            cmd += ["--block-time", str(self.block_time)]
        self.process = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
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
                raise DevChainError(
                    f"anvil on port {self.port} exited with {process.returncode}: {err.strip()[:500]}"
                )
            try:
                if (
                    int(rpc(self.url, "eth_chainId", timeout=1), 16) == self.chain_id
                    and process.poll() is None
                ):
                    return
            except (OSError, DevChainError):
                time.sleep(0.03)
        raise DevChainError(f"anvil did not answer on {self.url} within {timeout:.0f}s")

    def accounts(self) -> list[tuple[str, int]]:
        return [
            (a, int(rpc(self.url, "eth_getBalance", [a, "latest"]), 16))
            for a in rpc(self.url, "eth_accounts")
        ]

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


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def record_dev_rpc_url(config_path: Path, chain_id: int, url: str) -> str | None:
    """Point the dev chain `chain_id` of config.yaml at `url` (a port given to `owlia chain dev` or
    `owlia up`): the signer and the bot read the chain's address there, so a port that is not recorded
    leaves them talking to the old one. Returns the old rpc_url when it changed, None when it already
    was `url`. Only a `dev: true` chain on this machine is ever rewritten (DevChainError otherwise);
    the file keeps its comments (the one rpc_url string is replaced in place: bot.config_text) and its
    0600 mode."""
    text = config_path.read_text()
    data = yaml.safe_load(text) or {}
    chains = data.get("chains") if isinstance(data, dict) else None
    entry = next((c for c in chains or [] if isinstance(c, dict) and c.get("id") == chain_id), None)
    if entry is None:
        raise DevChainError(f"{config_path} has no chain {chain_id}")
    old = str(entry.get("rpc_url", ""))
    if old == url:
        return None
    if entry.get("dev") is not True or urlsplit(old).hostname not in {h.strip("[]") for h in LOOPBACK_HOSTS}:
        raise DevChainError(
            f"chain {chain_id} in {config_path} is not a dev chain on this machine ({old}): its "
            "rpc_url is yours to edit, never rewritten by a dev command"
        )
    edited = set_chain_key(text, chain_id, "rpc_url", url)  # in place: the comments `owlia init` wrote stay
    if edited is None:
        entry["rpc_url"] = url
        edited = yaml.safe_dump(data, sort_keys=False)
    write_private_file(config_path, edited.encode())
    return old
