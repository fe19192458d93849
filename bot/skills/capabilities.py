"""What a skill may ask the bot to do for it while one of its tools runs: `core.fetch`, `core.chain`
and `core.sign`. Each is off unless SKILL.md declared it and the user approved it, rate-limited per
call and per minute, and audited whatever the outcome.

* core.fetch goes through the bot's SafeFetcher (SSRF rules, DNS pinning, outbound secret scan)
  with the domain allowlist narrowed to the skill's declared hosts, and never the private networks
  or extra ports the user opened for the bot's own web tools (those are for the user's own nodes).
* core.chain is the bot's read-only chain reader (its method allowlist applies).
* core.sign exists only for tools declared `sign` (so only in a private DM); the intent goes to the
  signer under the same policy as the agent's, with source `skill.<name>`, which the signer flags
  as from_skill (the policy escalates those by default). The skill cannot add or drop flags.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.net.ssrf import FetchError, FetchPolicy
from bot.observability.audit import BotAudit
from bot.security.redact import redact
from bot.tools.base import ContextKind, ToolContext, ToolFailure
from bot.tools.signing import companion_reach, idempotency_key, one_visible_line, outcome_output
from signer.wire.exchange import SignerError
from signer.wire.requests import Intent
from skills_runtime.manifest import ToolDecl
from skills_runtime.process import CallbackDenied
from skills_runtime.store import InstalledSkill

PER_CALL = {"core.fetch": 10, "core.chain": 20, "core.sign": 2}
PER_MINUTE = {"core.fetch": 30, "core.chain": 60, "core.sign": 4}
FETCH_TEXT_LIMIT = 256 * 1024
SKILL_FETCH_PORTS = (80, 443)
_INTENT_KEYS = frozenset(("chain_id", "to", "value", "data", "token_transfer"))


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FetchParams(_Params):
    url: str = Field(max_length=2048)
    method: Literal["GET", "HEAD", "POST"] = "GET"
    body: str | None = Field(default=None, max_length=65536)
    headers: dict[str, str] = Field(default_factory=dict, max_length=16)


class ChainParams(_Params):
    method: str = Field(max_length=64)
    params: list[Any] = Field(default_factory=list, max_length=8)
    chain_id: int | None = Field(default=None, gt=0)


class SignParams(_Params):
    intent: dict[str, Any]
    reason: str = Field(default="", max_length=200)


def skill_fetch_policy(bot: FetchPolicy, hosts: tuple[str, ...]) -> FetchPolicy:
    """The bot's web policy narrowed for a skill: only its declared hosts, public addresses only and
    the default ports, whatever `web.allow_private` / `web.allowed_ports` open for the bot itself."""
    return replace(bot, allow_domains=hosts, allow_private=(), allowed_ports=SKILL_FETCH_PORTS)


@dataclass
class CallState:
    """What one tool call has used so far, and the last signer outcome (shown as the call's card)."""

    used: dict[str, int] = field(default_factory=dict)
    signed: dict[str, Any] | None = None


class Capabilities:
    def __init__(self, audit: BotAudit, fetch_policy: FetchPolicy | None, *, resolve: Any = None) -> None:
        self.audit = audit
        self.fetch_policy = fetch_policy
        self._resolve = resolve
        self._fetchers: dict[str, Any] = {}
        self._windows: dict[tuple[str, str], deque[float]] = {}

    async def close(self) -> None:
        for fetcher in self._fetchers.values():
            await fetcher.close()
        self._fetchers.clear()

    async def handle(
        self,
        ctx: ToolContext,
        skill: InstalledSkill,
        decl: ToolDecl,
        state: CallState,
        method: str,
        params: dict[str, Any],
    ) -> Any:
        """Serve one core.* request; CallbackDenied (audited) for anything refused."""
        detail: dict[str, Any] = {}
        try:
            self._charge(skill.name, method, state)
            if method == "core.fetch":
                result = await self._fetch(skill, FetchParams.model_validate(params), detail)
            elif method == "core.chain":
                result = await self._chain(ctx, skill, ChainParams.model_validate(params), detail)
            else:
                result = await self._sign(ctx, skill, decl, state, SignParams.model_validate(params), detail)
        except ValidationError as exc:
            self._record(skill, decl, method, "invalid", detail)
            raise CallbackDenied(f"{method}: invalid request ({exc.error_count()} problem(s))") from None
        except CallbackDenied as exc:
            self._record(skill, decl, method, "denied", {**detail, "reason": str(exc)})
            raise
        self._record(skill, decl, method, "ok", detail)
        return result

    def _record(
        self, skill: InstalledSkill, decl: ToolDecl, method: str, outcome: str, detail: dict[str, Any]
    ) -> None:
        self.audit.record(
            "skill.callback", skill=skill.name, tool=decl.name, method=method, outcome=outcome, **detail
        )

    def _charge(self, name: str, method: str, state: CallState) -> None:
        used = state.used.get(method, 0)
        if used >= PER_CALL[method]:
            raise CallbackDenied(f"{method}: at most {PER_CALL[method]} per tool call")
        window = self._windows.setdefault((name, method), deque())
        now = time.monotonic()
        while window and now - window[0] > 60:
            window.popleft()
        if len(window) >= PER_MINUTE[method]:
            raise CallbackDenied(f"{method}: rate limit ({PER_MINUTE[method]} per minute) reached")
        window.append(now)
        state.used[method] = used + 1

    def _fetcher(self, skill: InstalledSkill) -> Any:
        from bot.net.fetch import SafeFetcher  # lazy: 109 ms, 11380 KiB

        if self.fetch_policy is None:
            raise CallbackDenied("core.fetch: web access is disabled in the bot's configuration")
        if not skill.manifest.network:
            raise CallbackDenied("core.fetch: this skill declared no network access")
        if skill.name not in self._fetchers:
            policy = skill_fetch_policy(self.fetch_policy, skill.manifest.network)
            self._fetchers[skill.name] = SafeFetcher(policy, resolve=self._resolve)
        return self._fetchers[skill.name]

    async def _fetch(
        self, skill: InstalledSkill, params: FetchParams, detail: dict[str, Any]
    ) -> dict[str, Any]:
        detail["url"] = params.url[:300]
        fetcher = self._fetcher(skill)
        body = params.body.encode() if params.body is not None else None
        try:
            result = await fetcher.fetch(params.url, method=params.method, body=body, headers=params.headers)
        except FetchError as exc:
            raise CallbackDenied(f"core.fetch: {redact(str(exc))}") from None
        detail["status"] = result.status
        text = result.text[:FETCH_TEXT_LIMIT]
        return {
            "status": result.status,
            "content_type": result.content_type,
            "final_url": result.final_url,
            "text": text,
            "truncated": result.truncated or len(result.text) > FETCH_TEXT_LIMIT,
        }

    async def _chain(
        self, ctx: ToolContext, skill: InstalledSkill, params: ChainParams, detail: dict[str, Any]
    ) -> Any:
        detail["rpc"] = params.method
        if not skill.manifest.chain_read:
            raise CallbackDenied("core.chain: this skill did not declare chain_read")
        if ctx.services.chain is None:
            raise CallbackDenied("core.chain: no chain is configured")
        try:
            return await ctx.services.chain.call(
                params.chain_id or ctx.services.default_chain_id, params.method, *params.params
            )
        except ToolFailure as exc:
            raise CallbackDenied(f"core.chain: {exc}") from None

    async def _sign(
        self,
        ctx: ToolContext,
        skill: InstalledSkill,
        decl: ToolDecl,
        state: CallState,
        params: SignParams,
        detail: dict[str, Any],
    ) -> dict[str, Any]:
        if decl.level != "sign":
            raise CallbackDenied("core.sign: only tools declared with level 'sign' may ask for signatures")
        if ctx.kind is not ContextKind.DM:
            raise CallbackDenied("core.sign: signing is only possible in a private chat with the owner")
        extra = sorted(set(params.intent) - _INTENT_KEYS)
        if extra:
            raise CallbackDenied(f"core.sign: the intent may not carry {extra}")
        try:
            Intent.model_validate(params.intent)
        except ValidationError as exc:
            raise CallbackDenied(f"core.sign: invalid intent ({exc.error_count()} problem(s))") from None
        signer = ctx.services.signer
        if signer is None:
            raise CallbackDenied("core.sign: the signer is not configured")
        n = state.used["core.sign"]
        key = idempotency_key(replace(ctx, kind=ContextKind.SKILL, call_id=f"{ctx.call_id}.{skill.name}.{n}"))
        reason = (one_visible_line(f"skill {skill.name}: {params.reason}") or "")[:200]  # as the agent's
        try:
            reply = await signer.sign(
                dict(params.intent), idempotency_key=key, reason=reason, source=f"skill.{skill.name}"
            )
        except SignerError as exc:
            raise CallbackDenied(f"core.sign: the signer refused the request: {exc.message}") from None
        data = dict(outcome_output(reply, await companion_reach(ctx, reply)).data or {})
        detail.update(
            status=data.get("status"), rule_id=data.get("rule_id"), request_id=data.get("request_id")
        )
        ctx.services.events.emit(
            "signer",
            "sign.outcome",
            {
                "status": data.get("status"),
                "source": f"skill.{skill.name}",
                "rule_id": data.get("rule_id"),
                "request_id": data.get("request_id"),
            },
        )
        state.signed = data
        return data
