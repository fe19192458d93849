"""Delivery rules against the local Bot API server: streaming edits, HTML fallback, webhook mode,
a rejected token, and the token file."""

from __future__ import annotations

import asyncio
import itertools
import logging

import aiohttp
import pytest

from bot.channels.telegram import TelegramChannel
from bot.channels.telegram.api import Sent, TelegramApi
from bot.channels.telegram.channel import make_bot
from bot.channels.telegram.sink import TelegramSink
from bot.config import TelegramSettings
from bot.devchain import free_port
from tests.bot.agent.conftest import Reply
from tests.bot.channels.telegram.conftest import OWNER, Live


def test_streaming_edits_one_draft_at_most_once_per_interval(telegram):
    words = [f"word{i} " for i in range(60)]

    async def scenario(live: Live) -> None:
        live.tg.open_chat(OWNER)
        sink = TelegramSink(live.channel.api, live.channel.confirmations, OWNER, OWNER, interval=0.3)
        for word in words:  # about 1.5 s of streaming, a delta every 25 ms
            await sink.text(word)
            await asyncio.sleep(0.025)
        await sink.done("".join(words))
        edits = live.tg.calls_of("editMessageText")
        sends = live.tg.calls_of("sendMessage")
        assert len(sends) == 1, "one draft message, edited in place"
        assert 2 <= len(edits) <= 1.8 / 0.3 + 1
        streamed = edits[:-1]  # the last edit is the final text, sent as soon as the reply is done
        gaps = sorted(b.at - a.at for a, b in itertools.pairwise(streamed))
        assert gaps and gaps[len(gaps) // 2] >= 0.28, gaps  # the median: arrival jitter aside
        span = edits[-2].at - sends[0].at
        assert len(edits) - 1 <= span / 0.3 + 1
        (message,) = live.tg.chat(OWNER)
        assert message.text == "".join(words).strip() and len(message.versions) == len(edits) + 1
        assert all(v.endswith("…") for v in message.versions[:-1])

    telegram.serve(scenario)


def test_a_streamed_agent_reply_ends_as_one_message_with_the_whole_text(telegram):
    telegram.bot.llm.enqueue(Reply(text=[f"part {i}, " for i in range(50)]))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "talk")
        await live.tg.until(lambda: live.replies() and live.replies()[0].endswith("part 49,"))
        assert len(live.tg.chat(OWNER)) == 1

    telegram.serve(scenario)


def test_html_telegram_rejects_is_resent_as_plain_text(tg):
    async def go() -> None:
        tg.open_chat(OWNER)
        api = TelegramApi(make_bot(tg.token, tg.url))
        try:
            sent = await api.send_html(OWNER, "<b>unclosed <i>tags</b>", "plain **fallback**")
            await api.edit_html(sent, "<blink>nope</blink>", "plain edit")
            await api.edit_html(sent, "<b>fine</b>", "unused")
        finally:
            await api.close()
        statuses = [(c.method, c.status, c.params.get("parse_mode")) for c in tg.calls]
        assert statuses == [
            ("sendMessage", 400, "HTML"),
            ("sendMessage", 200, None),
            ("editMessageText", 400, "HTML"),
            ("editMessageText", 200, None),
            ("editMessageText", 200, "HTML"),
        ]
        assert tg.stored(OWNER, sent.message_id).versions == ["plain **fallback**", "plain edit", "fine"]

    asyncio.run(go())


def test_an_identical_edit_and_an_emoji_heavy_text_are_handled(tg):
    async def go() -> None:
        tg.open_chat(OWNER)
        api = TelegramApi(make_bot(tg.token, tg.url))
        try:
            sent = await api.send(OWNER, "same")
            await api.edit(sent, "same")  # Telegram: "message is not modified"; not an error for us
            emoji = "🦉" * 3000  # 3000 chars, 6000 UTF-16 units: over the limit as Telegram counts
            last = await api.send(OWNER, emoji)
        finally:
            await api.close()
        assert isinstance(last, Sent)
        owls = [m.text for m in tg.chat(OWNER)[1:]]
        assert len(owls) == 2 and "".join(owls) == emoji

    asyncio.run(go())


