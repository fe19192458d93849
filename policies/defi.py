"""Swap, wrap and unwrap rules: what the evaluator checks for each decoded DeFi action (docs/defi.md).

Every number they compare comes from the request's bytes, the policy, or the context the signer
filled from the chain itself (its own quote, read from every configured endpoint, and the node's
simulation): nothing from the bot. Each rule can only add a finding, so a swap is allowed only when
every rule allows it, and a missing input (no quote, no price, no payer) asks the owner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policies.context import PriceQuote, QuoteKey
from policies.decision import Outcome
from policies.intent import NATIVE, Approval, Claim, ContractCall, RouterPayout, Swap, Transfer, Wrap
from policies.units import usd_micros

if TYPE_CHECKING:
    from policies.evaluate import _Evaluation
    from policies.model import SwapIndex

ALLOW, ESCALATE, DENY = Outcome.ALLOW, Outcome.ESCALATE, Outcome.DENY
BPS = 10_000
UNLIMITED = 2**255

ROUTER_SELECTORS = frozenset(
    bytes.fromhex(s)
    for s in (
        "414bf389",  # exactInputSingle(...)
        "ac9650d8",  # multicall(bytes[])
        "49404b7c",  # unwrapWETH9(uint256,address)
        "df2ab5bb",  # sweepToken(address,uint256,address)
        "12210e8a",  # refundETH()
    )
)
WETH_SELECTORS = frozenset(bytes.fromhex(s) for s in ("d0e30db0", "2e1a7d4d"))  # deposit(), withdraw(uint256)
CLAIM = bytes.fromhex("2e7ba6ef")  # claim(uint256,address,uint256,bytes32[])


def quote_key(chain_id: int, quoter: str, swap: Swap) -> QuoteKey:
    return (chain_id, quoter, swap.token_in, swap.token_out, swap.fee, swap.amount_in)


def min_out_bound(quote: int, slippage_bps: int) -> int:
    """The least a swap may accept: the quote less `slippage_bps`, rounded up (never below the bound)."""
    return quote - quote * slippage_bps // BPS


class DefiRules:
    """The DeFi part of one evaluation; `ev` holds the findings, totals and formatting."""

    def __init__(self, ev: _Evaluation) -> None:
        self.ev = ev
        self.rules: SwapIndex | None = ev.ix.swaps
        self.native_to: dict[tuple[int, str], int] = {}  # ETH the request sends a router or a WETH

    # ---- hooks the evaluator calls first; True means "handled here" ---------------------------

    def transfer(self, t: Transfer) -> bool:
        """ETH sent to a listed router or WETH pays a swap or a wrap: counted like a transfer of it,
        matched against what the swap or wrap consumes in `check`."""
        if self.rules is None or t.asset != NATIVE:
            return False
        key = (t.chain_id, t.recipient)
        if key not in self.rules.routers and key not in self.rules.wethers:
            return False
        self.ev._count(t.chain_id, NATIVE, t.amount)
        self.native_to[key] = self.native_to.get(key, 0) + t.amount
        return True

    def approval(self, a: Approval) -> bool:
        """An approval to a listed router: only the payer's own calls can spend it (the router pulls
        from msg.sender), so the swap counts, not the approval; still at most one transaction's limit."""
        if self.rules is None or (a.chain_id, a.spender) not in self.rules.routers or a.amount == 0:
            return False
        if a.amount >= UNLIMITED:  # denied as any unlimited approval is
            return False
        ev = self.ev
        rule = ev.ix.asset_rule(a.chain_id, a.asset)
        router = ev.ix.address_name(a.chain_id, a.spender)
        what = f"{a.method} of {ev.amount(a.chain_id, a.asset, a.amount)} to {router} ({a.spender})"
        if rule is None or rule.per_tx is None:
            ev.add(
                ESCALATE,
                "approval.router_no_limit",
                f"{what}: the token has no per-transaction limit to bound it",
            )
        elif a.amount > rule.per_tx:
            ev.add(
                ESCALATE,
                "approval.router_above_swap",
                f"{what}: more than one swap may take (the per-transaction limit is "
                f"{ev.amount(a.chain_id, a.asset, rule.per_tx)})",
            )
        else:
            ev.add(ALLOW, "approval.swap_router", f"{what}: a listed router, for at most one swap's amount")
        return True

    def contract_call(self, c: ContractCall) -> bool:
        key = (c.chain_id, c.target)
        if c.selector == CLAIM and key in (self.ev.ix.distributors or {}):
            self.ev.add(ALLOW, "claim.distributor_call", "a listed distributor's claim, checked below")
            return True
        if self.rules is None:
            return False
        if key in self.rules.routers and c.selector in ROUTER_SELECTORS:
            self.ev.add(
                ALLOW, "swap.router_call", f"a {self.rules.routers[key].name} function, checked below"
            )
            return True
        if key in self.rules.wethers and c.selector in WETH_SELECTORS:
            self.ev.add(ALLOW, "wrap.weth_call", "a WETH wrap or unwrap, checked below")
            return True
        return False

    # ---- the actions themselves ---------------------------------------------------------------

    def check(self) -> None:
        decoded = self.ev.decoded
        swaps, payouts, wraps = [], [], []
        claims = [a for a in decoded.actions if isinstance(a, Claim)]
        for c in claims:
            self.claim(c)
        for action in decoded.actions:
            if isinstance(action, Swap):
                swaps.append(action)
            elif isinstance(action, RouterPayout):
                payouts.append(action)
            elif isinstance(action, Wrap):
                wraps.append(action)
        if not (swaps or payouts or wraps):
            if claims:
                self.simulation([], set())
            return
        if self.rules is None:
            for _ in swaps + payouts:
                self.ev.add(
                    DENY, "swap.not_configured", "the policy has no swaps section, so nothing is swapped"
                )
            for w in wraps:  # a vault's deposit()/withdraw(): its contract-call rule decides
                self.ev.add(
                    ALLOW, "wrap.not_weth", f"not a listed WETH ({w.contract}): checked as a contract call"
                )
            return
        paid_in_eth = self._value_matches(swaps, wraps)
        for s in swaps:
            self.swap(s, paid_in_eth, payouts)
        for p in payouts:
            self.payout(p)
        for w in wraps:
            self.wrap(w)
        self.simulation(swaps, paid_in_eth)

    def _value_matches(self, swaps: list[Swap], wraps: list[Wrap]) -> set[tuple[int, str]]:
        """ETH sent to a router must equal exactly the WETH its swaps take in: more would stay in the
        router for anyone to take (refundETH pays whoever calls it). Returns the routers paid in ETH."""
        ev, rules = self.ev, self.rules
        assert rules is not None
        paid: set[tuple[int, str]] = set()
        for (chain_id, target), sent in self.native_to.items():
            if (chain_id, target) in rules.routers:
                weth = rules.routers[(chain_id, target)].weth
                wanted = sum(s.amount_in for s in swaps if s.router == target and s.token_in == weth)
                if sent != wanted:
                    ev.add(
                        DENY,
                        "swap.value_mismatch",
                        f"sends {ev.amount(chain_id, NATIVE, sent)} to the router, but its swaps take "
                        f"{ev.amount(chain_id, NATIVE, wanted)} of ETH in: the rest would be left for anyone",
                    )
                else:
                    ev.add(
                        ALLOW,
                        "swap.pays_router",
                        f"{ev.amount(chain_id, NATIVE, sent)} pays the swap's input",
                    )
                    paid.add((chain_id, target))
            else:
                wanted = sum(w.amount for w in wraps if w.contract == target and not w.unwrap)
                if sent != wanted:  # cannot happen for deposit() (it reads the value), kept as a guard
                    ev.add(DENY, "wrap.value_mismatch", f"sends ETH to WETH {target} outside a deposit")
        return paid

    def swap(self, s: Swap, paid_in_eth: set[tuple[int, str]], payouts: list[RouterPayout]) -> None:
        ev, rules, ctx, chain = self.ev, self.rules, self.ev.ctx, s.chain_id
        assert rules is not None
        router = rules.routers.get((chain, s.router))
        if router is None:
            imitated = ev.ix.lookalike_of(chain, s.router)
            if imitated is not None:
                ev.add(
                    DENY,
                    "swap.router_lookalike",
                    f"swap through {s.router}, which imitates {ev.ix.address_name(chain, imitated)} ({imitated})",
                )
            else:
                ev.add(
                    DENY,
                    "swap.router_not_listed",
                    f"swap through {s.router}, which is not a router in the policy",
                )
            return
        eth_in = (chain, s.router) in paid_in_eth and s.token_in == router.weth
        asset_in = NATIVE if eth_in else s.token_in
        unwraps = any(p.router == s.router and p.method == "unwrapWETH9" for p in payouts)
        eth_out = s.recipient == s.router and s.token_out == router.weth and unwraps
        asset_out = NATIVE if eth_out else s.token_out
        if not eth_in:
            ev._count(chain, s.token_in, s.amount_in)  # the router pulls it from the payer
        text_in = ev.amount(chain, asset_in, s.amount_in)
        text_out = ev.amount(chain, asset_out, s.amount_out_min)
        what = f"swap of {text_in} for at least {text_out} via {router.name}"
        ok = True
        if (chain, asset_in) not in rules.tokens_in:
            ok = False
            ev.add(
                DENY,
                "swap.token_in_not_listed",
                f"{what}: {self._token_words(chain, asset_in)} "
                "is not a token the policy lets the agent swap from",
            )
        if (chain, asset_out) not in rules.tokens_out:
            ok = False
            ev.add(
                DENY,
                "swap.token_out_not_listed",
                f"{what}: {self._token_words(chain, asset_out)} "
                "is not a token the policy lets the agent swap to",
            )
        if ctx.payer is None:
            ok = False
            ev.add(
                ESCALATE,
                "swap.payer_unknown",
                f"{what}: no session key pays it, so the output has no checked home",
            )
        elif not (s.recipient == ctx.payer or eth_out):
            ok = False
            ev.add(
                DENY,
                "swap.recipient",
                f"{what}: the output goes to {s.recipient}, not to the account that pays ({ctx.payer})",
            )
        if not ctx.now < s.deadline <= ctx.now + rules.max_deadline_seconds:
            ok = False
            ev.add(
                DENY,
                "swap.deadline",
                f"{what}: the deadline must be set and within "
                f"{rules.max_deadline_seconds} seconds (it is {s.deadline - int(ctx.now)} seconds from now)",
            )
        if s.sqrt_price_limit != 0:
            ok = False
            ev.add(
                DENY, "swap.price_limit", f"{what}: a price limit could leave part of the input in the router"
            )
        ok = self._quote(s, router.quoter, what, asset_out) and ok
        ok = self._prices(s, asset_in, asset_out, what) and ok
        if ok:
            ev.add(
                ALLOW,
                "swap.checked",
                f"{what}: listed tokens, output to the paying account, minimum within "
                f"{rules.max_slippage_bps / 100:g}% of the signer's own quote",
            )

    def _quote(self, s: Swap, quoter: str, what: str, asset_out: str) -> bool:
        ev, rules = self.ev, self.rules
        assert rules is not None
        quote = ev.ctx.swap_quotes.get(quote_key(s.chain_id, quoter, s))
        if quote is None:
            ev.add(
                ESCALATE,
                "swap.quote_unavailable",
                f"{what}: the signer could not read its own quote from the chain (or its endpoints disagree)",
            )
            return False
        bound = min_out_bound(quote, rules.max_slippage_bps)
        if s.amount_out_min < bound:
            ev.add(
                DENY,
                "swap.min_out",
                f"{what}: the signer's own quote is {ev.amount(s.chain_id, asset_out, quote)}, so the minimum may "
                f"be no less than {ev.amount(s.chain_id, asset_out, bound)} (max_slippage_bps "
                f"{rules.max_slippage_bps})",
            )
            return False
        return True

    def _prices(self, s: Swap, asset_in: str, asset_out: str, what: str) -> bool:
        """The minimum out, valued at the policy's prices, may lose at most `max_price_impact_bps` of the
        input's value: a node that lies about the quote, alone, cannot push the minimum lower than that."""
        ev, rules = self.ev, self.rules
        assert rules is not None
        price_in, price_out = self._price(s.chain_id, asset_in), self._price(s.chain_id, asset_out)
        if price_in is None or price_out is None:
            ev.add(
                ESCALATE,
                "swap.price_unknown",
                f"{what}: the policy gives no USD price for both tokens, so the loss cannot be bounded",
            )
            return False
        usd_in, usd_out = usd_micros(s.amount_in, price_in), usd_micros(s.amount_out_min, price_out)
        # exact, by cross-multiplying: no rounding of tiny amounts either way
        worth_out = s.amount_out_min * price_out.usd_micros_per_unit * 10**price_in.decimals * BPS
        floor = (
            s.amount_in
            * price_in.usd_micros_per_unit
            * 10**price_out.decimals
            * (BPS - rules.max_price_impact_bps)
        )
        if worth_out < floor:
            ev.add(
                ESCALATE,
                "swap.price_impact",
                f"{what}: the minimum is worth ${usd_out / 1e6:,.2f} at the policy's prices for "
                f"${usd_in / 1e6:,.2f} in, more than {rules.max_price_impact_bps / 100:g}% less",
            )
            return False
        return True

    def _price(self, chain_id: int, asset: str) -> PriceQuote | None:
        rule = self.ev.ix.asset_rule(chain_id, asset)
        return self.ev.ctx.prices.get((chain_id, asset)) or (rule.price if rule else None)

    def _token_words(self, chain_id: int, asset: str) -> str:
        info = self.ev.ix.asset_info(chain_id, asset)
        if info is not None:
            return f"{info[0]} ({asset})"
        return f"the token at {asset} (not listed; a listed token of the same name lives at another address)"

    def payout(self, p: RouterPayout) -> None:
        ev, rules = self.ev, self.rules
        assert rules is not None
        if (p.chain_id, p.router) not in rules.routers:
            ev.add(
                DENY,
                "swap.router_not_listed",
                f"{p.method} on {p.router}, which is not a router in the policy",
            )
        elif p.recipient is None:
            ev.add(
                ALLOW,
                "swap.refund",
                f"{p.method} returns what the router holds to the account that called it",
            )
        elif ev.ctx.payer is None or p.recipient != ev.ctx.payer:
            ev.add(
                DENY,
                "swap.payout_recipient",
                f"{p.method} would pay what the router holds to {p.recipient}, not to the account that pays",
            )
        else:
            ev.add(ALLOW, "swap.payout", f"{p.method} pays the account that pays")

    def claim(self, c: Claim) -> None:
        """A claim pays the account it names, whoever sends it: only the account that sends it may be
        named, or the airdrop goes to someone else. Nothing leaves the account, so nothing is counted."""
        ev = self.ev
        listed = (ev.ix.distributors or {}).get((c.chain_id, c.distributor))
        if listed is None:
            imitated = ev.ix.lookalike_of(c.chain_id, c.distributor)
            if imitated is not None:
                ev.add(
                    DENY,
                    "claim.distributor_lookalike",
                    f"claim from {c.distributor}, which imitates "
                    f"{ev.ix.address_name(c.chain_id, imitated)} ({imitated})",
                )
            else:
                ev.add(
                    ESCALATE,
                    "claim.distributor_not_listed",
                    f"claim from {c.distributor}, which is not a distributor in the policy",
                )
            return
        name, token = listed
        what = f"claim of {ev.amount(c.chain_id, token, c.amount)} from {name}"
        if ev.ctx.payer is None:
            ev.add(ESCALATE, "claim.payer_unknown", f"{what}: no session key sends it")
        elif c.account != ev.ctx.payer:
            ev.add(
                DENY,
                "claim.recipient",
                f"{what}: it pays {c.account}, not the account that claims ({ev.ctx.payer})",
            )
        else:
            ev.add(ALLOW, "claim.checked", f"{what} to the account that claims")

    def wrap(self, w: Wrap) -> None:
        ev, rules = self.ev, self.rules
        assert rules is not None
        if (w.chain_id, w.contract) not in rules.wethers:
            ev.add(ALLOW, "wrap.not_weth", f"not a listed WETH ({w.contract}): checked as a contract call")
            return
        if w.unwrap:  # WETH leaves as ETH in the same account: counted like a transfer of the WETH
            ev._count(w.chain_id, w.contract, w.amount)
            ev.add(
                ALLOW,
                "wrap.unwrap",
                f"unwrap {ev.amount(w.chain_id, w.contract, w.amount)} into the same account",
            )
        else:  # the ETH sent was counted as a transfer of it (`transfer`)
            ev.add(
                ALLOW, "wrap.wrap", f"wrap {ev.amount(w.chain_id, NATIVE, w.amount)} into the same account"
            )

    # ---- the node's simulation: stricter only ---------------------------------------------------

    def simulation(self, swaps: list[Swap], paid_in_eth: set[tuple[int, str]]) -> None:
        """Any outflow from the payer that the decoded actions do not account for asks the owner (gross
        outflows: one hidden beside an inflow of the same token still counts); a simulated revert
        denies. The simulation never removes a finding."""
        ev, ctx = self.ev, self.ev.ctx
        sim = ctx.simulation
        if sim is None or ctx.payer is None:
            ev.add(
                ESCALATE, "simulation.unavailable", "the transaction could not be simulated before signing"
            )
            return
        if sim.reverted:
            ev.add(DENY, "simulation.reverted", f"the simulation reverts: {sim.error or 'no reason given'}")
            return
        if sim.error:
            ev.add(ESCALATE, "simulation.unavailable", f"the transaction could not be simulated: {sim.error}")
            return
        expected: dict[str, int] = {}
        for t in ev.decoded.transfers():
            expected[t.asset] = expected.get(t.asset, 0) + t.amount
        for s in swaps:
            rules = self.rules
            assert rules is not None
            router = rules.routers.get((s.chain_id, s.router))
            if router is None or not ((s.chain_id, s.router) in paid_in_eth and s.token_in == router.weth):
                expected[s.token_in] = expected.get(s.token_in, 0) + s.amount_in
        for a in ev.decoded.actions:
            if isinstance(a, Wrap) and a.unwrap:
                expected[a.contract] = expected.get(a.contract, 0) + a.amount
        outflows: dict[str, int] = {}
        for change in sim.outflows:
            if change.account == ctx.payer and change.delta < 0:
                outflows[change.asset] = outflows.get(change.asset, 0) - change.delta
        surprises = [asset for asset, out in outflows.items() if out > expected.get(asset, 0)]
        if surprises:
            words = ", ".join(
                ev.amount(ev.decoded.call.chain_id, a, outflows[a] - expected.get(a, 0)) for a in surprises
            )
            ev.add(
                ESCALATE,
                "simulation.undecoded_outflow",
                f"the simulation shows {words} leaving the account beyond what the signer decoded",
            )
        else:
            ev.add(ALLOW, "simulation.matches", "the simulated outflows match what the signer decoded")
