"""Confirmations for `write` tools as inline buttons that only the asking user can answer.

Anyone in a chat can press a button under a bot message, and anyone can craft callback data, so a
press proves nothing by itself. Each confirmation gets an unguessable token (compared in constant
time) and is bound to the user who sent the message and the chat it came from; a press by anyone
else, or after the deadline, is answered "not yours" / "expired" and changes nothing. The prompt
is shown verbatim (escaped, never Markdown-rendered: a link's text could hide its target), and
the message is edited to show the answer, so the chat keeps a record of what was allowed.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.channels.telegram.api import TelegramApi, utf16_len
from bot.channels.telegram.botapi import CallbackQuery, Markup, inline_keyboard
from bot.channels.telegram.markup import escape

log = logging.getLogger(__name__)

PREFIX = "cf"
MAX_PROMPT = 3500  # the prompt must be shown whole; a longer one is declined, never cut
NOT_YOURS = "Not yours: only the person who asked can answer this."
EXPIRED = "This confirmation has expired."
ALREADY = {
    True: "Already allowed: this was answered when you pressed Allow, and it went ahead.",
    False: "Already denied: this was answered when you pressed Deny, and nothing was done.",
}
ANSWERED_KEPT = 100  # answered confirmations remembered, so a second press is told what really happened


@dataclass
class _Ask:
    token: str
    chat_id: int
    user_id: int
    prompt: str
    expires_at: float
    answer: asyncio.Future[bool] = field(repr=False)


def _keyboard(token: str) -> Markup:
    return inline_keyboard([[("✅ Allow", f"{PREFIX}:{token}:y"), ("❌ Deny", f"{PREFIX}:{token}:n")]])


def _card(prompt: str, status: str) -> str:
    return f"<b>{escape(status)}</b>\n<pre>{escape(prompt)}</pre>"


class Confirmations:
    """Open confirmations of one channel, answered by button presses."""

    def __init__(self, api: TelegramApi, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.clock = clock
        self._open: list[_Ask] = []
        self._answered: list[tuple[_Ask, bool]] = []  # the latest answers, newest last

    @property
    def open(self) -> int:
        return len(self._open)

    async def ask(self, chat_id: int, user_id: int, prompt: str, timeout: float) -> bool:
        """Show `prompt` with Allow/Deny; True only if `user_id` pressed Allow in time."""
        if utf16_len(prompt) > MAX_PROMPT:
            await self.api.quietly(
                "confirmation",
                self.api.send_html(
                    chat_id,
                    "<b>Not allowed:</b> the action is too long to show here for confirmation.",
                    "Not allowed: the action is too long to show here for confirmation.",
                ),
            )
            return False
        token = secrets.token_urlsafe(18)
        ask = _Ask(
            token,
            chat_id,
            user_id,
            prompt,
            self.clock() + timeout,
            asyncio.get_running_loop().create_future(),
        )
        minutes = max(1, round(timeout / 60))
        try:
            message = await self.api.send_html(
                chat_id,
                _card(prompt, f"Allow this? (only you can answer; expires in {minutes} min)"),
                f"Allow this? (expires in {minutes} min)\n{prompt}",
                markup=_keyboard(token),
            )
        except Exception as exc:  # noqa: BLE001 - could not ask, so the answer is no
            log.warning("telegram confirmation not delivered: %s", self.api.scrub(exc))
            return False
        self._open.append(ask)
        result, status = False, "⌛ Not answered in time: not allowed."
        try:
            result = await asyncio.wait_for(asyncio.shield(ask.answer), timeout)
            status = "✅ Allowed:" if result else "❌ Denied:"
        except TimeoutError:
            pass
        except asyncio.CancelledError:
            status = "⏹ Cancelled: not allowed."
            raise
        finally:
            self._open.remove(ask)
            if ask.answer.done() and not ask.answer.cancelled():
                self._answered = [*self._answered, (ask, ask.answer.result())][-ANSWERED_KEPT:]
            await self.api.quietly(
                "confirmation edit", self.api.edit_html(message, _card(prompt, status), f"{status}\n{prompt}")
            )
        return result

    def _find(self, token: str) -> _Ask | None:
        found = None
        for ask in self._open:  # a handful at most; every one is compared, in constant time
            if hmac.compare_digest(ask.token.encode(), token.encode()):
                found = ask
        return found

    def _answer_of(self, token: str) -> tuple[_Ask, bool] | None:
        found = None
        for ask, allowed in self._answered:  # every one compared, in constant time
            if hmac.compare_digest(ask.token.encode(), token.encode()):
                found = (ask, allowed)
        return found

    async def press(self, query: CallbackQuery) -> None:
        """A button press: resolve the confirmation it belongs to, or refuse it."""
        parts = (query.data or "").split(":")
        valid = len(parts) == 3 and parts[0] == PREFIX and parts[2] in ("y", "n")
        ask = self._find(parts[1]) if valid else None
        chat_id = query.message.chat.id if query.message is not None else None
        if ask is not None and ask.answer.done() and not ask.answer.cancelled():
            answered: tuple[_Ask, bool] | None = (ask, ask.answer.result())
        else:
            answered = self._answer_of(parts[1]) if valid and ask is None else None
        if answered is not None:  # a second press: say what really happened, to its owner only
            earlier, allowed = answered
            mine = query.from_user.id == earlier.user_id and chat_id == earlier.chat_id
            said = ALREADY[allowed] if mine else NOT_YOURS
            await self.api.quietly("callback answer", self.api.answer(query.id, said, alert=not mine))
            return
        if ask is None or ask.answer.done():
            await self.api.quietly("callback answer", self.api.answer(query.id, EXPIRED))
            return
        if query.from_user.id != ask.user_id or chat_id != ask.chat_id:
            log.info("telegram confirmation pressed by someone else; ignored")
            await self.api.quietly("callback answer", self.api.answer(query.id, NOT_YOURS, alert=True))
            return
        if self.clock() >= ask.expires_at:
            await self.api.quietly("callback answer", self.api.answer(query.id, EXPIRED))
            return
        allowed = parts[2] == "y"
        ask.answer.set_result(allowed)
        await self.api.quietly(
            "callback answer", self.api.answer(query.id, "Allowed" if allowed else "Denied")
        )
