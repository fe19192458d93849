"""Allow / Deny buttons for one `write` tool confirmation.

The buttons answer only the user who sent the message that asked for the tool: anyone else who
presses gets an ephemeral "not yours" and nothing changes (their press does not extend the
deadline either). The custom_ids carry 144 random bits, so an id cannot be guessed to answer a
prompt from outside, and the first answer wins: a press, the deadline or /cancel.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import OrderedDict
from collections.abc import Mapping

import discord

from bot.channels.chunking import split_message
from bot.channels.discord.outlet import LIMIT, Outlet, code_block

PREFIX = "owlia:confirm:"
NOT_YOURS = "This confirmation is not yours; only the person who asked can answer it."
CLOSED = "This confirmation is already closed."
SEEN_INTERACTIONS = 4096


class Presses:
    """A channel's button presses. Each interaction is answered once (a redelivery is dropped), a
    press goes to its open confirmation, and a press on one that is closed is told so. Presses are
    routed here rather than through discord.py's view store, which only learns of a message's
    buttons once the send's HTTP response is back: a press could otherwise arrive first and be lost."""

    def __init__(self, remember: int = SEEN_INTERACTIONS) -> None:
        self.remember = remember
        self._seen: OrderedDict[int, None] = OrderedDict()
        self.live: dict[str, tuple[Confirmation, bool]] = {}  # custom_id -> (its prompt, allow?)

    def fresh(self, interaction: discord.Interaction) -> bool:
        """True the first time an interaction id is seen; the oldest ids are forgotten first."""
        if interaction.id in self._seen:
            return False
        self._seen[interaction.id] = None
        if len(self._seen) > self.remember:
            self._seen.popitem(last=False)
        return True

    async def dispatch(self, interaction: discord.Interaction) -> None:
        data: Mapping[str, object] = interaction.data or {}
        custom_id = str(data.get("custom_id", ""))
        if interaction.type is not discord.InteractionType.component or not custom_id.startswith(PREFIX):
            return
        if not self.fresh(interaction):
            return
        found = self.live.get(custom_id)
        if found is None:
            await interaction.response.send_message(CLOSED, ephemeral=True)
            return
        confirmation, allow = found
        await confirmation.press(interaction, allow)


def prompt_messages(prompt: str, requester: int, timeout: float) -> tuple[list[str], str]:
    """(messages before the buttons, the text carrying them). The prompt is shown whole, in a code
    block: a prompt too long for one message is posted in full first, never cut to fit."""
    head = "**Confirm** — this is exactly what will happen:\n"
    tail = f"\nOnly <@{requester}> can answer; it expires in {max(1, round(timeout))} s."
    whole = head + code_block(prompt)
    if len(whole + tail) <= LIMIT:
        return [], whole + tail
    return split_message(whole, LIMIT), "**Confirm** the action shown in full above." + tail


class Confirmation(discord.ui.View):
    """The Allow/Deny buttons of one prompt (discord.py only serializes them; Presses routes presses)."""

    def __init__(self, requester: int, text: str, presses: Presses) -> None:
        super().__init__(timeout=None)  # the deadline is ask()'s, so no press can extend it
        self.requester = requester
        self.text = text
        self.presses = presses
        self.decision: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        token = secrets.token_urlsafe(18)
        for label, style, allow in (
            ("Allow", discord.ButtonStyle.success, True),
            ("Deny", discord.ButtonStyle.danger, False),
        ):
            button: discord.ui.Button = discord.ui.Button(
                label=label, style=style, custom_id=f"{PREFIX}{token}:{label.lower()}"
            )
            self.add_item(button)
            presses.live[str(button.custom_id)] = (self, allow)

    def is_dispatchable(self) -> bool:
        return False  # keeps discord.py from registering it in its view store (see Presses)

    def decide(self, allow: bool) -> bool:
        """Settle the answer unless something else already did; True if this call settled it."""
        if self.decision.done():
            return False
        self.decision.set_result(allow)
        return True

    async def press(self, interaction: discord.Interaction, allow: bool) -> None:
        if interaction.user.id != self.requester:
            await interaction.response.send_message(NOT_YOURS, ephemeral=True)
            return
        if not self.decide(allow):  # a second press: say what the first one decided, not only "closed"
            earlier = self.decision.result() if not self.decision.cancelled() else None
            told = {
                True: "Already allowed: it went ahead.",
                False: "Already answered: not allowed, nothing was done.",
            }
            await interaction.response.send_message(
                told.get(earlier, CLOSED),  # type: ignore[arg-type]
                ephemeral=True,
            )
            return
        verdict = "✅ Allowed." if allow else "❌ Not allowed."
        await interaction.response.edit_message(content=f"{self.text}\n{verdict}", view=None)

    def close(self) -> None:
        for item in self.children:
            self.presses.live.pop(str(getattr(item, "custom_id", "")), None)


async def ask(outlet: Outlet, requester: int, prompt: str, timeout: float, presses: Presses) -> bool:
    """Post the prompt with buttons and wait for the requester's answer; False on deny, expiry or cancel."""
    before, text = prompt_messages(prompt, requester, timeout)
    for chunk in before:
        await outlet.send(chunk)
    view = Confirmation(requester, text, presses)
    message = await outlet.send(view.text, view)
    try:
        return await asyncio.wait_for(asyncio.shield(view.decision), timeout)
    except asyncio.TimeoutError:
        if view.decide(False):
            await _close(outlet, message, f"{view.text}\n⌛ Expired: not allowed.")
        return view.decision.result()
    except asyncio.CancelledError:
        if view.decide(False):
            await _close(outlet, message, f"{view.text}\n✖ Cancelled: not allowed.")
        raise
    finally:
        view.close()


async def _close(outlet: Outlet, message: discord.Message, text: str) -> None:
    """Show why a prompt closed and remove its buttons; the answer stands even if Discord is down."""
    with contextlib.suppress(discord.HTTPException):
        await outlet.edit(message, text, drop_view=True)
