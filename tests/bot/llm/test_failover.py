"""Failover across real providers (real SDKs, fake server) with persisted cooldowns."""

from __future__ import annotations

import asyncio
import json
import stat

import pytest
from hypothesis import given, strategies as st

from bot.llm.errors import AllProfilesUnavailable, ProfileFailed, StreamInterrupted
from bot.llm.failover import CooldownStore, FailoverRouter, cooldown_seconds
from bot.llm.providers import make_profile
from bot.llm.types import Message, Request, StopReason, TextDelta
from tests.fakes.llm_server import Reply

ANTHROPIC_KEY = "sk-ant-api03-PRIMARYSECRETKEYVALUE"
OPENAI_KEY = "sk-proj-BACKUPSECRETKEYVALUE00"
REQUEST = Request(messages=(Message.user("hi"),), max_tokens=100)


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock():
    return Clock()


@pytest.fixture()
def store(tmp_path):
    return tmp_path / "state" / "llm-cooldowns.json"


def router(server, store, clock) -> FailoverRouter:
    return FailoverRouter(
        [
            make_profile("claude-main", "sonnet", api_key=ANTHROPIC_KEY, base_url=server.url),
            make_profile("openai-backup", "gpt", api_key=OPENAI_KEY, base_url=server.openai_url),
        ],
        store,
        clock=clock,
    )


def complete(r: FailoverRouter, request: Request = REQUEST):
    return asyncio.run(r.complete(request))


def saved(store) -> dict:
    return json.loads(store.read_text())["profiles"]


def test_first_profile_answers_without_fallback(server, store, clock):
    server.enqueue(Reply(text=["hello ", "there"]))
    streamed: list[str] = []
    result = asyncio.run(router(server, store, clock).complete(REQUEST, on_text=streamed.append))
    assert (result.text, result.profile, result.fallback_used) == ("hello there", "claude-main", False)
    assert streamed == ["hello ", "there"]
    assert result.stop_reason is StopReason.END
    assert server.requests[0].body["model"] == "claude-sonnet-5-5"


def test_529_fails_over_and_persists_the_cooldown(server, store, clock):
    server.enqueue(
        Reply(status=529, error_type="overloaded_error", error_message="Overloaded"),
        Reply(text=["from backup"]),
    )
    result = complete(router(server, store, clock))
    assert (result.text, result.profile, result.fallback_used) == ("from backup", "openai-backup", True)
    assert [r.path for r in server.requests] == ["/v1/messages", "/v1/chat/completions"]
    assert saved(store) == {"claude-main": {"failures": 1, "until": clock.now + 60}}
    assert stat.S_IMODE(store.stat().st_mode) == 0o600

    # A restarted bot remembers: the cooling profile is not even tried.
    server.enqueue(Reply(text=["still backup"]))
    again = complete(router(server, store, clock))
    assert again.profile == "openai-backup" and len(server.requests) == 3


def test_429_from_openai_fails_over_to_the_next_profile(server, store, clock):
    r = FailoverRouter(
        [
            make_profile("openai-main", "gpt-mini", api_key=OPENAI_KEY, base_url=server.openai_url),
            make_profile("claude-backup", "haiku", api_key=ANTHROPIC_KEY, base_url=server.url),
        ],
        store,
        clock=clock,
    )
    server.enqueue(Reply(status=429, error_type="rate_limit_exceeded"), Reply(text=["ok"]))
    result = complete(r)
    assert (result.profile, result.fallback_used) == ("claude-backup", True)
    assert saved(store)["openai-main"]["failures"] == 1


def test_cooldown_expires_and_success_resets_the_count(server, store, clock):
    r = router(server, store, clock)
    server.enqueue(Reply(status=529, error_type="overloaded_error"), Reply(text=["b1"]))
    complete(r)
    clock.now += 59
    server.enqueue(Reply(text=["b2"]))
    assert complete(r).profile == "openai-backup"  # still cooling at 59 s

    clock.now += 1  # 60 s: cooldown over, the primary is tried again and fails a second time
    server.enqueue(Reply(status=529, error_type="overloaded_error"), Reply(text=["b3"]))
    complete(r)
    assert saved(store)["claude-main"] == {"failures": 2, "until": clock.now + 300}

    clock.now += 300
    server.enqueue(Reply(text=["primary back"]))
    result = complete(r)
    assert (result.profile, result.fallback_used) == ("claude-main", False)
    assert "claude-main" not in saved(store)  # count reset: the next failure cools for 60 s again


def test_401_fails_at_once_without_trying_others_or_leaking_the_key(server, store, clock):
    server.enqueue(
        Reply(
            status=401, error_type="authentication_error", error_message=f"invalid x-api-key {ANTHROPIC_KEY}"
        ),
        Reply(text=["never"]),
    )
    r = router(server, store, clock)
    with pytest.raises(ProfileFailed) as info:
        complete(r)
    exc = info.value
    assert exc.profile == "claude-main" and "claude-main" in str(exc) and "401" in str(exc)
    assert len(server.requests) == 1 and server.pending == 1
    assert not store.exists()  # a bad key is not a cooldown: it needs the user
    for text in (str(exc), repr(exc), repr(r.profiles), repr(r.profiles[0].provider)):
        assert ANTHROPIC_KEY not in text and OPENAI_KEY not in text and "SECRET" not in text
    assert exc.__cause__ is None


