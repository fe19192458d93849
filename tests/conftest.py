"""Shared fixtures: a real anvil chain and a real signer daemon in its own process.

Nothing here imitates our own code: the signer under test is `owlia signer serve` started as a
subprocess, reached over its Unix socket with the same client the bot uses.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.devchain import DevChain, free_port, rpc
from policies.kernel.aio import loop_name
from policies.kernel.files import write_private_file
from signer.admin import issue_client
from signer.daemon import Daemon, init_home
from signer.serve import DAEMON_LOOP
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from signer.wire.protocol import Scope
from signer.wire.settings import SignerPaths, load_signer_config
from signer.wire.sign_replies import Reply, dump_reply

DEV_POLICY = Path(str(resources.files("policies").joinpath("defaults/dev.yaml")))
SIGNER_TESTS = Path(__file__).resolve().parent / "signer"
FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"  # anvil account 1, "dev-friend" in dev.yaml
STRANGER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"  # anvil account 2, in no address book
PASSPHRASE = b"test passphrase, not for real funds"


@pytest.fixture(autouse=True, scope="module")
def product_event_loop(request: pytest.FixtureRequest):
    """Every `asyncio.run` in a test module runs on the loop its code runs on when deployed: uvloop for
    the bot, the bridge and the skills and MCP hosts, asyncio's own for the signer daemon
    (policies.kernel.aio, signer.serve.DAEMON_LOOP). A bug only one loop shows (uvloop spawns no
    process with `user=`) is then caught where it ships. `OWLIA_EVENT_LOOP=asyncio` runs all on asyncio's."""
    prefer = DAEMON_LOOP if Path(str(request.path)).is_relative_to(SIGNER_TESTS) else "uvloop"
    previous = asyncio.get_event_loop_policy()
    if loop_name(prefer) == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    else:
        asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    yield
    asyncio.set_event_loop_policy(previous)


@pytest.fixture(scope="session")
def anvil():
    chain = DevChain(port=free_port()).start()
    yield chain
    chain.stop()


def balance(chain: DevChain, address: str) -> int:
    return int(rpc(chain.url, "eth_getBalance", [address, "latest"]), 16)


def wait_receipt(chain: DevChain, tx_hash: str, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        receipt = rpc(chain.url, "eth_getTransactionReceipt", [tx_hash])
        if receipt:
            return receipt
        time.sleep(0.05)
    raise AssertionError(f"no receipt for {tx_hash}")


def reverter_policy(chain: DevChain, tmp_path: Path) -> tuple[str, Path]:
    """Deploy a contract every call to which reverts, and a dev policy that allows calling it.

    0x12345678 is no function the signer decodes, so the policy names it under opaque_calls.
    """
    deployer = rpc(chain.url, "eth_accounts")[0]
    # init code returning the 3-byte runtime PUSH0 PUSH0 REVERT: every call to it reverts.
    tx = rpc(
        chain.url, "eth_sendTransaction", [{"from": deployer, "data": "0x6003600c60003960036000f35f5ffd"}]
    )
    contract = wait_receipt(chain, tx)["contractAddress"]
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        DEV_POLICY.read_text().replace(
            "opaque_calls: []",
            f'opaque_calls:\n  - {{chain: 31337, address: "{contract}", selector: "0x12345678", max_value: "0"}}',
        )
    )
    return contract, policy


def signer_db(paths: SignerPaths) -> AsTheSignerWrites:
    """A writable connection to a stopped signer's database as the signer itself opens it (with the
    master key's row-MAC functions): for tests that move state the way the signer would, e.g. time.
    Its `close` binds the state head, as every commit of the signer does."""
    from signer.keystore import unlock
    from signer.store.guard import Unlocked

    with unlock(paths.home, bytearray(PASSPHRASE)) as master:
        unlocked = Unlocked.from_master(master)
    return AsTheSignerWrites(unlocked.connect(paths.db), unlocked, paths)


class AsTheSignerWrites:
    """A signer connection whose writes end, at `close`, the way a signer commit ends: the state
    head bound to the log's head and the anchor moved (signer.store.state_head)."""

    def __init__(self, conn: sqlite3.Connection, unlocked: Any, paths: SignerPaths) -> None:
        self._conn, self._unlocked, self._paths = conn, unlocked, paths

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self._conn.execute(sql, params)

    def commit(self) -> None:
        """Each statement has committed already (autocommit); the binding comes at `close`."""

    def close(self) -> None:
        from signer.store.audit import load_anchor

        anchor = load_anchor(self._paths.anchor, self._unlocked.audit_keys)
        audit = self._unlocked.audit_log(self._conn, self._paths.anchor)
        self._conn.execute("BEGIN IMMEDIATE")
        audit.bind_state(floor=anchor.epoch if anchor is not None else 0)
        self._conn.execute("COMMIT")
        audit.write_anchor()
        audit.close()
        self._conn.close()


def throwaway_audit_keys():
    """Keys for a bare audit log in a unit test (a signer home derives its own from the master key)."""
    from signer.store.audit import AuditKeys

    return AuditKeys(chain=b"c" * 32, anchor=b"a" * 32)


def audit_keys(paths: SignerPaths):
    """The audit chain's keys for a test home (the CLI derives them the same way, from the passphrase)."""
    from signer.keystore import unlock
    from signer.store.audit import AuditKeys

    with unlock(paths.home, bytearray(PASSPHRASE)) as master:
        return AuditKeys.derive(master)


