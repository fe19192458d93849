"""A stranger's pairing request is announced to owners only: with no `bot.pairing.owners`, it goes to
the host's log (and `owlia pair list`), never to the paired user who happened to write last.

Real discord.py against the local gateway and REST server; the notifier and the pairing watch are
wired as `owlia start` wires them (bot/runtime/launcher.py)."""

from __future__ import annotations

import asyncio
import logging

from bot.notify import Notifier
from bot.runtime.pairing_watch import PairingWatch
from tests.bot.agent.conftest import Reply, default_bot_section
from tests.bot.channels.discord.conftest import FRIEND_USER, OWNER, STRANGER_USER, run_discord


def _watching(h, owners: tuple[str, ...]) -> tuple[Notifier, PairingWatch]:
    notifier = Notifier(None, h.runtime.services.state_dir)
    notifier.register("discord", h.channel.send_text)
    h.runtime.core.observers.append(notifier.note_inbound)
    return notifier, PairingWatch(h.access, notifier, owners, interval=0.1)


def test_with_no_owners_a_pairing_request_goes_to_the_log_not_to_the_last_user(home_bot, caplog):
    home_bot.llm.enqueue(Reply(text=["Hi friend."]))
    caplog.set_level(logging.WARNING, logger="bot.runtime.pairing_watch")

    async def scenario(h):
        notifier, watch = _watching(h, ())
        await watch.start()
        try:
            await h.server.dm(FRIEND_USER, "hello")  # a paired user writes: the notifier's "last DM"
            await h.reply_in(h.server.dm_channel(FRIEND_USER))
            assert notifier.last_dm == f"discord:{FRIEND_USER}"
            await h.server.dm(STRANGER_USER, "let me in")
            await h.reply_in(h.server.dm_channel(STRANGER_USER))
            deadline = asyncio.get_running_loop().time() + 20
            while not any("pairing requested" in r.getMessage() for r in caplog.records):  # the watch's look
                assert asyncio.get_running_loop().time() < deadline, "the watch never logged the request"
                await asyncio.sleep(0.02)
            assert [m.content for m in h.server.sent_to(h.server.dm_channel(FRIEND_USER))] == ["Hi friend."]
            assert not h.server.sent_to(h.server.dm_channel(OWNER))
        finally:
            await watch.stop()

    run_discord(home_bot, scenario)
    logged = [r.getMessage() for r in caplog.records if "pairing requested" in r.getMessage()]
    assert len(logged) == 1 and str(STRANGER_USER) in logged[0] and "owlia pair list" in logged[0]


def test_an_owner_hears_of_a_pairing_request_and_nobody_else_does(home_bot):
    home_bot.configure(default_bot_section(home_bot.llm, pairing={"owners": [f"discord:{OWNER}"]}))
    home_bot.llm.enqueue(Reply(text=["Hi friend."]))

    async def scenario(h):
        notifier, watch = _watching(h, (f"discord:{OWNER}",))
        await watch.start()
        try:
            await h.server.dm(FRIEND_USER, "hello")
            await h.reply_in(h.server.dm_channel(FRIEND_USER))
            await h.server.dm(STRANGER_USER, "let me in")
            code = (await h.reply_in(h.server.dm_channel(STRANGER_USER)))[0].content
            [told] = await h.reply_in(h.server.dm_channel(OWNER))
            assert "asked to talk to this bot" in told.content and str(STRANGER_USER) in told.content
            assert h.access.pending()[0].code not in told.content and code  # the code stays with the newcomer
            assert [m.content for m in h.server.sent_to(h.server.dm_channel(FRIEND_USER))] == ["Hi friend."]
        finally:
            await watch.stop()

    run_discord(home_bot, scenario)
