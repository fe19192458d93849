"""Read-only JSON-RPC to the chains the bot is configured for (services.ChainReader).

Reuses the signer's stdlib client so the bot does not grow a second HTTP stack for six calls.
Only read methods pass: a node URL that happens to expose `eth_sendTransaction` or `anvil_*`
must never become a way around the signer. RPC URLs often embed API keys, so no error names one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bot.tools.basics import ToolFailure
from policies.kernel.rpc import JsonRpcHttp, RpcRemoteError, RpcUnreachable

READ_METHODS = frozenset(
    {
        "eth_chainId",
        "net_version",
        "eth_blockNumber",
        "eth_getBalance",
        "eth_getCode",
        "eth_call",
        "eth_getTransactionCount",
        "eth_getTransactionByHash",
        "eth_getTransactionReceipt",
        "eth_getBlockByNumber",
        "eth_getBlockByHash",
        "eth_gasPrice",
        "eth_maxPriorityFeePerGas",
        "eth_feeHistory",
        "eth_estimateGas",
        "eth_getLogs",
        "eth_getStorageAt",
    }
)


_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)


def redact_urls(text: object, limit: int = 300) -> str:
    """Cut URLs from a message before showing it: node and signer errors may quote an RPC URL,
    and RPC URLs commonly carry an API key in the path or query."""
    return _URL.sub("<url>", str(text))[:limit]


class ChainReadError(ToolFailure):
    """A read failed or was refused; the message is safe to show (no URL, no key)."""


class RpcChainReader:
    """One keep-alive JSON-RPC client per configured chain id."""

    def __init__(self, urls: Mapping[int, str], *, timeout: float = 10.0) -> None:
        self._clients: dict[int, JsonRpcHttp] = {}
        for chain_id, url in urls.items():
            try:
                self._clients[int(chain_id)] = JsonRpcHttp(url, timeout=timeout)
            except ValueError:
                raise ValueError(f"chain {chain_id}: the RPC URL must be http(s)") from None

    @property
    def chain_ids(self) -> list[int]:
        return sorted(self._clients)

    async def call(self, chain_id: int, method: str, *params: Any) -> Any:
        client = self._clients.get(chain_id)
        if client is None:
            known = ", ".join(map(str, self.chain_ids)) or "none"
            raise ChainReadError(f"chain {chain_id} is not configured for reading (configured: {known})")
        if method not in READ_METHODS:
            raise ChainReadError(f"{method} is not a read-only method; the bot never sends through its RPC")
        try:
            return await client.call(method, *params)
        except RpcUnreachable as exc:
            raise ChainReadError(f"chain {chain_id}: the RPC node is unreachable ({exc})") from None
        except RpcRemoteError as exc:
            message = redact_urls(exc.message)
            raise ChainReadError(f"chain {chain_id}: {method} failed: {message}") from None

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
