"""The pieces with limits, checked exhaustively: routing, intents, confirmation prompts, code blocks,
interaction dedupe memory, and per-client URL rewriting (nothing global is touched)."""

from __future__ import annotations

from types import SimpleNamespace

import discord
import pytest
from discord.gateway import DiscordWebSocket
from discord.http import Route
from hypothesis import example, given, settings, strategies as st

from bot.channels.discord import intents_for
from bot.channels.discord.channel import route
from bot.channels.discord.endpoints import Endpoints
from bot.channels.discord.outlet import LIMIT, code_block
from bot.channels.discord.views import Presses, prompt_messages
from bot.config import DiscordSettings
from bot.tools.base import ContextKind

CHANNELS = st.sampled_from(["1", "2", "3", "555"])


@settings(max_examples=300, deadline=None)
@given(
    enabled=st.booleans(),
    allow=st.lists(CHANNELS, unique=True),
    mention_only=st.booleans(),
    dm=st.booleans(),
    channel=CHANNELS,
    mentioned=st.booleans(),
)
def test_route_admits_exactly_dms_and_configured_guild_mentions(
    enabled, allow, mention_only, dm, channel, mentioned
):
    config = DiscordSettings(guilds={"enabled": enabled, "allow_chats": allow, "mention_only": mention_only})
    where = route(config, dm=dm, channel_id=channel, mentioned=mentioned)
    should = dm or (enabled and channel in allow and (mentioned or not mention_only))
    assert (where is not None) == should
    if where is not None:
        assert (where.kind, where.chat) == ((ContextKind.DM, "") if dm else (ContextKind.GROUP, channel))


@pytest.mark.parametrize(
    "guilds, expected",
    [
        ({}, discord.Intents(dm_messages=True)),
        ({"enabled": True}, discord.Intents(dm_messages=True, guilds=True, guild_messages=True)),
        (
            {"enabled": True, "mention_only": False},
            discord.Intents(dm_messages=True, guilds=True, guild_messages=True, message_content=True),
        ),
    ],
)
def test_intents_are_the_fewest_that_work(guilds, expected):
    assert intents_for(DiscordSettings(guilds=guilds)).value == expected.value


@settings(max_examples=300)
@given(
    st.text(alphabet=st.sampled_from("`~ab\n|*_[]()<>@"), max_size=80)
    | st.lists(st.sampled_from(["`", "``", "```", "a", "\n"]), max_size=30).map("".join)
)
@example("a`````b")
@example("`" * 8)
def test_code_block_cannot_be_closed_or_escaped_from_inside(text):
    block = code_block(text)
    assert block.startswith("```\n") and block.endswith("\n```")
    assert "```" not in block[3:-3]
    assert block[4:-4].replace("\u200b", "") == text.rstrip("\n")


@settings(max_examples=200)
@given(ids=st.lists(st.integers(1, 60), max_size=200), remember=st.integers(1, 20))
def test_interaction_dedupe_never_answers_twice_within_its_memory(ids, remember):
    presses = Presses(remember=remember)
    recent: list[int] = []
    for interaction_id in ids:
        first = presses.fresh(SimpleNamespace(id=interaction_id))
        assert first == (interaction_id not in recent)
        if first:
            recent = (recent + [interaction_id])[-remember:]
        assert len(presses._seen) <= remember


def test_endpoints_rewrite_one_client_and_leave_the_globals_alone():
    base, gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    local = Endpoints("http://127.0.0.1:9/api/v10", "ws://127.0.0.1:9/gateway")
    edit = Route("PATCH", "/channels/{channel_id}/messages/{message_id}", channel_id=1, message_id=2)
    moved = local.rebase(edit)
    assert moved.url == "http://127.0.0.1:9/api/v10/channels/1/messages/2" and moved.channel_id == 1
    assert (
        local.gateway(str(gateway.with_query(v=10, encoding="json")))
        == "ws://127.0.0.1:9/gateway?v=10&encoding=json"
    )
    untouched = Route("GET", "/users/@me")
    assert Endpoints().rebase(untouched) is untouched
    assert Endpoints().gateway("wss://x/?v=10") == "wss://x/?v=10"
    assert (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY) == (base, gateway)


@settings(max_examples=200, deadline=None)
@given(
    prompt=st.text(alphabet=st.sampled_from("ab `\n0x"), min_size=1, max_size=6000),
    requester=st.integers(1, 2**63),
    timeout=st.floats(1, 3600),
)
def test_confirmation_prompts_are_shown_whole_in_messages_that_fit(prompt, requester, timeout):
    before, carrier = prompt_messages(prompt, requester, timeout)
    assert all(len(m) <= LIMIT for m in [*before, carrier])
    shown = "".join(before) if before else carrier
    visible = shown.replace("\u200b", "")
    assert all(word in visible for word in prompt.split())  # nothing of what will happen is cut
    assert f"<@{requester}>" in carrier
