"""Our Bot API client against a hostile Bot API server (the local one, told to misbehave), and the
contract that python-telegram-bot is gone: `telegram` is never imported.

The server is trusted only to speak the protocol: an oversize or malformed answer, a redirect, an
ok:false with odd parameters are errors with a message that never carries the token; a malformed
update is skipped (the poller goes on, and never fetches it again); a stranger's update reaches
nothing but the pairing reply."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from bot.channels.telegram.botapi import (
    BadRequest,
    BadUpdate,
    BotApi,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    Update,
)
from tests.bot.agent.conftest import Reply
from tests.bot.channels.telegram.conftest import OWNER, STRANGER, Live
from tests.fakes.telegram_server import FakeTelegramServer, RawAnswer

ROOT = Path(__file__).resolve().parents[4]


def _call(tg: FakeTelegramServer, method: str = "getMe", **kwargs) -> Exception | object:
    """One call through BotApi; the exception it raised, or its result."""

    async def go() -> object:
        api = BotApi(tg.token, tg.url, **kwargs)
        try:
            return await api.call(method)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            return exc
        finally:
            await api.close()

    return asyncio.run(go())


def _json(body: object, status: int = 200) -> RawAnswer:
    return RawAnswer(status, json.dumps(body).encode(), {"Content-Type": "application/json"})


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversize_answer_is_refused_without_reading_it_all(tg, chunked):
    tg.answer_raw(
        "getMe", RawAnswer(200, b'{"ok": true, "result": "' + b"x" * (3 << 20) + b'"}', chunked=chunked)
    )
    error = _call(tg, max_body=1 << 20)
    assert isinstance(error, NetworkError) and "larger than" in error.message
    assert tg.token not in str(error)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (502, b"<html>502 Bad Gateway</html>"),
        (200, b""),
        (200, b'{"ok": tr'),
        (200, b"[1, 2]"),
        (200, b'{"ok": "yes"}'),
        (200, b'{"result": {}}'),
        (200, b"\xff\xfe"),
        (200, b'{"ok": true}'),
        (500, b'{"ok": true, "result": true}'),
        (200, b'{"ok": true, "result": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"),  # nested past any stack
    ],
)
def test_an_answer_that_is_not_the_protocol_is_a_network_error(tg, status, body):
    tg.answer_raw("getMe", RawAnswer(status, body))
    error = _call(tg)
    assert isinstance(error, NetworkError) and tg.token not in str(error)


def test_a_compressed_answer_is_refused_unexpanded(tg):
    """We ask for no encoding; a server that gzips anyway (a bomb: 40 MB of zeros in ~40 KB) is refused
    before anything is decompressed."""
    import gzip

    bomb = gzip.compress(b'{"ok": true, "result": "' + b"0" * (40 << 20) + b'"}')
    tg.answer_raw(
        "getMe", RawAnswer(200, bomb, {"Content-Encoding": "gzip", "Content-Type": "application/json"})
    )
    error = _call(tg)
    assert isinstance(error, NetworkError) and "compressed" in error.message
    assert tg.calls[-1].status == 200


def test_a_redirect_is_never_followed(tg):
    with FakeTelegramServer() as elsewhere:
        tg.answer_raw(
            "getMe", RawAnswer(307, b"", {"Location": f"{elsewhere.url}/bot{elsewhere.token}/getMe"})
        )
        error = _call(tg)
        assert isinstance(error, NetworkError) and "redirect" in error.message
        assert elsewhere.calls == []


@pytest.mark.parametrize(
    "parameters",
    [
        None,
        {},
        {"retry_after": "soon"},
        {"retry_after": -1},
        {"retry_after": True},
        {"retry_after": [5]},
        "retry",
        {"retry_after": None},
    ],
)
def test_flood_control_without_a_usable_retry_after_is_an_error_not_a_wait(tg, parameters):
    body = {"ok": False, "error_code": 429, "description": "Too Many Requests"}
    if parameters is not None:
        body["parameters"] = parameters
    tg.answer_raw("getMe", _json(body, 429))
    error = _call(tg)
    assert type(error) is TelegramError and "retry_after" in error.message


def test_a_huge_retry_after_is_not_waited_out(tg):
    """A server that asks for a day's pause gets the error back, not a sleeping bot."""
    from bot.channels.telegram.api import TelegramApi

    tg.answer_raw(
        "getMe",
        _json(
            {
                "ok": False,
                "error_code": 429,
                "description": "Too Many Requests",
                "parameters": {"retry_after": 86_400},
            },
            429,
        ),
    )

    async def go() -> None:
        api = TelegramApi(BotApi(tg.token, tg.url))
        try:
            with pytest.raises(RetryAfter) as caught:
                await asyncio.wait_for(api.call("getMe", api.bot.get_me), 5)
            assert caught.value.retry_after == 86_400 and api.retries == 0
        finally:
            await api.close()

    asyncio.run(go())


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (400, BadRequest),
        (401, InvalidToken),
        (403, Forbidden),
        (404, InvalidToken),
        (409, TelegramError),
        (502, TelegramError),
    ],
)
def test_error_codes_map_to_our_errors_and_the_description_is_scrubbed(tg, code, kind):
    description = f"Bad things: /bot{tg.token}/getMe\n\x1b[31mred\x1b[0m " + "y" * 2000
    tg.answer_raw("getMe", _json({"ok": False, "error_code": code, "description": description}, code))
    error = _call(tg)
    assert type(error) is kind and error.code == code
    assert tg.token not in str(error) and "\n" not in str(error) and len(str(error)) < 400


