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
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from policies.kernel.rpc import JsonRpcHttp, RpcRemoteError, RpcUnreachable
from signer.fees import FeeCeilingExceeded, Fees, InvalidFees, quote
from signer.wire.settings import ChainSettings

PLAIN_TRANSFER_GAS = 21_000
FEE_TTL = 3.0
CODE_TTL = 30.0
GAS_HEADROOM_PERCENT = 20
RECEIPT_POLL_SECONDS = 0.25
CLAMPED_QUOTES_KEPT = 16
CHAIN_ID_TTL = 60.0  # seconds a node's eth_chainId answer is trusted on one unbroken connection
_QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,64}")  # unsigned, at most 256 bits: what an EVM quantity can be


class ChainError(Exception):
    """The RPC failed or refused; the message is safe to show."""


class WrongChain(ChainError):
    """The node answers for another chain than the one the signer signs for: nothing is signed."""


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


class ReceiptLie(ChainError):
    """A receipt that does not belong to the transaction asked about (another hash, another sender),
    or endpoints that disagree about it: the node is lying or broken, and the receipt is ignored."""


@dataclass(frozen=True, slots=True)
class Receipt:
    """The fields of a receipt the signer relies on, checked against the hash it computed itself."""

    tx_hash: str
    status: int  # 1 success, 0 reverted
    block_number: int
    block_hash: str
    gas_used: int

    def to_json(self) -> dict[str, str | int]:
        return {
            "tx_hash": self.tx_hash,
            "status": self.status,
            "block_number": self.block_number,
            "block_hash": self.block_hash,
            "gas_used": self.gas_used,
        }


