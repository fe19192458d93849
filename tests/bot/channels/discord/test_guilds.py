"""Guilds: ignored unless configured; then allowlisted channels, mentions only, admitted users,
one session per user; guild strangers are never handed a pairing code."""

from __future__ import annotations

from tests.bot.agent.conftest import Reply
from tests.bot.channels.discord.conftest import (
    FRIEND_USER,
    GUILD,
    OTHER_ROOM,
    OWNER,
    ROOM,
    STRANGER_USER,
    run_discord,
)

GUILDS = {"guilds": {"enabled": True, "allow_chats": [str(ROOM)], "mention_only": True}}


def test_guild_messages_are_ignored_by_default(home_bot):
    home_bot.llm.enqueue(Reply(text=["dm answer"]))

    async def scenario(h):
        await h.server.guild_message(OWNER, "hello bot", guild_id=GUILD, channel_id=ROOM, mention=True)
        await h.server.dm(OWNER, "and in private?")  # a barrier: handled after the guild message
        await h.reply_in(h.server.dm_channel(OWNER))
        assert h.server.sent_to(ROOM) == []
        assert not h.server.calls_to("POST", rf"/channels/{ROOM}/.*")

    run_discord(home_bot, scenario)
    assert len(home_bot.llm.requests) == 1 and "hello bot" not in str(home_bot.llm.requests[0].body)


def test_configured_guild_answers_mentions_in_allowed_channels_per_user(home_bot):
    home_bot.llm.enqueue(Reply(text=["hi owner"]), Reply(text=["hi friend"]))

    async def scenario(h):
        server = h.server
        assert server.identifies[0]["intents"] == (1 << 12) | (1 << 0) | (1 << 9)  # + GUILDS, GUILD_MESSAGES
        await server.guild_message(OWNER, "no mention", guild_id=GUILD, channel_id=ROOM)
        await server.guild_message(OWNER, "wrong room", guild_id=GUILD, channel_id=OTHER_ROOM, mention=True)
        await server.guild_message(STRANGER_USER, "let me in", guild_id=GUILD, channel_id=ROOM, mention=True)
        await server.guild_message(OWNER, "what's up", guild_id=GUILD, channel_id=ROOM, mention=True)
        first = await h.reply_in(ROOM)
        await server.guild_message(FRIEND_USER, "me too", guild_id=GUILD, channel_id=ROOM, mention=True)
        sent = await h.reply_in(ROOM, 2)
        assert [m.content for m in sent] == ["hi owner", "hi friend"] and first[0].content == "hi owner"
        assert server.sent_to(OTHER_ROOM) == [] and h.access.pending() == []

    run_discord(home_bot, scenario, **GUILDS)
    texts = [str(r.body["messages"]) for r in home_bot.llm.requests]
    assert len(texts) == 2 and "what's up" in texts[0] and "<@" not in texts[0]
    assert "what's up" not in texts[1]  # per-user sessions: the friend's run does not see the owner's turn
    sessions = {p.name for p in (home_bot.home / "sessions").glob("*.jsonl")}
    assert {f"discord%3A{ROOM}%3A{OWNER}.jsonl", f"discord%3A{ROOM}%3A{FRIEND_USER}.jsonl"} <= sessions
    offered = {t["name"] for t in home_bot.llm.requests[0].body["tools"]}
    assert "transfer" not in offered and "remember" in offered  # no sign tools outside a private DM


def test_message_content_intent_only_when_mentions_are_not_required(home_bot):
    async def scenario(h):
        assert h.server.identifies[0]["intents"] & (1 << 15)  # MESSAGE_CONTENT (privileged)

    guilds = {"enabled": True, "allow_chats": [str(ROOM)], "mention_only": False}
    run_discord(home_bot, scenario, guilds=guilds)