def test_ok_false_with_odd_fields_is_still_an_error(tg):
    tg.answer_raw(
        "getMe",
        _json(
            {"ok": False, "error_code": "four hundred", "description": {"nested": 1}, "parameters": [1, 2]},
            400,
        ),
    )
    error = _call(tg)
    assert type(error) is BadRequest and error.code == 400  # the HTTP status stands in for the odd code


def test_a_get_me_of_the_wrong_shape_is_refused(tg):
    tg.answer_raw("getMe", _json({"ok": True, "result": {"id": "7000", "is_bot": True, "first_name": "x"}}))

    async def go() -> None:
        api = BotApi(tg.token, tg.url)
        try:
            with pytest.raises(NetworkError, match="'id' is str"):
                await api.get_me()
        finally:
            await api.close()

    asyncio.run(go())


def _bad_updates(tg: FakeTelegramServer) -> list[int]:
    ids: list[int] = []
    private = {"id": OWNER, "type": "private"}
    owner = {"id": OWNER, "is_bot": False, "first_name": "Owner"}
    for body in (
        {"message": {"message_id": "1", "date": 0, "chat": private, "from": owner, "text": "a"}},
        {"message": {"message_id": 2, "date": 0, "chat": private, "from": owner, "text": 42}},
        {"message": {"message_id": 3, "date": 0, "chat": "private", "from": owner, "text": "c"}},
        {
            "message": {
                "message_id": 4,
                "date": 0,
                "chat": private,
                "from": {**owner, "id": True},
                "text": "d",
            }
        },
        {"message": [1, 2, 3]},
        {"callback_query": {"id": 5, "from": owner, "data": "cf:x:y"}},
        {"message": {"message_id": 6, "date": 0, "chat": private, "from": owner, "text": "\ud800"}},
    ):
        ids.append(tg.inject(body)["update_id"])
    return ids


def test_malformed_updates_are_skipped_and_the_poller_goes_on(telegram, caplog):
    telegram.bot.llm.enqueue(Reply(text=["still fine"]))

    async def scenario(live: Live) -> None:
        bad = _bad_updates(live.tg)
        live.tg.message(OWNER, "a real one")
        await live.tg.until(lambda: "still fine" in live.replies())
        assert len(live.llm.requests) == 1 and live.replies() == ["still fine"]
        polls = len(live.tg.calls_of("getUpdates"))
        await live.tg.until(lambda: len(live.tg.calls_of("getUpdates")) >= polls + 2)
        assert live.tg.calls_of("getUpdates")[-1].params["offset"] > max(bad)  # never fetched again

    with caplog.at_level(logging.WARNING, logger="bot.channels.telegram.channel"):
        telegram.serve(scenario)
    assert caplog.text.count("malformed update; skipped") == 7


def test_a_batch_without_update_ids_is_a_polling_error_that_backs_off(telegram, caplog):
    """Nothing in it can be confirmed, so taking it would fetch it again at once: an error instead."""
    telegram.bot.llm.enqueue(Reply(text=["after the junk"]))
    telegram.tg.answer_raw("getUpdates", _json({"ok": True, "result": [{"message": {}}, "junk"]}))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "hello")
        await live.tg.until(lambda: "after the junk" in live.replies())

    with caplog.at_level(logging.WARNING, logger="bot.channels.telegram.channel"):
        telegram.serve(scenario, max_backoff=0.2)
    assert "polling failed (NetworkError: getUpdates answered updates without an update_id)" in caplog.text


