"""What the user reads about an approval whose signed transaction someone else may still send.

An outstanding entry is one the journal cannot settle: the signer has not shown its nonce as used
in a quote it signed. The user must learn three things: which transaction (amount, recipient,
nonce, hash), that whoever holds it can broadcast it until that nonce is used, and the two ways
out: do nothing if the payment is still wanted, or use the nonce first. The companion cannot do
the latter itself: it has no node of its own, and everything it sends goes through the bridge.
"""

from __future__ import annotations

import time

from companion_bridge.companion.bridge_text import block
from companion_bridge.companion.journal import Entry
from policies.kernel.text import visible
from policies.units import format_amount

BANNER = "!" * 72


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ts))


def warning_lines(entry: Entry) -> list[str]:
    """One outstanding entry as lines for a terminal; every field written out by `visible`."""
    value = int(entry.value)
    lines = [BANNER, f"OUTSTANDING SIGNED TRANSACTION (request {visible(entry.request_id)})"]
    if entry.summary:
        lines.append(f"  {visible(entry.summary)}")
    lines += [
        f"  to:      {visible(entry.to)}",
        f"  value:   {format_amount(value, 18, 'ETH')} ({value} wei)",
        f"  chain:   {entry.chain_id}   nonce: {entry.nonce}",
        f"  tx hash: {visible(entry.tx_hash)}   signed {_when(entry.signed_at)}",
        *(
            f"  {line}"
            for line in block(
                "reply through the bridge (not signed by the signer: no proof)", entry.reply or "none yet"
            )
        ),
        f"Your signer has not shown nonce {entry.nonce} of the main account as mined. Whoever holds this",
        f"transaction (the bridge, if it is compromised) can broadcast it at any time until nonce {entry.nonce}",
        "is used.",
        "  - Still want this payment? Do nothing: it may yet be sent.",
        f"  - To void it: send any transaction from the main account with nonce {entry.nonce}, e.g. a 0-value",
        "    transfer to yourself, from a wallet that holds the main key (the companion has no node of its",
        "    own to send it through). Once it is mined, this entry settles at the next check.",
        "  `owlia companion outstanding` checks again.",
        BANNER,
    ]
    return lines


def settled_line(entry: Entry) -> str:
    """A settled entry: its nonce is mined, by this approval or by another transaction (a nonce
    quote cannot tell which; the tx hash on a block explorer can)."""
    mined = None if entry.settled_by is None else entry.settled_by["main_nonce_mined"]
    still = "" if entry.final else "; still re-checked for a while, in case of a reorg"
    return (
        f"settled: {visible(entry.request_id)} nonce {entry.nonce} on chain {entry.chain_id} is used "
        f"(signed quote: {mined} transactions mined), by this approval ({visible(entry.tx_hash)}) or by "
        f"another transaction{still}"
    )


def already_approved_lines(entry: Entry) -> list[str]:
    """Shown above a request this companion already signed an approval for: the bridge delivered it
    again (after reporting an error, perhaps while keeping the first transaction). Approving again
    signs only the same transaction, at the same nonce, never a second payment."""
    state = (
        "its nonce is used, so approving again signs nothing new"
        if entry.settled
        else "approving again signs the very same transaction, at the same nonce: it cannot pay twice"
    )
    return [
        BANNER,
        f"ALREADY APPROVED as tx {visible(entry.tx_hash)}",
        f"  nonce {entry.nonce} on chain {entry.chain_id}, signed {_when(entry.signed_at)} on this companion;",
        f"  {state}.",
        "  The bridge delivered this request again: if it reported an error the first time, it may still",
        "  hold (or have sent) that transaction. See `owlia companion outstanding`.",
        BANNER,
    ]
