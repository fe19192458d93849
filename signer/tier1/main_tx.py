"""The main account's transaction: the exact one the main key is asked to sign, the nonce it
must carry when it is signed, and the field-by-field check of what came back signed.

The main key lives only in the companion; the signer never trusts that what it got back is what
it asked for. Everything but the nonce is fixed at escalation; the nonce is the account's next one
at the moment of checking (a signed transaction for a later nonce could be held back and sent at a
time of someone else's choosing, one for an earlier nonce can never be mined).
"""

from __future__ import annotations

from policies.intent import Call
from policies.kernel.addresses import to_checksum
from signer.chain import Chain, ChainError, GasAboveCeiling, quantity
from signer.txdecode import DecodedTx
from signer.wire.approval_request import MainTx
from signer.wire.protocol import ErrorCode, RpcError

FALLBACK_GAS_LIMIT = 300_000  # when the main account cannot be simulated (e.g. not yet funded)


async def main_account_tx(chain: Chain | None, main: str | None, call: Call) -> MainTx | None:
    """The exact transaction the main key is asked to sign: fields fixed now, checked on the answer.

    None when no companion is paired yet or the chain cannot be reached: such a request can only be
    denied or left to expire.
    """
    if chain is None or main is None:
        return None
    try:
        await chain.ensure_chain_id()  # another chain's node: nothing for the main key to sign either
        nonce = await next_nonce(chain, main)
        fees = await chain.fees()
    except Exception:  # noqa: BLE001 - unreachable or garbled chain: nothing to sign
        return None
    simulated = True
    try:
        gas = await chain.gas_for(main, call.to, call.value, call.data)
    except GasAboveCeiling:
        return None  # the node asks more gas than this chain allows: nothing the main key should sign
    except ChainError:
        gas, simulated = min(FALLBACK_GAS_LIMIT, chain.settings.max_gas), False
    return {
        "type": 2,
        "chain_id": call.chain_id,
        "from": to_checksum(main),
        "to": to_checksum(call.to),
        "value": str(call.value),
        "data": "0x" + call.data.hex(),
        "nonce": nonce,
        "gas_limit": gas,
        "max_fee_per_gas": str(fees.max_fee_per_gas),
        "max_priority_fee_per_gas": str(fees.max_priority_fee_per_gas),
        "gas_simulated": simulated,
    }


async def next_nonce(chain: Chain, account: str) -> int:
    """The nonce the account's next transaction must carry (pending: counts the mempool)."""
    try:
        return quantity(await chain.rpc.call("eth_getTransactionCount", account, "pending"), "nonce")
    except Exception as exc:  # noqa: BLE001 - unreachable or garbled: nothing can be checked or sent
        raise RpcError(
            ErrorCode.UNAVAILABLE, f"cannot read the main account's nonce: {type(exc).__name__}"
        ) from None


def mismatch(want: MainTx, got: DecodedTx, main: str) -> str | None:
    """The first field where the signed tx differs from the approved request, or None. `want`'s
    nonce is the main account's next one, read by the caller as it checks."""
    tx = got.tx
    if got.has_access_list:
        return "the signed transaction carries an access list"
    checks = (
        ("signer", got.sender, want["from"].lower()),
        ("signer is the main account", got.sender, main.lower()),
        ("chain_id", tx.chain_id, want["chain_id"]),
        ("to", tx.to, want["to"].lower()),
        ("value", tx.value, int(want["value"])),
        ("data", "0x" + tx.data.hex(), want["data"]),
    )
    for name, have, expected in checks:
        if have != expected:
            return f"the signed transaction's {name} differs from the approved request"
    if tx.nonce != want["nonce"]:
        return (
            f"the signed transaction's nonce differs from the approved request: the main account's next nonce "
            f"is {want['nonce']} (another transaction may have gone first); sign it again"
        )
    if tx.gas > want["gas_limit"] or tx.gas < 21_000:
        return "the signed transaction's gas limit is outside the approved bound"
    if tx.max_fee_per_gas > int(want["max_fee_per_gas"]) or tx.max_priority_fee_per_gas > tx.max_fee_per_gas:
        return "the signed transaction's fees exceed the approved bound"
    return None
