"""`/new` starts a clean conversation: the model's first request after it holds the user's message and
nothing else: no stored command reply as a first assistant turn, no made-up exchange before it."""

from __future__ import annotations

from bot.agent.convert import to_messages
from bot.llm.types import TextPart
from tests.bot.agent.conftest import Reply


def test_the_first_request_after_new_is_only_the_users_message(bot) -> None:
    bot.llm.enqueue(Reply(text=["Hello."]), Reply(text=["Hi again."]))
    out = bot.chat("hello", "/new", "what can you do?")
    assert "Started a new conversation" in out and "Hi again." in out
    messages = bot.llm.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user"]
    texts = [b["text"] for b in messages[0]["content"] if b["type"] == "text"]
    assert texts[0] == "what can you do?" and texts[1].startswith("(current time: ")
    body = str(messages)
    assert "Started a new conversation" not in body and "conversation continues" not in body
    assert "hello" not in texts


def test_a_history_that_opens_with_a_reply_is_not_given_an_invented_question() -> None:
    from bot.sessions.records import MessageRecord

    records = [
        MessageRecord(id="a", role="assistant", parts=[{"type": "text", "text": "left over"}], ts=0.0),
        MessageRecord(id="b", role="user", parts=[{"type": "text", "text": "hi"}], ts=1.0),
    ]
    messages = to_messages(records)
    assert [m.role for m in messages] == ["user"]
    assert messages[0].parts == (TextPart("hi"),)