class SimulationReverted(ChainError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Sent(Enum):
    """What is known about a transaction after handing it to the node."""

    ACCEPTED = "accepted"  # the node took it, or knows it
    REJECTED = (
        "rejected"  # the node refused it and says it does not know it: its word only, so it may be mined
    )
    UNKNOWN = "unknown"  # the answer was lost: it may be mined


@dataclass(frozen=True, slots=True)
class Broadcast:
    sent: Sent
    error: str | None = None


class Chain:
    def __init__(self, settings: ChainSettings, *, timeout: float = 10.0) -> None:
        self.settings = settings
        self.rpc = JsonRpcHttp(settings.rpc_url, timeout=timeout)
        # A second, independent endpoint that must agree on every receipt the signer acts on.
        self.check = (
            None if settings.check_rpc_url is None else JsonRpcHttp(settings.check_rpc_url, timeout=timeout)
        )
        self._fees: tuple[float, Fees] | None = None
        # Recent quotes whose tip was clamped, by (max fee, tip): the engine notes a clamp on the record.
        self.clamped_quotes: dict[tuple[int, int], Fees] = {}
        self._no_code: dict[str, float] = {}
        self._nonces: dict[str, int] = {}
        self._nonce_lock = asyncio.Lock()
        # (connections opened on each endpoint, monotonic time) when eth_chainId last matched
        self._chain_checked: tuple[tuple[int, int], float] | None = None

    @property
    def _unreachable(self) -> str:
        """Names the chain, never the URL: an RPC URL often carries an API key, and this text reaches
        the bot, the audit log and the companion."""
        return f"the RPC node of chain {self.settings.id} ({self.settings.name}) is unreachable"

    async def chain_id(self) -> int:
        return quantity(await self._call("eth_chainId"), "chain id")

    def _connections(self) -> tuple[int, int] | None:
        """Connections opened so far on each endpoint; None when one is closed now (the next call
        opens a new one, which may reach another node)."""
        if not self.rpc.open or (self.check is not None and not self.check.open):
            return None
        return self.rpc.connects, 0 if self.check is None else self.check.connects

    async def ensure_chain_id(self) -> None:
        """Raise WrongChain unless the node (and the check endpoint) say they serve this chain.

        Asked before the first signature on each connection to the node: a new connection (a
        reconnect, a node restarted or swapped behind the same URL), an RPC failure, or
        CHAIN_ID_TTL seconds make it ask again. Nonces, fees, balances and simulations read from
        another chain's node would be another chain's, so the signer fails closed: nothing signed."""
        checked, now = self._chain_checked, self._connections()
        fresh = checked is not None and time.monotonic() - checked[1] < CHAIN_ID_TTL
        if fresh and now is not None and checked is not None and checked[0] == now:
            return
        self._chain_checked = None
        told = await self.chain_id()
        told_check = None
        if self.check is not None:
            try:
                told_check = quantity(await self.check.call("eth_chainId"), "chain id")
            except (RpcRemoteError, RpcUnreachable):
                raise ChainError(
                    f"the check endpoint of chain {self.settings.id} could not be read"
                ) from None
        for endpoint, answer in (("RPC node", told), ("check endpoint", told_check)):
            if answer is not None and answer != self.settings.id:
                raise WrongChain(
                    f"the {endpoint} configured for chain {self.settings.id} ({self.settings.name}) answers for chain "
                    f"{answer}: nothing was signed. Point its URL in config.yaml at a node of chain "
                    f"{self.settings.id}, then restart the signer"
                )
        # the connections the answers came on (a node that closes each one after its reply: None, asked every time)
        self._chain_checked = None if (now := self._connections()) is None else (now, time.monotonic())

    # ---- transaction building ---------------------------------------------------------------

    async def next_nonce(self, sender: str, ceiling: Callable[[], int] | None = None) -> int:
        """Hand out nonces locally so concurrent requests never share one.

        `ceiling()`, read only when the node is asked, is the highest count the account can have:
        one past the highest nonce the signer ever signed from it (a session key signs nowhere
        else). A node that says more is lying, or the key is used elsewhere: refused, since its
        transactions would wait behind a gap, holding their spends, or be mined at its chosen time."""
        async with self._nonce_lock:
            if sender not in self._nonces:
                told = quantity(await self._call("eth_getTransactionCount", sender, "pending"), "nonce")
                if ceiling is not None and told > (most := ceiling()):
                    raise ChainError(
                        f"the RPC node of chain {self.settings.id} says the account's next nonce is {told}, but the "
                        f"signer has signed transactions from it only up to nonce {most - 1}: the node is lying or "
                        "the key is used elsewhere; nothing was signed"
                    )
                self._nonces[sender] = told
            nonce = self._nonces[sender]
            self._nonces[sender] = nonce + 1
            return nonce

    def forget_nonce(self, sender: str) -> None:
        """After a broadcast the node did not accept: re-read the chain, so that if the transaction
        really went nowhere the next request fills its nonce (and, once mined, proves it dead); both
        stay counted until then (signer.receipts), so a node that lies about the count gains nothing."""
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
        base = (
            0 if raw_base is None else quantity(raw_base, "base fee")
        )  # None: a chain without EIP-1559 base fee
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
                "nothing was signed"
            )
        return limit

    # ---- reading and sending ----------------------------------------------------------------

    async def broadcast(self, raw: bytes, tx_hash: str) -> Broadcast:
        """Send a signed transaction once, and say only what the node claims: a timeout or a dropped
        connection after the node read it is not a refusal, so those end UNKNOWN unless the node
        can be asked and knows the hash; REJECTED is the node's own error and an unknown hash. Neither
        proves anything: a lying node can refuse a transaction and relay it anyway (signer.receipts)."""
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

    async def call(self, to: str, data: bytes, block: str = "latest") -> bytes:
        """eth_call: Tier 3 reads enforcer state with it (signer.tier3.grants)."""
        raw = await self._call("eth_call", {"to": to, "data": "0x" + data.hex()}, block)
        if not isinstance(raw, str) or not raw.startswith("0x"):
            raise ChainError("the RPC node sent a malformed eth_call result")
        return bytes.fromhex(raw[2:])

    async def code(self, address: str) -> bytes:
        raw = await self._call("eth_getCode", address, "latest")
        if not isinstance(raw, str) or not raw.startswith("0x"):
            raise ChainError("the RPC node sent malformed code")
        return bytes.fromhex(raw[2:])

    async def latest_timestamp(self) -> int:
        block = await self._call("eth_getBlockByNumber", "latest", False)
        if not isinstance(block, dict):
            raise ChainError("the RPC node sent no latest block")
        return quantity(block.get("timestamp"), "block timestamp")

    async def mined(self, tx_hash: str) -> bool:
        """Is there a receipt for this transaction now (no waiting)?"""
        return bool(await self._call("eth_getTransactionReceipt", tx_hash))

    async def block_number(self) -> int:
        """The node's latest block number (on the check endpoint too, when configured: the lower one)."""
        head = quantity(await self._call("eth_blockNumber"), "block number")
        if self.check is None:
            return head
        try:
            return min(head, quantity(await self.check.call("eth_blockNumber"), "block number"))
        except (RpcRemoteError, RpcUnreachable):
            raise ChainError(f"the check endpoint of chain {self.settings.id} could not be read") from None

    async def mined_nonce(self, address: str) -> int:
        """How many of the account's transactions are mined: a nonce below it can never be mined again."""
        return quantity(await self._call("eth_getTransactionCount", address, "latest"), "nonce")

    async def receipt_for(self, tx_hash: str, sender: str) -> Receipt | None:
        """The receipt of the signer's own transaction `tx_hash` from `sender`, now, or None.

        The node's answer is checked against what the signer knows: a receipt naming another hash or
        another sender raises `ReceiptLie` (never taken as this transaction's fate). With a second
        endpoint configured (`check_rpc_url`), both must return the same receipt; a disagreement is a
        `ReceiptLie` too, and one that has none while the other has one means "not yet" (None)."""
        first = self._checked_receipt(await self._call("eth_getTransactionReceipt", tx_hash), tx_hash, sender)
        if self.check is None or first is None:
            return first
        try:
            raw = await self.check.call("eth_getTransactionReceipt", tx_hash)
        except (RpcRemoteError, RpcUnreachable):
            raise ChainError(f"the check endpoint of chain {self.settings.id} could not be read") from None
        second = self._checked_receipt(raw, tx_hash, sender)
        if second is None:
            return None  # not seen there yet: keep waiting, fail closed
        if second != first:
            raise ReceiptLie(f"the RPC endpoints of chain {self.settings.id} disagree about {tx_hash}")
        return first

    @staticmethod
    def _checked_receipt(raw: object, tx_hash: str, sender: str) -> Receipt | None:
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise ReceiptLie("the RPC node sent a malformed receipt")
        got_hash, got_from = raw.get("transactionHash"), raw.get("from")
        if not isinstance(got_hash, str) or got_hash.lower() != tx_hash.lower():
            raise ReceiptLie(f"the RPC node sent a receipt for another transaction when asked for {tx_hash}")
        if not isinstance(got_from, str) or got_from.lower() != sender.lower():
            raise ReceiptLie(f"the RPC node sent a receipt for {tx_hash} from another sender")
        status = quantity(raw.get("status"), "receipt status")
        block_hash = raw.get("blockHash")
        if (
            status not in (0, 1)
            or not isinstance(block_hash, str)
            or not re.fullmatch(r"0x[0-9a-fA-F]{64}", block_hash)
        ):
            raise ReceiptLie(f"the RPC node sent a malformed receipt for {tx_hash}")
        return Receipt(
            tx_hash.lower(),
            status,
            quantity(raw.get("blockNumber"), "block number"),
            block_hash.lower(),
            quantity(raw.get("gasUsed"), "gas used"),
        )

    async def receipt(self, tx_hash: str, timeout: float = 120.0) -> dict[str, object]:
        deadline = time.monotonic() + timeout
        while True:
            receipt = await self._call("eth_getTransactionReceipt", tx_hash)
            if receipt:
                if not isinstance(receipt, dict):
                    raise ChainError("the RPC node sent a malformed receipt")
                return {
                    k: quantity(v, k) if k in ("status", "blockNumber", "gasUsed") else v
                    for k, v in receipt.items()
                }
            if time.monotonic() >= deadline:
                raise ChainError(f"no receipt for {tx_hash} within {timeout:.0f}s")
            await asyncio.sleep(RECEIPT_POLL_SECONDS)

    async def dev_fund(self, address: str, amount: int) -> str:
        """Dev chains only: send from the node's first unlocked account and wait for the receipt."""
        if not self.settings.dev:
            raise ChainError("funding from the node's accounts is only for dev chains")
        sender = (await self._call("eth_accounts"))[0]
        tx_hash = await self._call(
            "eth_sendTransaction", {"from": sender, "to": address, "value": hex(amount)}
        )
        if not isinstance(tx_hash, str):
            raise ChainError("the RPC node sent a malformed transaction hash")
        await self.receipt(tx_hash, timeout=30)
        return tx_hash

    async def close(self) -> None:
        self.rpc.close()
        if self.check is not None:
            self.check.close()

    async def _call(self, method: str, *params: Any) -> Any:
        try:
            return await self.rpc.call(method, *params)
        except RpcRemoteError as exc:
            raise ChainError(f"{method}: {exc.message}") from None
        except RpcUnreachable as exc:
            self._chain_checked = None  # whatever answers next is asked its chain id again
            raise ChainError(f"{self._unreachable}: {exc}") from None


def _revert_reason(message: str) -> str:
    return message.replace("execution reverted: ", "").strip()[:300] or "execution reverted"
