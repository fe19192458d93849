"""The companion's watch over the approvals it signed: journal each one, then settle it only on
the signer's signed word that its nonce is used, and warn about the rest.

Checks happen on every connect, on every nonce quote the companion fetches anyway, when the bridge
pushes a state change, and after every approval call, failed, silent or answered. A fresh quote is
asked for only while something is unsettled, so a clean journal costs no round trip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from companion_bridge.companion.errors import CompanionError
from companion_bridge.companion.journal import Entry, Journal, JournalError
from companion_bridge.companion.outstanding import warning_lines
from companion_bridge.companion.quotes import verified_quote
from companion_bridge.companion.wallet import CompanionWallet
from signer.txcodec import keccak256

QUOTE_TIMEOUT = 10.0

Call = Callable[..., Awaitable[Any]]


class Watch:
    def __init__(self, wallet: CompanionWallet, call: Call, warn: Callable[[str], None]) -> None:
        self.wallet = wallet
        self.journal = Journal(wallet.home)
        self.last_quote: float | None = None  # `ts` of the last nonce quote the signer signed
        self._call, self._warn = call, warn

    def check_room(self) -> None:
        """Refuse before the main key is touched if this approval could not be journaled."""
        try:
            self.journal.check_room()
        except JournalError as exc:
            raise CompanionError(str(exc)) from None

    def signed(self, request: dict[str, Any], tx: dict[str, Any], raw: bytes) -> str:
        """Journal a freshly signed approval before it can leave; its tx hash."""
        tx_hash = "0x" + keccak256(raw).hex()
        try:
            self.journal.record(Entry.for_approval(request, tx, tx_hash, quoted_at=self.last_quote))
        except JournalError as exc:
            raise CompanionError(str(exc)) from None
        return tx_hash

    def settle(self, state: Any) -> None:
        """Let an `approvals.state` reply settle entries, if the signer signed its quote."""
        quote = verified_quote(state, self.wallet.state.get("signer_key"))
        if quote is None:
            return
        self.last_quote = quote.ts
        try:
            self.journal.apply(quote, self.wallet.main_address)
        except JournalError as exc:
            self._warn(f"WARNING: {exc}")

    async def answered(self, tx_hash: str, reply: str) -> None:
        """After an approval call, whatever came back: note it (a hint, not proof), then check."""
        try:
            self.journal.note_reply(tx_hash, reply)
        except JournalError as exc:
            self._warn(f"WARNING: {exc}")
        await self.check()

    async def check(self, *, warn: bool = True) -> list[Entry]:
        """The outstanding approvals: unsettled after a fresh signed quote if the bridge passes one on,
        else as last known. Each is shown through `warn`. An unreadable journal is reported, not
        raised: denying and freezing must keep working (approving is refused by `check_room`)."""
        try:
            if self.journal.unsettled():
                try:
                    self.settle(await self._call("approvals.state", timeout=QUOTE_TIMEOUT))
                except (CompanionError, asyncio.TimeoutError, ConnectionError):
                    pass  # no fresh quote: what the journal knows is all there is
            left = self.journal.unsettled()
        except JournalError as exc:
            self._warn(f"WARNING: {exc}")
            return []
        for line in [line for entry in left for line in warning_lines(entry)] if warn else []:
            self._warn(line)
        return left