class SignerStack:
    """A signer home plus its daemon process; start, stop, kill -9 and restart it at will."""

    def __init__(
        self, root: Path, rpc_url: str, *, policy: Path = DEV_POLICY, signer: dict | None = None
    ) -> None:
        self.root = root
        self.home = root / "home"
        self.home.mkdir(mode=0o700)
        self.sockdir = Path(tempfile.mkdtemp(prefix="ow"))  # short: Unix socket paths max out at 108 bytes
        self.socket = self.sockdir / "signer.sock"
        config = {
            "chains": [{"id": 31337, "name": "anvil", "rpc_url": rpc_url, "dev": True}],
            "signer": {"socket": str(self.socket), **(signer or {})},
        }
        (self.home / "config.yaml").write_text(yaml.safe_dump(config))
        self.passfile = root / "passphrase"
        write_private_file(self.passfile, PASSPHRASE)
        self.config = load_signer_config(self.home)
        self.paths = SignerPaths.from_config(self.home, self.config)
        init_home(self.paths, bytearray(PASSPHRASE), policy_file=policy, scrypt_n=2**10)
        self.process: subprocess.Popen | None = None
        self.log = root / "signer.log"

    @property
    def admin_token(self) -> str:
        return self.paths.admin_token.read_text().strip()

    def owlia(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        """`owlia --home <this home> ARGS`; commands that unlock the keystore get the passphrase from the env."""
        env = {**os.environ, "OWLIA_SIGNER_PASSPHRASE": PASSPHRASE.decode()} if env is None else env
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", "--home", str(self.home), *args],
            text=True,
            capture_output=True,
            timeout=120,
            env=env,
        )

    def serve_command(self) -> tuple[list[str], dict[str, str] | None]:
        """How the signer process is started: argv and environment (None: this one's)."""
        return [
            sys.executable,
            "-m",
            "bot.cli",
            "--home",
            str(self.home),
            "signer",
            "serve",
            "--passphrase-file",
            str(self.passfile),
        ], None

    def start(self, timeout: float = 30.0) -> SignerStack:
        argv, env = self.serve_command()
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log, "ab"), env=env
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"signer exited: {self.log.read_text()[-2000:]}")
            if self.socket.exists():
                try:
                    self.call_sync(self.admin_token, "status")
                    return self
                except Exception:  # noqa: BLE001 - not listening yet
                    pass
            time.sleep(0.05)
        raise AssertionError("signer did not come up")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=20)
        self.process = None

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self.process = None

    def client_token(self, name: str, scope: Scope = Scope.SIGN) -> str:
        return issue_client(self.paths, name, scope, passphrase=bytearray(PASSPHRASE))[1]

    async def call(self, token: str, method: str, params: dict[str, Any] | None = None) -> Any:
        async with SignerClient(self.socket, token) as client:
            return await client.call_json(method, params)  # the wire JSON, checked against its reply model

    def call_sync(self, token: str, method: str, params: dict[str, Any] | None = None) -> Any:
        return asyncio.run(self.call(token, method, params))

    def funded_session_key(self, chain_id: int = 31337) -> dict:
        admin = self.admin_token
        created = self.call_sync(
            admin, "session_key.create", {"idempotency_key": new_idempotency_key("t"), "chain_id": chain_id}
        )
        key = created["session_key"]
        self.call_sync(
            admin, "session_key.topup", {"idempotency_key": new_idempotency_key("t"), "key_id": key["key_id"]}
        )
        return key

    def close(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(self.sockdir, ignore_errors=True)


class InProcessSigner:
    """A signer home and a daemon in this process (broadcast off), for tests that reach inside it."""

    def __init__(self, root: Path, rpc_url: str, *, policy: Path = DEV_POLICY) -> None:
        home = root / "home"
        home.mkdir(mode=0o700)
        self.sockdir = Path(tempfile.mkdtemp(prefix="ow"))
        (home / "config.yaml").write_text(
            yaml.safe_dump(
                {
                    "chains": [{"id": 31337, "name": "anvil", "rpc_url": rpc_url, "dev": True}],
                    "signer": {"socket": str(self.sockdir / "s.sock"), "broadcast": False},
                }
            )
        )
        self.config = load_signer_config(home)
        self.paths = SignerPaths.from_config(home, self.config)
        init_home(self.paths, bytearray(PASSPHRASE), policy_file=policy, scrypt_n=2**10)
        self.token = issue_client(self.paths, "bot", Scope.SIGN, passphrase=bytearray(PASSPHRASE))[1]

    @property
    def admin_token(self) -> str:
        return self.paths.admin_token.read_text().strip()

    def daemon(self) -> Daemon:
        return Daemon(self.paths, self.config, bytearray(PASSPHRASE))


def as_json(reply: Reply) -> dict[str, Any]:
    """A typed reply as the JSON the signer sent (for tests that read replies as the wire has them)."""
    return json.loads(dump_reply(reply))


@pytest.fixture()
def make_stack(tmp_path, anvil):
    stacks: list[SignerStack] = []

    def make(rpc_url: str | None = None, **kwargs: Any) -> SignerStack:
        root = tmp_path / f"stack{len(stacks)}"
        root.mkdir()
        stack = SignerStack(root, rpc_url or anvil.url, **kwargs)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()


@pytest.fixture()
def stack(make_stack) -> SignerStack:
    return make_stack().start()


def pytest_configure(config):
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