def test_failure_after_text_reached_the_user_does_not_switch_provider(server, store, clock):
    server.enqueue(Reply(text=["Half an ans"], fail_mid_stream="overloaded_error"), Reply(text=["never"]))
    seen: list[str] = []

    async def run():
        async for event in router(server, store, clock).stream(REQUEST):
            if isinstance(event, TextDelta):
                seen.append(event.text)

    with pytest.raises(StreamInterrupted, match="claude-main"):
        asyncio.run(run())
    assert seen == ["Half an ans"] and len(server.requests) == 1
    assert saved(store)["claude-main"]["failures"] == 1  # the next turn starts on the backup


def test_all_profiles_down(server, store, clock):
    server.enqueue(
        Reply(status=529, error_type="overloaded_error"), Reply(status=503, error_type="server_error")
    )
    r = router(server, store, clock)
    with pytest.raises(AllProfilesUnavailable) as info:
        complete(r)
    assert info.value.retry_at == clock.now + 60
    assert "claude-main" in str(info.value) and "openai-backup" in str(info.value)
    with pytest.raises(AllProfilesUnavailable, match="cooling down"):
        complete(r)
    assert len(server.requests) == 2  # nothing tried while every profile cools down


def test_connection_refused_fails_over(server, store, clock):
    r = FailoverRouter(
        [
            make_profile("dead", "openai-compatible/m", api_key="x", base_url="http://127.0.0.1:9/v1"),
            make_profile("live", "openai-compatible/m", api_key="x", base_url=server.openai_url),
        ],
        store,
        clock=clock,
    )
    server.enqueue(Reply(text=["alive"]))
    assert complete(r).profile == "live"
    assert saved(store)["dead"]["failures"] == 1


@given(st.integers(min_value=1, max_value=40))
def test_cooldown_formula(n):
    expected = min(3600, 60 * 5 ** (n - 1))
    assert cooldown_seconds(n) == expected
    assert 60 <= cooldown_seconds(n) <= 3600
    assert cooldown_seconds(n) >= cooldown_seconds(max(1, n - 1))


@given(st.integers(min_value=1, max_value=8))
def test_store_persists_the_nth_cooldown(tmp_path_factory, n):
    path = tmp_path_factory.mktemp("cd") / "cooldowns.json"
    store = CooldownStore(path)
    for _ in range(n):
        until = store.record_failure("p", 1000.0)
    assert until == 1000.0 + min(3600, 60 * 5 ** (n - 1))
    reloaded = CooldownStore(path)
    assert (reloaded.get("p").failures, reloaded.get("p").until) == (n, until)


def test_corrupt_cooldown_file_is_ignored(store):
    store.parent.mkdir(parents=True)
    store.write_text("{not json")
    assert CooldownStore(store).states == {}


def test_profiles_must_be_unique_and_present(server, store, clock):
    profile = make_profile("a", "sonnet", api_key="k", base_url=server.url)
    with pytest.raises(ValueError):
        FailoverRouter([profile, profile], store)
    with pytest.raises(ValueError):
        FailoverRouter([], store)


def test_stream_cut_before_any_output_fails_over(server, store, clock):
    server.enqueue(Reply(truncate=True), Reply(text=["backup answer"]))
    result = complete(router(server, store, clock))
    assert (result.text, result.profile) == ("backup answer", "openai-backup")
    assert saved(store)["claude-main"]["failures"] == 1


def test_stream_cut_after_text_is_an_interruption_not_a_finished_answer(server, store, clock):
    r = FailoverRouter(
        [
            make_profile("openai-main", "gpt", api_key=OPENAI_KEY, base_url=server.openai_url),
            make_profile("claude-backup", "sonnet", api_key=ANTHROPIC_KEY, base_url=server.url),
        ],
        store,
        clock=clock,
    )
    server.enqueue(Reply(text=["The answer is"], truncate=True), Reply(text=["never"]))
    with pytest.raises(StreamInterrupted, match="openai-main"):
        complete(r)
    assert server.pending == 1


def _reset_router(server, store, clock, first: str) -> FailoverRouter:
    main = (
        make_profile("main", "sonnet", api_key=ANTHROPIC_KEY, base_url=server.url)
        if first == "anthropic"
        else make_profile("main", "gpt", api_key=OPENAI_KEY, base_url=server.openai_url)
    )
    backup = make_profile("backup", "sonnet", api_key=ANTHROPIC_KEY, base_url=server.url)
    return FailoverRouter([main, backup], store, clock=clock)


@pytest.mark.parametrize("first", ["anthropic", "openai"])
def test_a_connection_reset_after_text_is_an_interruption_not_a_crash(server, store, clock, first):
    """A dropped connection (TCP reset) mid-answer: never spliced onto another model's answer."""
    server.enqueue(Reply(text=["The answer is"], truncate=True, reset=True), Reply(text=["never"]))
    with pytest.raises(StreamInterrupted, match="main"):
        complete(_reset_router(server, store, clock, first))
    assert server.pending == 1


@pytest.mark.parametrize("first", ["anthropic", "openai"])
def test_a_connection_reset_before_any_text_fails_over(server, store, clock, first):
    server.enqueue(Reply(truncate=True, reset=True), Reply(text=["backup answer"]))
    result = complete(_reset_router(server, store, clock, first))
    assert (result.text, result.profile) == ("backup answer", "backup")
    assert saved(store)["main"]["failures"] == 1
