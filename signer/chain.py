"""The signer's view of a chain: nonces, fees, simulation and broadcast over JSON-RPC.

Caches are chosen so that a stale value can only make a transaction fail, never move more
value: fees are refreshed every few seconds, and "this address has no code" (which lets a plain
value transfer skip simulation at exactly 21 000 gas) is re-checked every 30 seconds. The node's
fee answers are bounded by the chain's ceilings (signer.fees), its gas estimate by `max_gas`, and
every number it sends must be a well-formed hex quantity (`quantity`): what a lying node says can
make a request fail, never make a key burn more than those ceilings allow.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from enum import Enum

from signer.fees import FeeCeilingExceeded, Fees, InvalidFees, quote
from policies.kernel.rpc import JsonRpcHttp, RpcRemoteError, RpcUnreachable
from signer.wire.settings import ChainSettings

PLAIN_TRANSFER_GAS = 21_000
FEE_TTL = 3.0
CODE_TTL = 30.0
GAS_HEADROOM_PERCENT = 20
RECEIPT_POLL_SECONDS = 0.25
CLAMPED_QUOTES_KEPT = 16
_QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,64}")  # unsigned, at most 256 bits: what an EVM quantity can be


class ChainError(Exception):
    """The RPC failed or refused; the message is safe to show."""


class FeeAboveCeiling(ChainError):
    """The node's fee market is above the chain's `max_fee_gwei`: a denial naming that ceiling."""


class GasAboveCeiling(ChainError):
    """The node's gas estimate, padded, is above the chain's `max_gas`: a denial naming that ceiling."""


def quantity(value: object, what: str) -> int:
    """A hex quantity from the node as an int, or ChainError: `int(x, 16)` alone takes '-0x1', ' 1 ',
    '0x_1' and numbers of any size, so a lying node could hand over a negative fee or gas. Strictly
    `0x` and 1 to 64 hex digits; the value itself is not echoed (it reaches the bot and the log)."""
    if not isinstance(value, str) or _QUANTITY.fullmatch(value) is None:
        raise ChainError(f"the RPC node sent a malformed {what} (not a non-negative hex quantity)")
    return int(value, 16)


class SimulationReverted(ChainError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Sent(Enum):
    """What is known about a transaction after handing it to the node."""

    ACCEPTED = "accepted"  # the node took it, or knows it
    REJECTED = "rejected"  # the node refused it and does not know it: it can never be mined from here
    UNKNOWN = "unknown"  # the answer was lost: it may be mined, so its spend must stay counted


@dataclass(frozen=True, slots=True)
class Broadcast:
    sent: Sent
    error: str | None = None


class Chain:
    def __init__(self, settings: ChainSettings, *, timeout: float = 10.0) -> None:
        self.settings = settings
        self.rpc = JsonRpcHttp(settings.rpc_url, timeout=timeout)
        self._fees: tuple[float, Fees] | None = None
        # Recent quotes whose tip was clamped, by (max fee, tip): the engine notes a clamp on the record.
        self.clamped_quotes: dict[tuple[int, int], Fees] = {}
        self._no_code: dict[str, float] = {}
        self._nonces: dict[str, int] = {}
        self._nonce_lock = asyncio.Lock()

    @property
    def _unreachable(self) -> str:
        """Names the chain, never the URL: an RPC URL often carries an API key, and this text reaches
        the bot, the audit log and the companion."""
        return f"the RPC node of chain {self.settings.id} ({self.settings.name}) is unreachable"

    async def chain_id(self) -> int:
        return quantity(await self._call("eth_chainId"), "chain id")

    # ---- transaction building ---------------------------------------------------------------

    async def next_nonce(self, sender: str) -> int:
        """Hand out nonces locally so concurrent requests never share one."""
        async with self._nonce_lock:
            if sender not in self._nonces:
                self._nonces[sender] = quantity(await self._call("eth_getTransactionCount", sender, "pending"),
                                                "nonce")
            nonce = self._nonces[sender]
            self._nonces[sender] = nonce + 1
            return nonce

    def forget_nonce(self, sender: str) -> None:
        """After a rejected broadcast: re-read the chain so the gap is filled by the next request."""
        self._nonces.pop(sender, None)

    async def fees(self) -> Fees:
        now = time.monotonic()
        if self._fees and now - self._fees[0] < FEE_TTL:
            return self._fees[1]
        block = await self._call("eth_getBlockByNumber", "latest", False)
        priority = quantity(await self._call("eth_maxPriorityFeePerGas"), "priority fee")
        if not isinstance(block, dict):
            raise ChainError("the RPC node sent no latest block")
        raw_base = block.get("baseFeePerGas")
        base = 0 if raw_base is None else quantity(raw_base, "base fee")  # None: a chain without EIP-1559 base fee
        try:
            fees = quote(base, priority, self.settings)
        except FeeCeilingExceeded as exc:  # not cached: the next request asks the node again
            raise FeeAboveCeiling(str(exc)) from None
        except InvalidFees as exc:
            raise ChainError(str(exc)) from None
        if fees.clamped:
            self.clamped_quotes[(fees.max_fee_per_gas, fees.max_priority_fee_per_gas)] = fees
            while len(self.clamped_quotes) > CLAMPED_QUOTES_KEPT:
                del self.clamped_quotes[next(iter(self.clamped_quotes))]
        self._fees = (now, fees)
        return fees

    async def has_code(self, address: str) -> bool:
        checked = self._no_code.get(address)
        if checked is not None and time.monotonic() - checked < CODE_TTL:
            return False
        code = await self._call("eth_getCode", address, "latest")
        if code not in (None, "0x", "0x0"):
            return True
        self._no_code[address] = time.monotonic()
        return False

    async def gas_for(self, sender: str, to: str, value: int, data: bytes) -> int:
        """Gas limit for the call, simulating it first; a revert raises `SimulationReverted`, a limit
        above the chain's `max_gas` raises `GasAboveCeiling` (the node's estimate is not trusted: with
        the max fee at its ceiling, 30M gas would let one transaction burn tens of ETH)."""
        if not data and not await self.has_code(to):
            return PLAIN_TRANSFER_GAS
        tx = {"from": sender, "to": to, "value": hex(value), "data": "0x" + data.hex()}
        try:
            answer = await self.rpc.call("eth_estimateGas", tx)
        except RpcRemoteError as exc:
            if exc.code == 3 or "revert" in exc.message.lower():
                raise SimulationReverted(_revert_reason(exc.message)) from None
            raise ChainError(f"gas estimation failed: {exc.message}") from None
        except RpcUnreachable as exc:
            raise ChainError(f"{self._unreachable}: {exc}") from None
        estimate = quantity(answer, "gas estimate")
        limit = estimate + estimate * GAS_HEADROOM_PERCENT // 100
        if limit > self.settings.max_gas:
            raise GasAboveCeiling(
                f"the gas limit would be {limit} (the node's estimate {estimate} plus {GAS_HEADROOM_PERCENT}%), "
                f"above the ceiling of chain {self.settings.id} (max_gas: {self.settings.max_gas}); "
                "nothing was signed")
        return limit

    # ---- reading and sending ----------------------------------------------------------------

    async def broadcast(self, raw: bytes, tx_hash: str) -> Broadcast:
        """Send a signed transaction once, and say only what is known: a timeout or a dropped
        connection after the node read it is not a refusal, so those end UNKNOWN unless the node
        can be asked and knows the hash; REJECTED needs the node's own error and an unknown hash."""
        try:
            await self.rpc.call("eth_sendRawTransaction", "0x" + raw.hex(), retry=False)
            return Broadcast(Sent.ACCEPTED)
        except RpcRemoteError as exc:
            error, refused = f"the node refused it: {exc.message}", True
        except RpcUnreachable as exc:
            error, refused = f"{self._unreachable}: {exc}", False
        try:
            known = await self.rpc.call("eth_getTransactionByHash", tx_hash) is not None
        except (RpcRemoteError, RpcUnreachable):
            known, refused = False, False
        if known:
            return Broadcast(Sent.ACCEPTED, error)
        return Broadcast(Sent.REJECTED if refused else Sent.UNKNOWN, error)

    async def balance(self, address: str, token: str | None = None, block: str = "latest") -> int:
        """`block="pending"` also counts transactions the node holds but has not mined yet."""
        if token is None:
            return quantity(await self._call("eth_getBalance", address, block), "balance")
        data = "0x70a08231" + "00" * 12 + address[2:]
        raw = await self._call("eth_call", {"to": token, "data": data}, block)
        return quantity(raw, "token balance") if raw not in (None, "0x") else 0

    async def mined(self, tx_hash: str) -> bool:
        """Is there a receipt for this transaction now (no waiting)?"""
        return bool(await self._call("eth_getTransactionReceipt", tx_hash))

    async def mined_nonce(self, address: str) -> int:
        """How many of the account's transactions are mined: a nonce below it can never be mined again."""
        return quantity(await self._call("eth_getTransactionCount", address, "latest"), "nonce")

    async def receipt(self, tx_hash: str, timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            receipt = await self._call("eth_getTransactionReceipt", tx_hash)
            if receipt:
                if not isinstance(receipt, dict):
                    raise ChainError("the RPC node sent a malformed receipt")
                return {k: quantity(v, k) if k in ("status", "blockNumber", "gasUsed") else v
                        for k, v in receipt.items()}
            if time.monotonic() >= deadline:
                raise ChainError(f"no receipt for {tx_hash} within {timeout:.0f}s")
            await asyncio.sleep(RECEIPT_POLL_SECONDS)

    async def dev_fund(self, address: str, amount: int) -> str:
        """Dev chains only: send from the node's first unlocked account and wait for the receipt."""
        if not self.settings.dev:
            raise ChainError("funding from the node's accounts is only for dev chains")
        sender = (await self._call("eth_accounts"))[0]
        tx_hash = await self._call("eth_sendTransaction", {"from": sender, "to": address, "value": hex(amount)})
        await self.receipt(tx_hash, timeout=30)
        return tx_hash

    async def close(self) -> None:
        self.rpc.close()

    async def _call(self, method: str, *params):
        try:
            return await self.rpc.call(method, *params)
        except RpcRemoteError as exc:
            raise ChainError(f"{method}: {exc.message}") from None
        except RpcUnreachable as exc:
            raise ChainError(f"{self._unreachable}: {exc}") from None


def _revert_reason(message: str) -> str:
    return message.replace("execution reverted: ", "").strip()[:300] or "execution reverted"
