"""Slash commands and redelivered events: each goes through BotCore once, whatever Discord resends."""

from __future__ import annotations

from tests.bot.agent.conftest import Reply
from tests.bot.channels.discord.conftest import GUILD, OWNER, ROOM, STRANGER_USER, run_discord


def test_a_redelivered_message_is_processed_once(home_bot):
    home_bot.llm.enqueue(Reply(text=["only once"]), Reply(text=["second reply"]))

    async def scenario(h):
        event = await h.server.dm(OWNER, "hello")
        await h.server.redeliver(event)
        await h.server.redeliver(event)
        await h.reply_in(h.server.dm_channel(OWNER))
        await h.server.dm(OWNER, "next")  # handled after the duplicates in the same session
        sent = await h.reply_in(h.server.dm_channel(OWNER), 2)
        assert [m.content for m in sent] == ["only once", "second reply"]

    run_discord(home_bot, scenario)
    assert len(home_bot.llm.requests) == 2


def test_help_slash_command_is_answered_through_a_deferred_followup(home_bot):
    async def scenario(h):
        event = await h.server.slash(OWNER, "help")
        interaction = int(event["d"]["id"])
        message = await h.server.wait_for(
            lambda: next((m for m in h.dm_messages() if "Commands:" in m.content), None)
        )
        assert h.server.interaction_responses[interaction][0]["type"] == 5  # "thinking…", then the followup
        assert message.flags & 128 == 0
        await h.server.redeliver(event)  # Discord resends: no second response, no second run
        await h.server.slash(OWNER, "cancel")
        await h.server.wait_for(lambda: len(h.server.interaction_responses) == 2)
        assert len(h.server.interaction_responses[interaction]) == 1
        assert sum("Commands:" in m.content for m in h.dm_messages()) == 1
        await h.first_in(h.server.dm_channel(OWNER), lambda m: m.content == "Nothing is running.")

    run_discord(home_bot, scenario)
    assert home_bot.llm.requests == []  # commands never reach the model


def test_balance_option_becomes_the_command_text(home_bot):
    async def scenario(h):
        await h.server.slash(OWNER, "balance", {"token": "USDC"})
        message = await h.server.wait_for(lambda: next(iter(h.dm_messages()), None))
        await h.server.wait_for(lambda: not message.flags & 128)
        assert "signer" in message.content.lower()  # no signer in this home: the tool says so
        session = (h.bot.home / "sessions" / f"discord%3A{OWNER}.jsonl").read_text()
        assert "/balance USDC" in session

    run_discord(home_bot, scenario)


def test_a_stranger_running_a_command_gets_the_pairing_code_privately(home_bot):
    async def scenario(h):
        event = await h.server.slash(STRANGER_USER, "balance")
        [response] = await h.response_to(event)
        [pending] = h.access.pending()
        assert response["type"] == 4 and response["data"]["flags"] & 64  # ephemeral: only they see it
        assert pending.code in response["data"]["content"]
        again = await h.server.slash(STRANGER_USER, "status")
        [second] = await h.response_to(again)
        assert "approves the pairing code I sent you above" in second["data"]["content"]
        assert second["data"]["flags"] & 64 and pending.code not in second["data"]["content"]
        third = await h.server.slash(STRANGER_USER, "status")
        [last] = await h.response_to(third)  # an interaction is always answered: briefly, past the limit
        assert last["data"]["content"] == "This bot is private." and last["data"]["flags"] & 64
        assert len(h.access.pending()) == 1

    run_discord(home_bot, scenario)


def test_commands_in_a_guild_channel_that_is_not_allowed_are_refused(home_bot):
    async def scenario(h):
        event = await h.server.slash(OWNER, "status", guild_id=GUILD, channel_id=ROOM + 1)
        [response] = await h.response_to(event)
        assert response["data"]["content"] == "I don't answer here." and response["data"]["flags"] & 64

    run_discord(home_bot, scenario, guilds={"enabled": True, "allow_chats": [str(ROOM)]})


def test_a_user_installed_command_in_someone_elses_private_chat_is_refused(home_bot):
    async def scenario(h):
        event = await h.server.slash(OWNER, "balance", channel_id=12345, context=2)
        [response] = await h.response_to(event)
        assert response["data"]["content"] == "I don't answer here." and response["data"]["flags"] & 64
        assert not (h.bot.home / "sessions").exists() or not list((h.bot.home / "sessions").glob("*.jsonl"))

    run_discord(home_bot, scenario)
