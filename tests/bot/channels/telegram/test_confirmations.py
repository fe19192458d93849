"""Write-tool confirmations as inline buttons: bound to the asking user and chat, unguessable,
expiring, and the message shows exactly what will happen and then what was decided."""

from __future__ import annotations

import asyncio

from bot.channels.telegram.buttons import ALREADY, EXPIRED, NOT_YOURS
from tests.bot.agent.conftest import Reply, call
from tests.bot.channels.telegram.conftest import GROUP, OTHER, OWNER, Live
from tests.fakes.telegram_server import StoredMessage

FACT = "user likes red <b>not bold</b> & [a](https://evil.example)"


def remember(text: str) -> Reply:
    return Reply(tool_calls=[call("remember", {"text": text})])


def memory(telegram) -> str:
    return (telegram.home / "workspace" / "MEMORY.md").read_text()


def audit(telegram, tool: str) -> list[tuple[str, str]]:
    return [
        (line["kind"], line.get("outcome", ""))
        for line in telegram.bot.audit_lines()
        if line.get("tool") == tool
    ]


async def confirmation(live: Live, chat_id: int = OWNER) -> StoredMessage:
    return await live.tg.until(lambda: next((m for m in live.tg.chat(chat_id) if m.buttons()), None))


def data(message: StoredMessage, label: str) -> str:
    return next(b["callback_data"] for b in message.buttons() if label in b["text"])


def test_the_prompt_is_shown_verbatim_and_allow_runs_the_write(telegram):
    telegram.bot.llm.enqueue(remember(FACT), Reply(text=["saved"]))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "remember that")
        ask = await confirmation(live)
        assert FACT in ask.text and "<pre>" in ask.raw  # escaped, not rendered: the link stays visible text
        allow = data(ask, "Allow")
        assert len(allow.encode()) <= 64 and len(allow.split(":")[1]) >= 24
        typing = len(live.tg.calls_of("sendChatAction"))
        await asyncio.sleep(1.2)  # typing_interval is 0.5 s in these tests
        assert len(live.tg.calls_of("sendChatAction")) == typing, "no typing while waiting for the user"
        live.tg.press(OWNER, OWNER, ask.message_id, allow)
        await live.tg.until(lambda: "saved" in live.replies())
        edited = live.tg.stored(OWNER, ask.message_id)
        assert edited.text.startswith("✅ Allowed:") and FACT in edited.text and edited.buttons() == []
        assert FACT in memory(telegram)
        assert [a["text"] for a in live.tg.answered.values()] == ["Allowed"]

    telegram.serve(scenario)


def test_a_press_by_another_user_is_refused_and_changes_nothing(telegram):
    telegram.bot.llm.enqueue(remember("user likes red"), Reply(text=["ok"]))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "remember red")
        ask = await confirmation(live)
        live.tg.press(OTHER, OWNER, ask.message_id, data(ask, "Allow"))  # crafted: same data, other user
        await live.tg.until(lambda: len(live.tg.answered) == 1)
        (answer,) = live.tg.answered.values()
        assert answer["text"] == NOT_YOURS and str(answer.get("show_alert")).lower() == "true"
        await asyncio.sleep(
            0.2
        )  # room for the other user's press to change anything: a negative, no event to wait on
        assert live.tg.stored(OWNER, ask.message_id).buttons() and "user likes red" not in memory(telegram)
        live.tg.press(OWNER, OWNER, ask.message_id, data(ask, "Deny"))
        await live.tg.until(lambda: "ok" in live.replies())
        assert live.tg.stored(OWNER, ask.message_id).text.startswith("❌ Denied:")
        assert "user likes red" not in memory(telegram)
        assert ("tool.finished", "declined") in audit(telegram, "remember")

    telegram.serve(scenario)


