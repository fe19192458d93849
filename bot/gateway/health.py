"""Health reporting for the unauthenticated /health endpoint.

/health is the one route anyone on the bound interface can call, so a check may only leak a
yes/no and a short, redacted detail: never an exception message (those carry URLs, paths and
sometimes keys), never more than MAX_DETAIL characters. A check that hangs or crashes is "not
ok", so a wedged signer or provider turns the gateway 503 instead of hanging the probe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from bot.security.redact import redact

MAX_DETAIL = 200
DEFAULT_TIMEOUT = 3.0

HealthCheck = Callable[[], Awaitable["ComponentHealth"]]
HealthFn = Callable[[], Awaitable[Mapping[str, "ComponentHealth"]]]


@dataclass(frozen=True)
class ComponentHealth:
    ok: bool
    detail: str = ""


def combine_checks(checks: Mapping[str, HealthCheck], timeout: float = DEFAULT_TIMEOUT - 0.5) -> HealthFn:
    """Build a gateway health callable that runs per-component checks concurrently.

    Each check gets its own timeout, so one slow component is reported as timed out by name
    while the others still report; the gateway's overall timeout is only the backstop.
    """

    async def run_one(check: HealthCheck) -> ComponentHealth:
        try:
            result = await asyncio.wait_for(check(), timeout)
        except asyncio.TimeoutError:
            return ComponentHealth(False, f"timed out after {timeout:g}s")
        except Exception as exc:  # a failing probe is a finding, not a crash
            return ComponentHealth(False, f"check failed ({type(exc).__name__})")
        if not isinstance(result, ComponentHealth):
            return ComponentHealth(False, "check returned an invalid result")
        return result

    async def run_all() -> Mapping[str, ComponentHealth]:
        names = list(checks)
        results = await asyncio.gather(*(run_one(checks[n]) for n in names))
        return dict(zip(names, results))

    return run_all


Report = dict[str, dict[str, object]]


async def evaluate(health: HealthFn, timeout: float = DEFAULT_TIMEOUT) -> tuple[bool, Report]:
    """Run the health callable and return (all_ok, public component report)."""
    try:
        raw = await asyncio.wait_for(health(), timeout)
    except asyncio.TimeoutError:
        raw = {"health": ComponentHealth(False, f"health check timed out after {timeout:g}s")}
    except Exception as exc:
        raw = {"health": ComponentHealth(False, f"health check failed ({type(exc).__name__})")}
    if not isinstance(raw, Mapping) or not raw:
        raw = {"health": ComponentHealth(False, "health check returned no components")}
    report: Report = {}
    for name, comp in raw.items():
        if not isinstance(comp, ComponentHealth):
            comp = ComponentHealth(False, "invalid component result")
        report[str(name)[:64]] = {"ok": comp.ok is True, "detail": public_detail(comp.detail)}
    return all(c["ok"] for c in report.values()), report


def public_detail(detail: object) -> str:
    """Redact and truncate a detail string; fail closed."""
    text = detail if isinstance(detail, str) else ""
    try:
        redacted = redact(text)
    except Exception:
        return "(detail withheld)"
    if not isinstance(redacted, str):
        return "(detail withheld)"
    return redacted[:MAX_DETAIL]