def test_webhook_mode_checks_the_secret_token(telegram):
    port = free_port()
    url = f"http://127.0.0.1:{port}/tg/hook"
    settings = telegram.settings(mode="webhook", webhook_url=url, webhook_port=port)
    telegram.bot.llm.enqueue(Reply(text=["via webhook"]))

    async def scenario(live: Live) -> None:
        hook = live.tg.webhook
        assert hook is not None and hook["url"] == url and len(hook["secret_token"]) >= 32
        forged = {
            "update_id": 1,
            "message": {
                "message_id": 1,
                "date": 0,
                "chat": {"id": OWNER, "type": "private"},
                "from": {"id": OWNER, "is_bot": False, "first_name": "x"},
                "text": "forged",
            },
        }
        async with aiohttp.ClientSession() as http:
            for headers in (
                {},
                {"X-Telegram-Bot-Api-Secret-Token": "wrong"},
                {"X-Telegram-Bot-Api-Secret-Token": hook["secret_token"][:-1]},
            ):
                async with http.post(url, json=forged, headers=headers) as resp:
                    assert resp.status == 401
        live.tg.message(OWNER, "real one")
        await live.tg.until(lambda: "via webhook" in live.replies())
        first = live.llm.requests[0].body["messages"][-1]["content"]
        assert first[0]["text"] == "real one" and first[1]["text"].startswith("(current time: ")
        assert live.tg.calls_of("getUpdates") == []

    telegram.serve(scenario, settings=settings)


def test_a_rejected_token_stops_the_channel_without_leaking_it(tg, caplog):
    async def go() -> None:
        from bot.channels.access import AccessStore

        access = AccessStore(tg_home / "access.sqlite3")
        bad = "999:not-the-right-token-at-all-xyz"
        channel = TelegramChannel(
            None,
            TelegramSettings(api_base=tg.url, allow_from=("1",)),
            bad,  # type: ignore
            access,
        )
        with pytest.raises(Exception) as info:
            await asyncio.wait_for(channel.run(asyncio.Event()), 10)
        assert bad not in str(info.value) and bad not in caplog.text
        access.close()

    import tempfile
    from pathlib import Path

    tg_home = Path(tempfile.mkdtemp())
    with caplog.at_level(logging.DEBUG):
        asyncio.run(go())


def test_a_reply_ready_within_the_hold_goes_out_as_one_message_without_typing(telegram):
    telegram.bot.llm.enqueue(Reply(text=["quick ", "answer"]))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "hi")
        await live.tg.until(lambda: live.replies() == ["quick answer"])
        await asyncio.sleep(
            0.6
        )  # room for a wrong edit or typing action after the send: a negative, no event to wait on
        assert len(live.tg.calls_of("sendMessage")) == 1 and live.tg.calls_of("editMessageText") == []
        assert live.tg.calls_of("sendChatAction") == []

    telegram.serve(scenario, hold=0.5)


def test_polling_survives_server_errors_and_flood_control(telegram):
    telegram.bot.llm.enqueue(Reply(text=["still here"]))

    async def scenario(live: Live) -> None:
        def statuses() -> list[int]:
            return [c.status for c in live.tg.calls if c.method == "getUpdates"]

        await live.tg.until(statuses)  # the first poll is in flight
        live.tg.fail_next("getUpdates", 2, status=502)
        live.tg.fail_next("getUpdates", 1, retry_after=1)
        await live.tg.until(lambda: statuses().count(200) >= 2, 10)  # it ends, the failures, a new poll
        assert statuses()[:5] == [200, 502, 502, 429, 200]
        live.tg.message(OWNER, "are you there?")
        await live.tg.until(lambda: "still here" in live.replies(), 10)

    telegram.serve(scenario, max_backoff=0.2)


def test_request_logs_never_show_the_token(tg, caplog):
    """Every Bot API URL carries the token and httpx logs each request: even with httpx turned up
    to DEBUG, a log line shows `<token>` in its place."""
    httpx_log = logging.getLogger("httpx")
    level = httpx_log.level

    async def go() -> None:
        tg.open_chat(OWNER)
        api = TelegramApi(make_bot(tg.token, tg.url))
        httpx_log.setLevel(logging.DEBUG)
        try:
            await api.send(OWNER, "hello")
        finally:
            await api.close()

    try:
        with caplog.at_level(logging.DEBUG):
            asyncio.run(go())
    finally:
        httpx_log.setLevel(level)
    assert "/bot<token>/sendMessage" in caplog.text
    assert tg.token not in caplog.text