def test_forged_and_guessed_callback_data_is_refused(telegram):
    telegram.bot.llm.enqueue(remember("user likes red"), Reply(text=["ok"]))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "remember red")
        ask = await confirmation(live)
        token = data(ask, "Allow").split(":")[1]
        other = "x" if token[-1] != "x" else "z"  # a token ending in "x" made this the real one
        for forged in (
            f"cf:{token[:-1]}{other}:y",
            "cf::y",
            f"cf:{token}:",
            f"cf:{token}:yes",
            "cf:" + "A" * 24 + ":y",
            "anything",
        ):
            live.tg.press(OWNER, OWNER, ask.message_id, forged)
        await live.tg.until(lambda: len(live.tg.answered) == 6)
        assert {a["text"] for a in live.tg.answered.values()} == {EXPIRED}
        assert live.tg.stored(OWNER, ask.message_id).buttons() and "user likes red" not in memory(telegram)
        live.tg.press(OWNER, OWNER, ask.message_id, data(ask, "Deny"))
        await live.tg.until(lambda: "ok" in live.replies())

    telegram.serve(scenario)


def test_an_unanswered_confirmation_expires_and_a_late_press_does_nothing(telegram):
    bot_section = telegram.bot.home / "config.yaml"
    import yaml

    config = yaml.safe_load(bot_section.read_text())
    config["bot"]["agent"] = {"confirm_timeout": 0.5}
    bot_section.write_text(yaml.safe_dump(config))
    telegram.bot.llm.enqueue(remember("user likes red"), Reply(text=["ok"]))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "remember red")
        ask = await confirmation(live)
        allow = data(ask, "Allow")
        await live.tg.until(lambda: live.tg.stored(OWNER, ask.message_id).text.startswith("⌛"))
        live.tg.press(OWNER, OWNER, ask.message_id, allow)
        await live.tg.until(lambda: len(live.tg.answered) == 1)
        assert next(iter(live.tg.answered.values()))["text"] == EXPIRED
        assert "user likes red" not in memory(telegram)
        assert ("tool.finished", "declined") in audit(telegram, "remember")

    telegram.serve(scenario)


def test_in_a_group_only_the_asking_member_can_confirm(telegram):
    from bot.config import GroupSettings

    telegram.bot.llm.enqueue(remember("group fact"), Reply(text=["done"]))
    settings = telegram.settings(groups=GroupSettings(enabled=True, allow_chats=(str(GROUP),)))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "@owlia_test_bot remember group fact", chat_id=GROUP, chat_type="group")
        ask = await confirmation(live, GROUP)
        live.tg.press(OTHER, GROUP, ask.message_id, data(ask, "Allow"))  # a real member of the same group
        await live.tg.until(lambda: len(live.tg.answered) == 1)
        assert next(iter(live.tg.answered.values()))["text"] == NOT_YOURS
        assert "group fact" not in memory(telegram)
        live.tg.press(OWNER, GROUP, ask.message_id, data(ask, "Allow"))
        await live.tg.until(lambda: "done" in live.replies(GROUP))
        assert "group fact" in memory(telegram)

    telegram.serve(scenario, settings=settings)


def test_stopping_the_channel_declines_an_open_confirmation(telegram):
    telegram.bot.llm.enqueue(remember("user likes red"), Reply(text=["ok"]))
    seen: dict = {}

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "remember red")
        seen["ask"] = await confirmation(live)

    telegram.serve(scenario, shutdown_grace=0.3)
    ask = telegram.tg.stored(OWNER, seen["ask"].message_id)
    assert ask.text.startswith("⏹ Cancelled") and ask.buttons() == []
    assert "user likes red" not in memory(telegram)


def test_deny_pressed_after_allow_says_it_was_already_allowed(telegram):
    telegram.bot.llm.enqueue(remember("user likes green"), Reply(text=["saved"]))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, "remember that")
        ask = await confirmation(live)
        allow, deny = data(ask, "Allow"), data(ask, "Deny")
        live.tg.press(OWNER, OWNER, ask.message_id, allow)
        await live.tg.until(lambda: "saved" in live.replies())
        live.tg.press(OWNER, OWNER, ask.message_id, deny)  # a second tap, from a keyboard not yet redrawn
        live.tg.press(OTHER, OWNER, ask.message_id, deny)
        await live.tg.until(lambda: len(live.tg.answered) == 3)
        answers = [a["text"] for a in live.tg.answered.values()]
        assert answers[0] == "Allowed" and answers[1] == ALREADY[True] and answers[2] == NOT_YOURS
        assert EXPIRED not in answers and "user likes green" in memory(telegram)

    telegram.serve(scenario)
