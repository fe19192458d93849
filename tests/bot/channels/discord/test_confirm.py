"""Button confirmations for `write` tools: bound to the requester, expiring, showing exactly what
will happen; presses by anyone else are refused and change nothing; /cancel stops a run."""

from __future__ import annotations

import re

from tests.bot.agent.conftest import Reply, call, default_bot_section
from tests.bot.channels.discord.conftest import FRIEND_USER, GUILD, OWNER, ROOM, STRANGER_USER, run_discord
from tests.fakes.discord_server import Stored

GUILDS = {"guilds": {"enabled": True, "allow_chats": [str(ROOM)], "mention_only": True}}
NOTE = "The owner drinks green tea."


def memory(bot) -> str:
    return (bot.home / "workspace" / "MEMORY.md").read_text()


async def confirmation(h, channel_id: int) -> Stored:
    return await h.first_in(channel_id, lambda m: m.components)


def test_a_press_by_another_user_is_refused_and_only_the_requester_decides(home_bot):
    home_bot.llm.enqueue(Reply(tool_calls=[call("remember", {"text": NOTE})]), Reply(text=["Saved it."]))

    async def scenario(h):
        server = h.server
        await server.guild_message(
            OWNER, "remember that I drink green tea", guild_id=GUILD, channel_id=ROOM, mention=True
        )
        prompt = await confirmation(h, ROOM)
        assert NOTE in prompt.content and "Append to MEMORY.md" in prompt.content
        assert f"Only <@{OWNER}> can answer" in prompt.content
        allow, deny = (b["custom_id"] for b in server.buttons(prompt))
        assert len(allow) > 40 and allow.rsplit(":", 1)[0] == deny.rsplit(":", 1)[0]
        for intruder in (FRIEND_USER, STRANGER_USER):
            press = await server.press(intruder, prompt, allow, guild_id=GUILD)
            refusal = await h.response_to(press)
            assert refusal[0]["type"] == 4 and refusal[0]["data"]["flags"] & 64  # ephemeral, to them only
            assert "not yours" in refusal[0]["data"]["content"]
        assert prompt.versions == [prompt.content] and prompt.components and NOTE not in memory(home_bot)
        press = await server.press(OWNER, prompt, allow, guild_id=GUILD)
        answer = await h.response_to(press)
        assert answer[0]["type"] == 7 and "Allowed" in answer[0]["data"]["content"]
        assert prompt.components == []  # buttons gone: it cannot be answered twice
        await server.wait_for(lambda: any(m.content == "Saved it." for m in server.sent_to(ROOM)))
        await server.redeliver(press)  # the same press again: no second answer
        late = await server.press(OWNER, prompt, deny, guild_id=GUILD)  # a new press on the closed prompt
        assert (await h.response_to(late))[0]["data"]["content"] == "This confirmation is already closed."
        assert len(server.interaction_responses[int(press["d"]["id"])]) == 1
        assert not [c for c in server.calls if "/callback" in c.path and c.status != 200]

    run_discord(home_bot, scenario, **GUILDS)
    assert NOTE in memory(home_bot)


def test_an_unanswered_confirmation_expires_as_not_allowed(home_bot):
    home_bot.configure(default_bot_section(home_bot.llm, agent={"confirm_timeout": 0.6}))
    home_bot.llm.enqueue(Reply(tool_calls=[call("remember", {"text": NOTE})]), Reply(text=["Not saved."]))

    async def scenario(h):
        await h.server.dm(OWNER, "remember that I drink green tea")
        prompt = await confirmation(h, h.server.dm_channel(OWNER))
        await h.server.wait_for(lambda: "Expired" in prompt.content)
        assert prompt.components == []
        await h.server.wait_for(lambda: any(m.content == "Not saved." for m in h.dm_messages()))

    run_discord(home_bot, scenario)
    assert NOTE not in memory(home_bot)
    assert "the user declined (or did not answer)" in str(home_bot.llm.requests[1].body["messages"])


def test_cancel_stops_the_run_and_closes_its_confirmation(home_bot):
    home_bot.llm.enqueue(Reply(tool_calls=[call("remember", {"text": NOTE})]), Reply(text=["Fresh start."]))

    async def scenario(h):
        dm = h.server.dm_channel(OWNER)
        await h.server.dm(OWNER, "remember that I drink green tea")
        prompt = await confirmation(h, dm)
        await h.server.dm(OWNER, "/cancel")
        await h.server.wait_for(lambda: "Cancelled: not allowed" in prompt.content)
        await h.first_in(dm, lambda m: m.content == "Stopped.")
        assert [m.content for m in h.dm_messages()].count("Stopped.") == 1  # one message, not two
        assert prompt.components == []
        await h.server.dm(OWNER, "/cancel")
        await h.first_in(dm, lambda m: m.content == "Nothing is running.")
        await h.server.dm(OWNER, "hello again")  # the session still works after the interruption
        await h.server.wait_for(lambda: any(m.content == "Fresh start." for m in h.dm_messages()))

    run_discord(home_bot, scenario)
    assert NOTE not in memory(home_bot) and len(home_bot.llm.requests) == 2


def test_a_prompt_too_long_for_one_message_is_shown_whole_before_the_buttons(home_bot):
    long_note = " ".join(f"fact{i}" for i in range(500))  # ~4400 chars: three messages' worth
    home_bot.llm.enqueue(Reply(tool_calls=[call("remember", {"text": long_note})]), Reply(text=["Saved."]))

    async def scenario(h):
        dm = h.server.dm_channel(OWNER)
        await h.server.dm(OWNER, "remember all of these facts")
        prompt = await confirmation(h, dm)
        shown = [m.content for m in h.server.sent_to(dm) if m.id < prompt.id]
        assert len(shown) >= 3 and all(len(text) <= 2000 for text in shown)
        assert all(text.count("```") == 2 for text in shown)  # each part is a closed code block
        assert re.findall(r"fact\d+", " ".join(shown)) == [f"fact{i}" for i in range(500)]  # all, in order
        assert "shown in full above" in prompt.content
        press = await h.server.press(OWNER, prompt, h.server.buttons(prompt)[0]["custom_id"])
        await h.response_to(press)
        await h.server.wait_for(lambda: any(m.content == "Saved." for m in h.dm_messages()))

    run_discord(home_bot, scenario)
    assert long_note in memory(home_bot)


def test_a_flood_behind_a_waiting_run_is_capped_and_the_rest_run_in_order(home_bot):
    home_bot.llm.enqueue(
        Reply(tool_calls=[call("remember", {"text": NOTE})]),
        Reply(text=["Saved."]),
        *(Reply(text=[f"answer {i}"]) for i in range(3)),
    )

    async def scenario(h):
        dm = h.server.dm_channel(OWNER)
        await h.server.dm(OWNER, "remember that I drink green tea")
        prompt = await confirmation(h, dm)  # the run holds the chat until this is answered
        for i in range(6):
            await h.server.dm(OWNER, f"question {i}")
        await h.server.dm(FRIEND_USER, "/help")  # a barrier: the six were dispatched before it
        await h.first_in(h.server.dm_channel(FRIEND_USER), lambda m: "Commands:" in m.content)
        press = await h.server.press(OWNER, prompt, h.server.buttons(prompt)[0]["custom_id"])
        await h.response_to(press)
        await h.first_in(dm, lambda m: m.content == "answer 2")
        assert [m.content for m in h.dm_messages() if m.content.startswith(("Saved", "answer"))] == [
            "Saved.",
            "answer 0",
            "answer 1",
            "answer 2",
        ]
        told = [m for m in h.dm_messages() if "so I dropped the ones after them" in m.content]
        assert len(told) == 1  # told once per flood, not once per dropped message

    run_discord(home_bot, scenario, channel_options={"max_waiting": 3})
    asked = [str(r.body["messages"][-1]) for r in home_bot.llm.requests[2:]]
    assert len(asked) == 3 and all(f"question {i}" in asked[i] for i in range(3))  # 3, 4 and 5 were dropped


def test_stopping_cancels_an_open_confirmation_after_the_grace_period(home_bot):
    home_bot.llm.enqueue(Reply(tool_calls=[call("remember", {"text": NOTE})]))
    seen = {}

    async def scenario(h):
        await h.server.dm(OWNER, "remember that I drink green tea")
        seen["prompt"] = await confirmation(h, h.server.dm_channel(OWNER))

    run_discord(home_bot, scenario, channel_options={"shutdown_grace": 0.2})
    assert "Cancelled: not allowed" in seen["prompt"].content and seen["prompt"].components == []
    assert NOTE not in memory(home_bot)


def test_a_press_that_beats_the_send_response_still_counts(home_bot):
    home_bot.llm.enqueue(Reply(tool_calls=[call("remember", {"text": NOTE})]), Reply(text=["Saved."]))

    async def scenario(h):
        async def press_at_once(message: Stored) -> None:
            if message.components:  # the gateway delivers the press before the POST is answered
                await h.server.press(OWNER, message, h.server.buttons(message)[0]["custom_id"])

        h.server.on_create = press_at_once
        await h.server.dm(OWNER, "remember that I drink green tea")
        await h.first_in(h.server.dm_channel(OWNER), lambda m: m.content == "Saved.")
        [answer] = next(iter(h.server.interaction_responses.values()))
        assert answer["type"] == 7 and "Allowed" in answer["data"]["content"]

    run_discord(home_bot, scenario)
    assert NOTE in memory(home_bot)
