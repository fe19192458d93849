"""Simulate the exact transaction with `eth_simulateV1` and read the balance changes it reports.

`traceTransfers: true` makes the node report native transfers as ERC-20 style `Transfer` logs from
0xEeee...EEeE, so one pass over the logs gives every account's change per asset (WETH9's `Deposit`
and `Withdrawal`, which move WETH without a `Transfer`, are read too). This is the node's word: the
evaluator (policies.defi) only ever makes a decision stricter from it, never more lenient, and a
simulation that cannot be run asks the owner instead of signing.
"""

from __future__ import annotations

from typing import Any

from policies.context import AssetChange, Simulated
from policies.index import PolicyIndex
from policies.intent import NATIVE
from policies.kernel.keccak import keccak256
from policies.kernel.rpc import RpcRemoteError, RpcUnreachable
from signer.chain import Chain
from signer.wire.approval_request import SimulatedChange, SimulationCard

NATIVE_LOG_ADDRESS = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
TRANSFER = "0x" + keccak256(b"Transfer(address,address,uint256)").hex()
DEPOSIT = "0x" + keccak256(b"Deposit(address,uint256)").hex()
WITHDRAWAL = "0x" + keccak256(b"Withdrawal(address,uint256)").hex()
ZERO = "0x" + "00" * 20
MAX_CHANGES = 32  # more than any swap makes; a flood of logs is cut, and the payer's own rows kept first
SOURCE = "eth_simulateV1"


def _topic_address(topic: Any) -> str:
    if not isinstance(topic, str) or len(topic) != 66:
        raise ValueError("malformed topic")
    return "0x" + topic[-40:].lower()


def _word(data: Any) -> int:
    if not isinstance(data, str) or not data.startswith("0x") or len(data) != 66:
        raise ValueError("malformed log data")
    return int(data, 16)


def changes_from_logs(logs: list[Any]) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """(account, asset) -> net change, and -> gross outflow (negative), from Transfer / Deposit /
    Withdrawal logs."""
    deltas: dict[tuple[str, str], int] = {}
    outflows: dict[tuple[str, str], int] = {}

    def move(account: str, asset: str, amount: int) -> None:
        if account != ZERO:
            deltas[(account, asset)] = deltas.get((account, asset), 0) + amount
            if amount < 0:
                outflows[(account, asset)] = outflows.get((account, asset), 0) + amount

    for log in logs:
        if not isinstance(log, dict):
            raise ValueError("malformed log")
        topics = log.get("topics") or []
        address = str(log.get("address", "")).lower()
        asset = NATIVE if address == NATIVE_LOG_ADDRESS else address
        if not topics:
            continue
        if topics[0] == TRANSFER and len(topics) == 3:
            amount = _word(log.get("data"))
            move(_topic_address(topics[1]), asset, -amount)
            move(_topic_address(topics[2]), asset, amount)
        elif topics[0] == DEPOSIT and len(topics) == 2:
            move(_topic_address(topics[1]), asset, _word(log.get("data")))
        elif topics[0] == WITHDRAWAL and len(topics) == 2:
            move(_topic_address(topics[1]), asset, -_word(log.get("data")))
    return {k: v for k, v in deltas.items() if v != 0}, outflows


async def simulate(chain: Chain, sender: str, to: str, value: int, data: bytes) -> Simulated:
    """The exact call from `sender`, at the latest block, without fee or nonce checks."""
    request = {
        "blockStateCalls": [
            {"calls": [{"from": sender, "to": to, "value": hex(value), "data": "0x" + data.hex()}]}
        ],
        "traceTransfers": True,
        "validation": False,
    }
    try:
        result = await chain.rpc.call("eth_simulateV1", request, "latest")
    except RpcRemoteError as exc:
        return Simulated(error=f"the node refused to simulate it ({exc.message[:200]})")
    except RpcUnreachable:
        return Simulated(error="the node could not be reached to simulate it")
    try:
        call = result[0]["calls"][0]
        if call.get("status") != "0x1":
            error = call.get("error") or {}
            message = error.get("message") if isinstance(error, dict) else None
            return Simulated(reverted=True, error=str(message or "execution reverted")[:300])
        deltas, outflows = changes_from_logs(call.get("logs") or [])
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return Simulated(error="the node sent a malformed simulation")
    ordered = sorted(deltas.items(), key=lambda kv: (kv[0][0] != sender, kv[0]))[:MAX_CHANGES]
    mine = sorted((k, v) for k, v in outflows.items() if k[0] == sender)  # the checks read the payer's only
    return Simulated(
        tuple(AssetChange(account, asset, delta) for (account, asset), delta in ordered),
        outflows=tuple(AssetChange(account, asset, delta) for (account, asset), delta in mine),
    )


def simulation_card(sim: Simulated | None, index: PolicyIndex, chain_id: int) -> SimulationCard | None:
    """The approval request's `simulation`: symbols and decimals from the policy (None when unlisted)."""
    if sim is None or sim.error:
        return None
    changes: list[SimulatedChange] = []
    for c in sim.changes:
        info = index.asset_info(chain_id, c.asset)
        if info is None and c.asset == NATIVE:
            info = ("ETH", 18)
        changes.append(
            {
                "account": c.account,
                "asset": c.asset,
                "symbol": info[0] if info else None,
                "decimals": info[1] if info else None,
                "delta": str(c.delta),
            }
        )
    return {"source": SOURCE, "changes": changes}
