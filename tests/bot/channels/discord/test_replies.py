"""Replies: split at 2000 chars without breaking code blocks, streaming edits at most once per
interval, 429s retried after retry_after, notifications chunked into the user's DM."""

from __future__ import annotations

import asyncio

import discord

from bot.channels.discord.outlet import ChannelOutlet
from bot.channels.discord.sink import DiscordSink
from tests.bot.agent.conftest import Reply
from tests.bot.channels.discord.conftest import OWNER, ROOM, run_discord


def long_reply() -> str:
    code = "\n".join(f"x_{i} = {i}  # some filler to make the block long" for i in range(120))
    return "Here is the script:\n```python\n" + code + "\n```\n" + " ".join(["Outro."] * 400)


def test_long_reply_is_split_at_2000_with_code_blocks_closed_and_reopened(home_bot):
    text = long_reply()
    home_bot.llm.enqueue(Reply(text=[text[i : i + 500] for i in range(0, len(text), 500)]))

    async def scenario(h):
        def finished():
            sent = h.dm_messages()
            return sent if sum(m.content.count("Outro.") for m in sent) == 400 else None

        sent = await h.server.wait_for(finished, 20)
        assert len(sent) >= 4 and all(len(m.content) <= 2000 for m in sent)
        for message in sent:
            assert message.content.count("```") % 2 == 0  # every chunk opens and closes its own block
        code_chunks = [m.content for m in sent if "x_" in m.content]
        assert len(code_chunks) >= 2
        assert all(c.lstrip().startswith(("```python", "Here")) for c in code_chunks)
        joined = "\n".join(m.content for m in sent)
        assert all(joined.count(f"x_{i} = {i} ") == 1 for i in range(120))

    async def go(h):
        await h.server.dm(OWNER, "write me a long script")
        await scenario(h)

    run_discord(home_bot, go)


def test_streaming_edits_are_rate_limited_to_the_interval(home_bot):
    interval = 0.3

    async def scenario(h):
        dm = await h.channel.client.create_dm(discord.Object(OWNER))
        sink = DiscordSink(ChannelOutlet(dm), OWNER, interval=interval, presses=h.channel.presses)
        words = [f"word{i} " for i in range(40)]
        for word in words:  # 40 deltas over ~1.6 s, as a model streams them
            await sink.text(word)
            await asyncio.sleep(0.04)
        await sink.done("".join(words))
        [message] = h.dm_messages()
        assert message.content.strip() == "".join(words).strip()
        edits = h.server.calls_to("PATCH", rf"/channels/{dm.id}/messages/{message.id}")
        streamed = edits[:-1]  # the last one is the final text, sent at once
        assert 2 <= len(streamed) <= int(1.6 / interval) + 1
        gaps = [b.at - a.at for a, b in zip(streamed, streamed[1:])]
        assert all(gap >= interval * 0.9 for gap in gaps), gaps
        assert all(v.endswith(" …") for v in message.versions[:-1])

    run_discord(home_bot, scenario)


def test_a_429_is_retried_after_retry_after(home_bot):
    home_bot.llm.enqueue(Reply(text=["after the wait"]))

    async def scenario(h):
        h.server.rate_limit_next("POST", r"/channels/\d+/messages", 0.6)
        await h.server.dm(OWNER, "hi")
        [message] = await h.reply_in(h.server.dm_channel(OWNER))
        assert message.content == "after the wait"
        first, second = h.server.calls_to("POST", r"/channels/\d+/messages")
        assert (first.status, second.status) == (429, 200)
        assert second.at - first.at >= 0.6 * 0.95

    run_discord(home_bot, scenario)


def test_a_global_429_holds_every_request_until_it_passes(home_bot):
    async def scenario(h):
        h.server.rate_limit_next("POST", r"/channels/\d+/messages", 0.5, is_global=True)
        await asyncio.gather(
            h.channel.send_text(str(OWNER), "first"), h.channel.send_text(str(OWNER), "second")
        )
        posts = h.server.calls_to("POST", r"/channels/\d+/messages")
        assert [c.status for c in posts].count(429) == 1 and len(h.dm_messages()) == 2
        limited = next(c for c in posts if c.status == 429)
        assert all(c.at - limited.at >= 0.5 * 0.95 for c in posts if c.status == 200 and c.at > limited.at)

    run_discord(home_bot, scenario)


def test_notification_opens_the_dm_and_is_chunked(home_bot):
    async def scenario(h):
        await h.channel.send_text(str(OWNER), "\n".join(f"line {i} " + "x" * 60 for i in range(80)))
        assert h.server.calls_to("POST", r"/users/@me/channels")[0].body == {"recipient_id": OWNER}
        sent = h.dm_messages()
        assert len(sent) == 3 and all(len(m.content) <= 2000 for m in sent)
        assert "line 0 " in sent[0].content and "line 79 " in sent[-1].content

    run_discord(home_bot, scenario)


def test_a_notification_to_an_allowlisted_guild_channel_goes_to_that_channel(home_bot):
    async def scenario(h):
        await h.channel.send_text(str(ROOM), "price alert")
        [message] = h.server.sent_to(ROOM)
        assert message.content == "price alert" and not h.server.calls_to("POST", r"/users/@me/channels")

    run_discord(home_bot, scenario, guilds={"enabled": True, "allow_chats": [str(ROOM)]})


def test_a_429_on_an_interaction_followup_is_retried_too(home_bot):
    async def scenario(h):
        h.server.rate_limit_next("POST", r"/webhooks/\d+/[^/]+", 0.4)
        await h.server.slash(OWNER, "help")
        await h.first_in(h.server.dm_channel(OWNER), lambda m: "Commands:" in m.content)
        first, second = h.server.calls_to("POST", r"/webhooks/\d+/[^/]+")
        assert (first.status, second.status) == (429, 200) and second.at - first.at >= 0.4 * 0.95

    run_discord(home_bot, scenario)
