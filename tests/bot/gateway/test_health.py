"""Health evaluation: what an unauthenticated caller may see of a component's detail."""

from __future__ import annotations

import asyncio
import importlib
import sys
import types
from collections.abc import Mapping

import pytest

from bot.gateway.health import MAX_DETAIL, ComponentHealth, evaluate, public_detail


def _with_redactor(monkeypatch: pytest.MonkeyPatch, redact) -> None:
    module = types.ModuleType("bot.security.redact")
    module.redact = redact  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bot.security.redact", module)


def test_details_go_through_the_redactor(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_redactor(monkeypatch, lambda text: text.replace("sk-secret", "[REDACTED]"))
    assert public_detail("provider said sk-secret") == "provider said [REDACTED]"


def test_a_failing_redactor_withholds_the_detail(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str) -> str:
        raise RuntimeError(text)

    _with_redactor(monkeypatch, broken)
    assert public_detail("sk-secret") == "(detail withheld)"
    _with_redactor(monkeypatch, lambda text: None)
    assert public_detail("sk-secret") == "(detail withheld)"


def test_details_are_truncated_and_must_be_strings() -> None:
    assert len(public_detail("a" * 5000)) <= MAX_DETAIL
    assert public_detail(b"bytes") == ""  # type: ignore[arg-type]


def test_real_redactor_is_used_when_present() -> None:
    try:
        real = importlib.import_module("bot.security.redact")
        redact = real.redact
    except (ImportError, AttributeError):
        pytest.skip("bot.security.redact is not available yet")
    detail = "upstream error with key sk-ant-api03-" + "Ab3" * 14
    assert public_detail(detail) == redact(detail)[:MAX_DETAIL]
    assert "Ab3Ab3" not in public_detail(detail)


def test_malformed_health_results_are_not_ok() -> None:
    async def empty() -> Mapping[str, ComponentHealth]:
        return {}

    async def wrong_types() -> Mapping[str, ComponentHealth]:
        return {"bot": {"ok": True}, "signer": ComponentHealth(ok="yes")}  # type: ignore[dict-item,arg-type]

    async def raises() -> Mapping[str, ComponentHealth]:
        raise RuntimeError("secret in message")

    ok, report = asyncio.run(evaluate(empty))
    assert not ok and report["health"]["ok"] is False
    ok, report = asyncio.run(evaluate(wrong_types))
    assert not ok and report["bot"]["ok"] is False and report["signer"]["ok"] is False
    ok, report = asyncio.run(evaluate(raises))
    assert not ok and "secret" not in str(report)
