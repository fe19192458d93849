"""Tier 1 fixtures: a real signer process on anvil, a real bridge (uvicorn, FastAPI, WebSocket) on a
loopback port, and a companion with a funded main key in a real V3 keystore.

The bridge runs in a thread with its own event loop so a test can reach inside it (the rewriting
bridge test swaps its delivery step); everything between the processes is real sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import coincurve
import pytest
import uvicorn

from bot.devchain import free_port, rpc
from companion_bridge.app import Bridge
from companion_bridge.companion.client import Companion
from companion_bridge.companion.wallet import CompanionWallet
from companion_bridge.server import BridgeOptions, build
from signer.wire.client import SignerClient
from signer.wire.protocol import Scope
from signer.wire.txcodec import address_of
from tests.conftest import SignerStack, as_json, wait_receipt

MAIN_PASS = b"companion passphrase 1"
MAIN_FUNDS = 10**18  # 1 ETH for Tier 1 transfers


class BridgeThread:
    def __init__(self, options: BridgeOptions) -> None:
        self.options = options
        self.bridge, config = build(options)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.options.port}"

    def start(self) -> BridgeThread:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise AssertionError("bridge did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.bridge.queue.close()


@dataclass
class Tier1:
    stack: SignerStack
    bridge: BridgeThread
    root: Path
    anvil: Any
    main_key: bytes | None = None  # shared stacks: every device holds this one (funded) main key

    @property
    def admin(self) -> str:
        return self.stack.admin_token

    def bot_token(self) -> str:
        """A `sign` client with a name of its own (names are unique per signer)."""
        return self.stack.client_token(f"bot{time.monotonic_ns() % 10**12}")

    async def submit(
        self, *intents: dict[str, Any], token: str | None = None, reason: str | None = None
    ) -> list[dict]:
        """Send intents the way the bot does: one `sign` client (a new one unless `token`) over the socket."""
        async with SignerClient(self.stack.socket, token or self.bot_token()) as client:
            return [as_json(await client.sign(intent, reason=reason)) for intent in intents]

    def new_wallet(self, name: str = "phone", *, fresh_key: bool = False) -> CompanionWallet:
        key = None if fresh_key else self.main_key
        wallet = CompanionWallet.create(
            self.root / f"companion-{name}-{time.monotonic_ns()}",
            bytearray(MAIN_PASS),
            scrypt_n=2**10,
            name=name,
            private_key=key,
        )
        if key is None:
            fund(self.anvil, wallet.main_address, MAIN_FUNDS)
        return wallet

    async def paired(self, name: str = "phone", wallet: CompanionWallet | None = None) -> Companion:
        wallet = wallet or self.new_wallet(name)
        pairing = await self.stack.call(self.admin, "companion.pair_begin", {"name": name})
        companion = Companion(wallet, self.bridge.url)
        await companion.pair(pairing["pairing_id"], pairing["code"], pairing["signer_key"])
        await companion.connect()
        return companion


def transfer(to: str, value: int) -> dict[str, Any]:
    """A plain ETH transfer intent on the dev chain."""
    return {"chain_id": 31337, "to": to, "value": str(value)}


def fund(anvil, address: str, amount: int) -> None:
    sender = rpc(anvil.url, "eth_accounts")[0]
    tx_hash = rpc(anvil.url, "eth_sendTransaction", [{"from": sender, "to": address, "value": hex(amount)}])
    wait_receipt(anvil, tx_hash)


def start_bridge(stack: SignerStack, home: Path, **overrides: Any) -> BridgeThread:
    token = stack.client_token(f"bridge{time.monotonic_ns() % 10**12}", Scope.BRIDGE)
    options = BridgeOptions(
        home=home,
        signer_socket=stack.socket,
        signer_token=token,
        port=free_port(),
        **{"poll_timeout": 2.0, **overrides},
    )
    return BridgeThread(options).start()


@contextlib.contextmanager
def own_tier1(make_stack, root: Path, anvil, **stack_options: Any) -> Iterator[Tier1]:
    """A signer (configured by `stack_options`) and a bridge of the test's own."""
    stack = make_stack(**stack_options).start()
    bridge = start_bridge(stack, root / "bridge")
    try:
        yield Tier1(stack, bridge, root, anvil)
    finally:
        bridge.stop()


@pytest.fixture()
def tier1(make_stack, tmp_path, anvil):
    """A fresh signer and bridge: for tests that need an unpaired signer or change its state."""
    with own_tier1(make_stack, tmp_path, anvil) as tier:
        yield tier


@pytest.fixture(scope="module")
def shared_tier1(tmp_path_factory, anvil):
    """One signer and bridge per test module (each start costs seconds). Devices all hold one funded
    main key; open requests pile up, so tests pick theirs out with `request_for`."""
    root = tmp_path_factory.mktemp("tier1")
    stack = SignerStack(root, anvil.url).start()
    bridge = start_bridge(stack, root / "bridge")
    tier = Tier1(stack, bridge, root, anvil, main_key=secrets.token_bytes(32))
    fund(anvil, address_of(coincurve.PrivateKey(tier.main_key)), MAIN_FUNDS)
    yield tier
    tier.bridge.stop()
    stack.close()


async def request_for(companion: Companion, request_id: str, timeout: float = 5.0) -> dict:
    """The request with this id, skipping others still open from earlier tests."""
    deadline = time.monotonic() + timeout
    while True:
        request = await companion.next_request(timeout=max(0.01, deadline - time.monotonic()))
        if request["request_id"] == request_id:
            return request


async def wait_status(
    stack: SignerStack, token: str, request_id: str, states: set[str], timeout: float = 15.0
) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = await stack.call(token, "sign.status", {"request_id": request_id})
        if status["state"] in states or status["status"] in states:
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"request stuck in {status['state']}: {status}")
        await asyncio.sleep(0.05)


def bridge_of(tier1: Tier1) -> Bridge:
    return tier1.bridge.bridge
