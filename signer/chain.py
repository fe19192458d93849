"""The signer's view of a chain: nonces, fees, simulation and broadcast through web3.

Caches are chosen so that a stale value can only make a transaction fail, never move more
value: fees are refreshed every few seconds, and "this address has no code" (which lets a plain
value transfer skip simulation at exactly 21 000 gas) is re-checked every 30 seconds.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from web3 import AsyncHTTPProvider, AsyncWeb3
from web3.exceptions import ContractLogicError, Web3Exception

from signer.settings import ChainSettings

PLAIN_TRANSFER_GAS = 21_000
FEE_TTL = 3.0
CODE_TTL = 30.0
GAS_HEADROOM_PERCENT = 20


class ChainError(Exception):
    """The RPC failed or refused; the message is safe to show."""


class SimulationReverted(ChainError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Fees:
    max_fee_per_gas: int
    max_priority_fee_per_gas: int


def _checksum(address: str) -> str:
    return AsyncWeb3.to_checksum_address(address)


class Chain:
    def __init__(self, settings: ChainSettings, *, timeout: float = 10.0) -> None:
        self.settings = settings
        self.w3 = AsyncWeb3(AsyncHTTPProvider(settings.rpc_url, request_kwargs={"timeout": timeout}))
        self._fees: tuple[float, Fees] | None = None
        self._no_code: dict[str, float] = {}
        self._nonces: dict[str, int] = {}
        self._nonce_lock = asyncio.Lock()

    async def chain_id(self) -> int:
        return await self._call(self.w3.eth.chain_id)

    # ---- transaction building ---------------------------------------------------------------

    async def next_nonce(self, sender: str) -> int:
        """Hand out nonces locally so concurrent requests never share one."""
        async with self._nonce_lock:
            if sender not in self._nonces:
                self._nonces[sender] = await self._call(
                    self.w3.eth.get_transaction_count(_checksum(sender), "pending")
                )
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
        block = await self._call(self.w3.eth.get_block("latest"))
        priority = await self._call(self.w3.eth.max_priority_fee)
        base = int(block.get("baseFeePerGas") or 0)
        fees = Fees(max_fee_per_gas=2 * base + priority, max_priority_fee_per_gas=priority)
        self._fees = (now, fees)
        return fees

    async def has_code(self, address: str) -> bool:
        checked = self._no_code.get(address)
        if checked is not None and time.monotonic() - checked < CODE_TTL:
            return False
        code = await self._call(self.w3.eth.get_code(_checksum(address)))
        if code:
            return True
        self._no_code[address] = time.monotonic()
        return False

    async def gas_for(self, sender: str, to: str, value: int, data: bytes) -> int:
        """Gas limit for the call, simulating it first; a revert raises `SimulationReverted`."""
        if not data and not await self.has_code(to):
            return PLAIN_TRANSFER_GAS
        tx = {"from": _checksum(sender), "to": _checksum(to), "value": value, "data": "0x" + data.hex()}
        try:
            estimate = await self.w3.eth.estimate_gas(tx)  # type: ignore[arg-type]
        except ContractLogicError as exc:
            raise SimulationReverted(_revert_reason(exc)) from None
        except Web3Exception as exc:
            message = str(exc)
            if "revert" in message.lower():
                raise SimulationReverted(message[:300]) from None
            raise ChainError(f"gas estimation failed: {message[:300]}") from None
        except (OSError, asyncio.TimeoutError) as exc:
            raise ChainError(f"chain RPC unreachable: {type(exc).__name__}") from None
        return estimate + estimate * GAS_HEADROOM_PERCENT // 100

    # ---- reading and sending ----------------------------------------------------------------

    async def send_raw(self, raw: bytes) -> None:
        await self._call(self.w3.eth.send_raw_transaction(raw))

    async def balance(self, address: str, token: str | None = None) -> int:
        if token is None:
            return int(await self._call(self.w3.eth.get_balance(_checksum(address))))
        data = "0x70a08231" + "00" * 12 + address[2:]
        raw = await self._call(self.w3.eth.call({"to": _checksum(token), "data": data}))
        return int.from_bytes(bytes(raw), "big") if raw else 0

    async def receipt(self, tx_hash: str, timeout: float = 120.0) -> dict:
        receipt = await self._call(self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=timeout))
        return dict(receipt)

    async def close(self) -> None:
        provider = self.w3.provider
        if hasattr(provider, "disconnect"):
            await provider.disconnect()

    async def _call(self, awaitable):
        try:
            return await awaitable
        except Web3Exception as exc:
            raise ChainError(str(exc)[:300]) from None
        except (OSError, asyncio.TimeoutError) as exc:
            raise ChainError(f"chain RPC unreachable ({self.settings.rpc_url}): {type(exc).__name__}") from None


def _revert_reason(exc: ContractLogicError) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return message.replace("execution reverted: ", "").strip()[:300] or "execution reverted"
