"""Health evaluation: what an unauthenticated caller may see of a component's detail."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from bot.gateway import health
from bot.gateway.health import MAX_DETAIL, ComponentHealth, evaluate, public_detail
from bot.security.redact import redact


def test_details_go_through_the_real_redactor() -> None:
    detail = "upstream error with key sk-ant-api03-" + "Ab3" * 14
    assert public_detail(detail) == redact(detail)[:MAX_DETAIL]
    assert "Ab3Ab3" not in public_detail(detail)


def test_a_failing_redactor_withholds_the_detail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: a redactor that raises or returns something else than text lets nothing through."""

    def broken(text: str) -> str:
        raise RuntimeError(text)

    monkeypatch.setattr(health, "redact", broken)
    assert public_detail("sk-secret") == "(detail withheld)"
    monkeypatch.setattr(health, "redact", lambda text: None)
    assert public_detail("sk-secret") == "(detail withheld)"


def test_details_are_truncated_and_must_be_strings() -> None:
    assert len(public_detail("a" * 5000)) <= MAX_DETAIL
    assert public_detail(b"bytes") == ""  # type: ignore[arg-type]


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
