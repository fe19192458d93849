"""The companion's watch over the approvals it signed: journal each one, then settle it only on
the signer's signed word that its nonce is mined, and warn about the rest.

Checks happen on every connect, on every nonce quote the companion fetches anyway, when the bridge
pushes a state change, and after every approval call, failed, silent or answered. A fresh quote is
asked for only while some entry is unsettled or settled too recently to be final, so a clean
journal costs no round trip. Pushed state frames are the bridge's to send as often as it likes, so
they are coalesced: at most one check runs at a time, and at most one starts every PUSH_INTERVAL s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from companion_bridge.companion.errors import CompanionError
from companion_bridge.companion.journal import Entry, Journal, JournalError
from companion_bridge.companion.outstanding import warning_lines
from companion_bridge.companion.quotes import NonceQuote, verified_quote
from companion_bridge.companion.wallet import CompanionWallet
from policies.kernel.keccak import keccak256
from signer.wire.approval_request import ApprovalRequestBody, MainTx
from signer.wire.witness import Witness, WitnessError

WITNESS_FILE = "audit_witness.json"  # the latest audit checkpoint the signer signed (signer.wire.witness)

QUOTE_TIMEOUT = 10.0
PUSH_INTERVAL = 5.0  # seconds between two checks started by pushed state frames

Call = Callable[..., Awaitable[Any]]


class Watch:
    def __init__(self, wallet: CompanionWallet, call: Call, warn: Callable[[str], None]) -> None:
        self.wallet = wallet
        self.journal = Journal(wallet.home)
        self.last_quote: float | None = None  # the newest `ts` of a nonce quote the signer signed
        self.audit_alarms: list[str] = []  # checkpoints refused since start: the signer's log went back
        self._call, self._warn = call, warn
        self._pushed: asyncio.Task | None = None
        self._again = False
        self._pushed_at = -PUSH_INTERVAL

    def check_room(self) -> None:
        """Refuse before the main key is touched if this approval could not be journaled."""
        try:
            self.journal.check_room()
        except JournalError as exc:
            raise CompanionError(str(exc)) from None

    def approved(self, request: ApprovalRequestBody) -> Entry | None:
        """The approval this companion already signed for `request`, if it did (journal unreadable:
        CompanionError, since signing again without knowing could pay twice)."""
        try:
            return self.journal.approved(str(request["request_id"]))
        except JournalError as exc:
            raise CompanionError(str(exc)) from None

    def signed(self, request: ApprovalRequestBody, tx: MainTx, raw: bytes, quoted_at: float | None) -> str:
        """Journal a freshly signed approval before it can leave; its tx hash. `quoted_at`: the `ts`
        of the fresh signed quote whose nonce it carries (None: the request's own nonce)."""
        tx_hash = "0x" + keccak256(raw).hex()
        try:
            self.journal.record(Entry.for_approval(request, tx, tx_hash, quoted_at=quoted_at))
        except JournalError as exc:
            raise CompanionError(str(exc)) from None
        return tx_hash

    def settle(self, state: Any) -> NonceQuote | None:
        """Let an `approvals.state` reply settle entries, if the signer signed its quote; the quote.
        Its audit checkpoint goes to the witness first, which reports a log that went back."""
        self.witness_checkpoint(state)
        quote = verified_quote(state, self.wallet.state.get("signer_key"))
        if quote is None:
            return None
        self.last_quote = quote.ts if self.last_quote is None else max(self.last_quote, quote.ts)
        try:
            self.journal.apply(quote, self.wallet.main_address)
        except JournalError as exc:
            self._warn(f"WARNING: {exc}")
        return quote

    async def witness_now(self) -> None:
        """Ask for the signer's state for its audit checkpoint alone (at connect, in the background:
        `check` asks only while the journal has entries to settle). A silent bridge only delays it."""
        try:
            self.settle(
                await self._call("approvals.state", params=self.state_params(), timeout=QUOTE_TIMEOUT)
            )
        except (CompanionError, asyncio.TimeoutError, ConnectionError, aiohttp.ClientError):
            pass

    def state_params(self) -> dict[str, Any] | None:
        """Ask the signer to bind its next checkpoint to the record this witness holds (signer.wire.witness)."""
        key = self.wallet.state.get("signer_key")
        seq = Witness(self.wallet.home / WITNESS_FILE, key).held_seq() if isinstance(key, str) else None
        return None if seq is None else {"witness_seq": seq}

    def witness_checkpoint(self, state: Any) -> None:
        """Keep the signer's latest signed audit checkpoint; warn (and keep the one held) if it goes back."""
        key = self.wallet.state.get("signer_key")
        checkpoint = state.get("audit_checkpoint") if isinstance(state, dict) else None
        if not isinstance(key, str) or checkpoint is None:
            return
        try:
            verdict = Witness(self.wallet.home / WITNESS_FILE, key).offer(checkpoint)
        except (WitnessError, OSError) as exc:
            self._warn(f"WARNING: audit witness: {exc}")
            return
        if not verdict.ok:
            self.audit_alarms.extend(verdict.problems)
            for problem in verdict.problems:
                self._warn(
                    f"WARNING: {problem}. Do not trust this signer's records: run `owlia audit verify "
                    f"--against-companion {self.wallet.home / WITNESS_FILE}` on its host."
                )

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
            if self.journal.watched():
                try:
                    self.settle(
                        await self._call("approvals.state", params=self.state_params(), timeout=QUOTE_TIMEOUT)
                    )
                except (CompanionError, asyncio.TimeoutError, ConnectionError, aiohttp.ClientError):
                    pass  # no fresh quote: what the journal knows is all there is
            left = self.journal.unsettled()
        except JournalError as exc:
            self._warn(f"WARNING: {exc}")
            return []
        for line in [line for entry in left for line in warning_lines(entry)] if warn else []:
            self._warn(line)
        return left

    def poke(self) -> None:
        """The bridge pushed a state change: check, coalesced with any check it already started."""
        if self._pushed is not None and not self._pushed.done():
            self._again = True
            return
        self._pushed = asyncio.create_task(self._pushed_checks())

    async def _pushed_checks(self) -> None:
        self._again = True
        while self._again:
            self._again = False
            await asyncio.sleep(max(0.0, self._pushed_at + PUSH_INTERVAL - time.monotonic()))
            self._pushed_at = time.monotonic()
            try:
                await self.check()
            except Exception as exc:  # noqa: BLE001 - a background check must not die unheard
                self._warn(f"WARNING: checking the approval journal failed ({type(exc).__name__})")

    def stop(self) -> None:
        if self._pushed is not None:
            self._pushed.cancel()