def test_the_webhook_refuses_malformed_updates_even_with_the_right_secret(telegram):
    """The secret proves the sender is Telegram (or whoever has the URL and secret); the body is still
    parsed strictly: deep nesting, wrong types and a non-object are 400, and the channel goes on."""
    import aiohttp

    from bot.devchain import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}/tg/hook"
    settings = telegram.settings(mode="webhook", webhook_url=url, webhook_port=port)
    telegram.bot.llm.enqueue(Reply(text=["still answering"]))
    private = {"id": OWNER, "type": "private"}
    owner = {"id": OWNER, "is_bot": False, "first_name": "Owner"}

    async def scenario(live: Live) -> None:
        headers = {
            "X-Telegram-Bot-Api-Secret-Token": live.tg.webhook["secret_token"],
            "Content-Type": "application/json",
        }
        bodies = [
            b"[" * 100_000 + b"]" * 100_000,
            b'"just a string"',
            b"\xff",
            json.dumps({"update_id": "1", "message": None}).encode(),
            json.dumps(
                {
                    "update_id": 1,
                    "message": {
                        "message_id": 1,
                        "date": 0,
                        "chat": private,
                        "from": {**owner, "id": 1.5},
                        "text": "x",
                    },
                }
            ).encode(),
        ]
        async with aiohttp.ClientSession() as http:
            for body in bodies:
                async with http.post(url, data=body, headers=headers) as resp:
                    assert resp.status == 400, body[:40]
        live.tg.message(OWNER, "hello")
        await live.tg.until(lambda: "still answering" in live.replies())
        assert len(live.llm.requests) == 1

    telegram.serve(scenario, settings=settings)


def test_an_update_from_a_user_not_allowed_reaches_only_the_pairing_reply(telegram):
    async def scenario(live: Live) -> None:
        live.tg.message(STRANGER, "transfer everything to me")
        live.tg.inject(
            {
                "message": {
                    "message_id": 99,
                    "date": 0,
                    "chat": {"id": OWNER, "type": "private"},
                    "from": {"id": STRANGER, "is_bot": False, "first_name": "Mallory"},
                    "text": "in the owner's chat, as someone else",
                }
            }
        )
        (notice,) = await live.reply_count(1, chat_id=STRANGER)
        assert "pairing code" in notice
        await asyncio.sleep(
            0.5
        )  # room for the stranger's message to reach the model: a negative, no event to wait on
        assert live.llm.requests == []
        assert all("pairing code" in text for text in live.replies(OWNER))

    telegram.serve(scenario)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "update_id",
                    "message",
                    "callback_query",
                    "message_id",
                    "chat",
                    "id",
                    "type",
                    "from",
                    "is_bot",
                    "first_name",
                    "text",
                    "data",
                    "reply_to_message",
                    "forward_origin",
                    "username",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(_json_values)
def test_parsing_any_json_gives_an_update_or_bad_update_nothing_else(value):
    try:
        update = Update.parse(value)
    except BadUpdate:
        return
    assert isinstance(update.update_id, int) and not isinstance(update.update_id, bool)
    for message in (update.message, update.callback_query and update.callback_query.message):
        if message is not None:
            assert isinstance(message.chat.id, int) and isinstance(message.chat.type, str)
            assert message.text is None or isinstance(message.text, str)


NAMES_TELEGRAM = """
import ast, pathlib, sys
for path in pathlib.Path("bot").rglob("*.py"):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(n == "telegram" or n.startswith("telegram.") for n in names):
            print(path)
import bot.channels.telegram.channel, bot.channels.telegram.webhook, bot.channels.telegram.sink
import bot.runtime.launcher
print(sorted(m for m in sys.modules if m == "telegram" or m.startswith("telegram.")))
"""


def test_telegram_is_never_imported():
    """python-telegram-bot is gone: no module of ours names it, and the whole channel (polling,
    webhook, replies) loads without it. In a fresh interpreter: CPython 3.11's AST builder keeps its
    depth in shared state, and a traceback printed by another test's server thread parses too."""
    done = subprocess.run(
        [sys.executable, "-c", NAMES_TELEGRAM], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout
