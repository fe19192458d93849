"""The streaming draft: one message edited at most once per interval, then the final text."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings, strategies as st

from bot.channels.draft import StreamingDraft


class Chat:
    """Records what a platform would show, with the clock time of each call."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.messages: dict[int, str] = {}
        self.calls: list[tuple[str, float]] = []

    async def send(self, text: str) -> int:
        handle = len(self.messages) + 1
        self.messages[handle] = text
        self.calls.append(("send", self.clock[0]))
        return handle

    async def edit(self, handle: int, text: str) -> None:
        self.messages[handle] = text
        self.calls.append(("edit", self.clock[0]))


def drive(deltas: list[tuple[float, str]], final: str, *, interval: float = 1.0, limit: int = 100):
    clock = [0.0]
    chat = Chat(clock)
    draft = StreamingDraft(chat.send, chat.edit, interval=interval, limit=limit, clock=lambda: clock[0])

    async def run() -> list[int]:
        for at, delta in deltas:
            clock[0] = at
            await draft.append(delta)
        return await draft.finish(final)

    return chat, draft, asyncio.run(run())


def test_first_delta_sends_then_edits_are_throttled() -> None:
    deltas = [(0.1 * i, f"w{i} ") for i in range(30)]  # 3 seconds of words, 10 per second
    chat, draft, handles = drive(deltas, "final answer")
    edit_times = [t for kind, t in chat.calls if kind == "edit"]
    assert chat.calls[0] == ("send", 0.0)
    stream_edits = edit_times[:-1]
    assert all(b - a >= 1.0 for a, b in zip(stream_edits, stream_edits[1:]))
    assert 2 <= len(stream_edits) <= 3
    assert chat.messages == {1: "final answer"} and handles == [1]


def test_long_final_text_continues_in_new_messages() -> None:
    final = "\n".join(f"line {i}" for i in range(40))
    chat, _, handles = drive([(0.0, "thinking")], final, limit=60)
    assert len(handles) > 1 and handles[0] == 1
    assert "\n".join(chat.messages[h] for h in handles).splitlines() == final.splitlines()
    assert all(len(text) <= 60 for text in chat.messages.values())


def test_no_stream_sends_only_the_final_text() -> None:
    chat, draft, handles = drive([], "just this")
    assert chat.calls == [("send", 0.0)] and draft.edits == 0 and chat.messages == {1: "just this"}


def test_preview_never_exceeds_the_limit() -> None:
    shown: list[str] = []
    clock = [0.0]
    chat = Chat(clock)

    async def send(text: str) -> int:
        shown.append(text)
        return await chat.send(text)

    async def edit(handle: int, text: str) -> None:
        shown.append(text)
        await chat.edit(handle, text)

    async def run() -> None:
        draft = StreamingDraft(send, edit, interval=1.0, limit=50, clock=lambda: clock[0])
        await draft.append("x" * 30)
        clock[0] = 2.0
        await draft.append("y" * 500)
        await draft.finish("done")

    asyncio.run(run())
    assert len(shown) == 3 and "y" in shown[1]
    assert all(len(text) <= 50 for text in shown)
    assert chat.messages[1] == "done"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(min_value=0, max_value=0.5), st.text(min_size=1, max_size=20)), max_size=60),
    st.floats(min_value=0.2, max_value=2.0),
)
def test_streaming_edits_respect_the_interval(steps: list[tuple[float, str]], interval: float) -> None:
    at, deltas = 0.0, []
    for gap, text in steps:
        at += gap
        deltas.append((at, text))
    chat, _, _ = drive(deltas, "end", interval=interval)
    times = [t for kind, t in chat.calls]
    stream = times[:-1] if len(times) > 1 else times  # the final edit may follow at once
    assert all(b - a >= interval for a, b in zip(stream, stream[1:]))
