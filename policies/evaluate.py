"""The pure evaluator: a decoded request and a ledger snapshot in, a decision out.

Every action yields at least one finding, so nothing can slip through beside an allowed action,
and the decision is the most restrictive finding. No clock, no randomness, no I/O: the audit
log replays decisions from their recorded inputs and must get the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from policies.context import EvalContext, PriceQuote
from policies.decision import Decision, Finding, Outcome, Spend
from policies.decode import TOKEN_SELECTORS
from policies.defi import DefiRules
from policies.intent import (
    NATIVE,
    Approval,
    Claim,
    ContractCall,
    Decoded,
    Flag,
    Forbidden,
    RouterPayout,
    Swap,
    Transfer,
    Wrap,
)
from policies.model import Policy, UsdRule, Window
from policies.units import format_amount, usd_micros

ALLOW, ESCALATE, DENY = Outcome.ALLOW, Outcome.ESCALATE, Outcome.DENY
UNLIMITED = 2**255
HOUR, DAY = 3600, 86400
_OUTCOMES = {o.value: o for o in Outcome}  # a policy setting's word to its outcome (a dict: this is hot)


def _usd(micros: int) -> str:
    return "$" + format_amount(micros, 6, "").strip()


class _Evaluation:
    """One evaluation's working state; split into one method per rule family for readability."""

    def __init__(self, policy: Policy, decoded: Decoded, ctx: EvalContext) -> None:
        self.policy = policy
        self.ix = policy.index
        self.decoded = decoded
        self.ctx = ctx
        self.findings: list[Finding] = []
        self.totals: dict[tuple[int, str], int] = {}
        self.new_recipients: dict[str, None] = {}
        self.spends: list[Spend] = []
        self._texts: dict[
            tuple[int, str, int], str
        ] = {}  # `amount` texts: a transfer's is read again by its limit
        self.defi = DefiRules(self)

    def add(self, outcome: Outcome, rule_id: str, reason: str) -> None:
        self.findings.append(Finding(outcome, rule_id, reason))

    def amount(self, chain_id: int, asset: str, amount: int) -> str:
        key = (chain_id, asset, amount)
        text = self._texts.get(key)
        if text is None:
            info = self.ix.asset_info(chain_id, asset)
            if info is None:
                text = f"{amount} base units of {'the native coin' if asset == NATIVE else asset}"
            else:
                text = format_amount(amount, info[1], info[0])
            self._texts[key] = text
        return text

    # ---- request-wide rules ------------------------------------------------------------------

    def request(self) -> None:
        call, ctx, policy = self.decoded.call, self.ctx, self.policy
        if ctx.frozen:
            self.add(DENY, "signer.frozen", "the signer is frozen: it signs nothing until unfrozen")
        if not self.ix.has_chain(call.chain_id):
            self.add(DENY, "chain.unknown", f"chain {call.chain_id} is not in the policy")
        if not self.decoded.actions:
            self.add(DENY, "request.empty", "the request moves no value and calls nothing")
        for action in self.decoded.actions:
            if isinstance(action, Forbidden):
                self.add(DENY, action.rule_id, action.reason)
        if ctx.session_key_expires_at is None:
            self.add(ESCALATE, "session_key.missing", "no session key is available to sign automatically")
        elif ctx.now >= ctx.session_key_expires_at:
            self.add(ESCALATE, "session_key.expired", "the session key has expired")
        if Flag.FROM_HEARTBEAT in call.flags:
            self._source("source.heartbeat", policy.sources.heartbeat, "a scheduled heartbeat")
        if Flag.FROM_SKILL in call.flags:
            self._source("source.skill", policy.sources.skill, "a skill")

    def _source(self, rule_id: str, setting: str, who: str) -> None:
        if setting == "policy":
            self.add(ALLOW, rule_id, f"requests from {who} follow the same rules as the agent's")
        else:
            self.add(_OUTCOMES[setting], rule_id, f"the policy says to {setting} requests from {who}")

    # ---- per-action rules --------------------------------------------------------------------

    def actions(self) -> None:
        for action in self.decoded.actions:
            if isinstance(action, Transfer):
                self.transfer(action)
            elif isinstance(action, Approval):
                self.approval(action)
            elif isinstance(action, ContractCall):
                self.contract_call(action)
            elif not isinstance(
                action, (Forbidden, Swap, RouterPayout, Wrap, Claim)
            ):  # those: request-wide, `defi`
                self.add(ESCALATE, "default.unmatched", f"no rule covers the action {action!r}")

    def _count(self, chain_id: int, asset: str, amount: int) -> None:
        if amount > 0:
            key = (chain_id, asset)
            self.totals[key] = self.totals.get(key, 0) + amount

    def transfer(self, t: Transfer) -> None:
        if self.defi.transfer(t):
            return
        policy = self.policy
        self._count(t.chain_id, t.asset, t.amount)
        what = f"{self.amount(t.chain_id, t.asset, t.amount)} to {t.recipient}"
        if self.ix.in_address_book(t.chain_id, t.recipient):
            name = self.ix.address_name(t.chain_id, t.recipient)
            self.add(ALLOW, "recipient.known", f"{what}: {name} is in the address book")
            return
        if t.recipient not in self.ctx.seen_recipients:
            self.new_recipients[t.recipient] = None
        imitated = self.ix.lookalike_of(t.chain_id, t.recipient)
        if imitated is not None:
            self.add(
                DENY,
                "recipient.lookalike",
                f"{what}: the address imitates {self.ix.address_name(t.chain_id, imitated)} ({imitated})",
            )
        elif Flag.RECIPIENT_FROM_UNTRUSTED in self.decoded.call.flags:
            self.add(
                _OUTCOMES[policy.recipients.untrusted_provenance],
                "recipient.untrusted_provenance",
                f"{what}: you did not write this recipient yourself (it came from a page, a message, "
                "a tool or the model) and it is not in the address book",
            )
        else:
            self.add(
                _OUTCOMES[policy.recipients.unknown],
                "recipient.new",
                f"{what}: the recipient is not in the address book",
            )

    def approval(self, a: Approval) -> None:
        if a.amount == 0:
            self.add(ALLOW, "approval.revoke", f"{a.method} revokes {a.spender}'s allowance")
            return
        if self.defi.approval(a):
            return
        self._count(a.chain_id, a.asset, a.amount)
        if a.amount >= UNLIMITED:
            known = self.ix.asset_info(a.chain_id, a.asset)
            token = (
                f"{known[0]} ({a.asset})"
                if known
                else f"the token at {a.asset} (not in your policy's assets)"
            )
            self.add(
                DENY,
                "approval.unlimited",
                f"{a.method} would let {a.spender} spend an unlimited amount of {token}",
            )
        if self.ix.is_allowed_spender(a.chain_id, a.spender):
            name = self.ix.address_name(a.chain_id, a.spender)
            self.add(
                ALLOW, "approval.spender_allowed", f"{a.method}: {name} ({a.spender}) is an allowed spender"
            )
            return
        imitated = self.ix.lookalike_of(a.chain_id, a.spender)
        if imitated is not None:
            self.add(
                DENY,
                "approval.spender_lookalike",
                f"{a.method}: spender {a.spender} imitates {self.ix.address_name(a.chain_id, imitated)} "
                f"({imitated})",
            )
        else:
            self.add(
                DENY, "approval.spender_not_allowed", f"{a.method}: {a.spender} is not an allowed spender"
            )

    def contract_call(self, c: ContractCall) -> None:
        call = f"call 0x{c.selector.hex()} on {c.target}"
        if not c.decoded:
            self.opaque_call(c, call)
            return
        if self.defi.contract_call(c):
            return
        if c.selector in TOKEN_SELECTORS and self.ix.is_token(c.chain_id, c.target):
            symbol = self.ix.asset_info(c.chain_id, c.target)[0]  # type: ignore[index]
            self.add(
                ALLOW, "contract.token_call", f"{call}: a {symbol} transfer or approval, checked on its own"
            )
            return
        selectors = self.ix.contract_selectors(c.chain_id, c.target)
        if selectors is None:
            self.add(ESCALATE, "contract.not_allowed", f"{call}: the contract is not in the policy")
        elif c.selector in selectors:
            name = self.ix.address_name(c.chain_id, c.target)
            self.add(ALLOW, "contract.allowed", f"{call}: {name} allows this function")
        else:
            name = self.ix.address_name(c.chain_id, c.target)
            self.add(ESCALATE, "contract.selector_not_allowed", f"{call}: {name} does not list this function")

    def opaque_call(self, c: ContractCall, call: str) -> None:
        """Nothing is signed whose effect the signer did not decode, unless the policy accepts it unseen.

        An allow-listed contract or selector is not enough: its arguments could approve or move
        anything. Only an `opaque_calls` entry for this exact (chain, target, selector) allows it,
        and only up to the native value the entry bounds.
        """
        bound = self.ix.opaque_max_value(c.chain_id, c.target, c.selector)
        if bound is None:
            self.add(
                DENY,
                "decode.opaque",
                f"{call}: the signer does not decode this function, so it cannot tell what it would do; "
                "only a policy entry under opaque_calls can accept it unseen",
            )
        elif c.value > bound:
            self.add(
                DENY,
                "opaque.max_value",
                f"{call}: sends {self.amount(c.chain_id, NATIVE, c.value)}, above the "
                f"{self.amount(c.chain_id, NATIVE, bound)} its opaque_calls entry allows",
            )
        else:
            self.add(
                ALLOW,
                "opaque.allowed",
                f"{call}: the policy accepts this function unseen (opaque_calls), value within its bound",
            )

    # ---- limits ------------------------------------------------------------------------------

    def limits(self) -> None:
        policy, ctx = self.policy, self.ctx
        over = _OUTCOMES[policy.over_limit]
        usd_rule = self.ix.usd
        usd_total, usd_unknown = 0, []
        for (chain_id, asset), total in self.totals.items():
            rule = self.ix.asset_rule(chain_id, asset)
            usd_value = None
            if usd_rule is not None:
                quote: PriceQuote | None = ctx.prices.get((chain_id, asset)) or (rule.price if rule else None)
                if quote is None:
                    usd_unknown.append(self.amount(chain_id, asset, total))
                else:
                    usd_value = usd_micros(total, quote)
                    usd_total += usd_value
            self.spends.append(Spend(chain_id, asset, total, usd_value))
            text = self.amount(chain_id, asset, total)
            if rule is None:
                self.add(
                    ESCALATE, "asset.unknown", f"{text}: the asset is not in the policy, so it has no limits"
                )
                continue
            if rule.per_tx is None and not rule.windows:
                self.add(ESCALATE, "asset.no_limits", f"{text}: the policy sets no limit for {rule.symbol}")
                continue
            within = self.check_limits(
                "limit",
                total,
                rule.per_tx,
                rule.windows,
                lambda seconds: ctx.spent.get((chain_id, asset, seconds), 0),
                lambda amount: self.amount(chain_id, asset, amount),
                over,
            )
            if within:
                self.add(ALLOW, "asset.within_limits", f"{text} is within the {rule.symbol} limits")
        if usd_rule is not None and self.totals:
            self.usd_limits(usd_rule, usd_total, usd_unknown, over)

    def usd_limits(self, rule: UsdRule, total: int, unknown: list[str], over: Outcome) -> None:
        if unknown:
            self.add(
                ESCALATE,
                "usd.price_unknown",
                f"no USD price for {', '.join(unknown)}, so the USD limits cannot be checked",
            )
        within = self.check_limits(
            "usd",
            total,
            rule.per_tx,
            rule.windows,
            lambda seconds: self.ctx.spent_usd.get(seconds, 0),
            _usd,
            over,
        )
        if within and not unknown:
            self.add(ALLOW, "usd.within_limits", f"{_usd(total)} is within the USD limits")

    def check_limits(
        self,
        prefix: str,
        total: int,
        per_tx: int | None,
        windows: Iterable[Window],
        already_in: Callable[[int], int],
        fmt: Callable[[int], str],
        over: Outcome,
    ) -> bool:
        """Per-transaction then rolling-window limits; True when `total` fits all of them."""
        within = True
        if per_tx is not None and total > per_tx:
            within = False
            self.add(
                over, f"{prefix}.per_tx", f"{fmt(total)} exceeds the per-transaction limit of {fmt(per_tx)}"
            )
        for w in windows:
            already = already_in(w.seconds)
            if already + total > w.limit:
                within = False
                self.add(
                    over,
                    f"{prefix}.window.{w.label}",
                    f"{fmt(total)} would exceed the {w.label} limit of {fmt(w.limit)} "
                    f"({fmt(already)} already spent)",
                )
        return within

    def rates(self) -> None:
        rates, ctx = self.policy.rate_limits, self.ctx
        signed = ctx.tx_count.get(HOUR, 0)
        if signed + 1 > rates.tx_per_hour:
            self.add(
                ESCALATE,
                "rate.tx_per_hour",
                f"{signed} transactions were signed in the last hour; the limit is {rates.tx_per_hour}",
            )
        fresh = len(self.new_recipients)
        already = ctx.new_recipients.get(DAY, 0)
        if fresh and already + fresh > rates.new_recipients_per_day:
            self.add(
                ESCALATE,
                "rate.new_recipients_per_day",
                f"{fresh} new recipient(s) after {already} in the last day would exceed the limit of "
                f"{rates.new_recipients_per_day}",
            )

    def decide(self) -> Decision:
        self.request()
        self.actions()
        self.defi.check()
        self.limits()
        self.rates()
        return Decision.from_findings(self.findings, tuple(self.spends), tuple(self.new_recipients))


def evaluate(policy: Policy, decoded: Decoded, ctx: EvalContext) -> Decision:
    """Decide one request. Pure: equal inputs give equal decisions."""
    return _Evaluation(policy, decoded, ctx).decide()
