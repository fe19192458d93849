"""Tier 3 grants: the signer's policy turned into on-chain caveats, read back, and checked.

A grant is a set of delegations from the main account to one session key, one per *lane*:
- every lane: Nonce (the main account's current NonceEnforcer nonce: one `incrementNonce` from the main
  key ends every grant at once, without knowing them) and Redeemer (only the session key may redeem: no
  redelegation);
- the native lane: AllowedTargets (the address book's recipients), ExactCalldata (empty: a plain
  transfer, never a call into a recipient that is a contract), ValueLte (the per-transaction cap),
  NativeTokenPeriodTransfer (one fixed period), Timestamp (expiry), NativeTokenTransferAmount (the
  grant's lifetime total), optionally LimitedCalls;
- one lane per ERC-20: AllowedTargets (the token only), ValueLte(0), ERC20PeriodTransfer (the
  token's period limit), AllowedCalldata (the one recipient, pinned), Timestamp, ERC20TransferAmount
  (the lifetime total), ERC20BalanceChange (the per-transaction cap: the main account's balance of the
  token may fall by at most this much in one redeem), optionally LimitedCalls;
- one contract lane per contract the policy lists (`contracts` and `opaque_calls`): AllowedTargets (that
  contract only), AllowedMethods (exactly its allowed selectors), ValueLte (the policy's value bound for
  those calls), Timestamp, optionally LimitedCalls. A contract lane bounds target, selector and value,
  never the arguments, so selectors that move or approve tokens never get one (ERC-20 lanes carry those),
  and it may carry value only with LimitedCalls: no period enforcer bounds its total.
The period enforcers keep their state per delegation hash, so each lane carries exactly one period:
the policy's shortest window for that asset. Longer windows stay off-chain only (docs/tier3.md).

`derive_lanes` is what the companion builds and shows; `parse_lane` + `check_lane` is what the
signer runs on a grant before it will use it: a caveat wider than the policy, an enforcer it does not
know, or a missing required caveat refuses the whole grant.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from policies.intent import NATIVE
from policies.model import AssetRule, Policy, Window
from policies.units import format_amount
from policies.decode import KNOWN, selector_of
from signer.wire.delegation import Caveat, Delegation, addr_word, word

__all__ = [
    "ALLOWED_CALLDATA",
    "ALLOWED_METHODS",
    "ALLOWED_TARGETS",
    "CLOCK_SLACK",
    "CONTRACT",
    "ENFORCERS",
    "ERC20_PERIOD",
    "ERC20_TOTAL",
    "ERC20_TX_CAP",
    "EVERY_LANE",
    "EXACT_CALLDATA",
    "LIMITED_CALLS",
    "NATIVE_PERIOD",
    "NATIVE_TOTAL",
    "NONCE",
    "REDEEMER",
    "RULE_BY_ENFORCER",
    "TIMESTAMP",
    "TOKEN_MOVING",
    "VALUE_LTE",
    "GrantError",
    "Lane",
    "check_lane",
    "contract_lanes",
    "derive_lanes",
    "describe",
    "lifetime_bound",
    "parse_lane",
    "token_tx_bound",
]

ALLOWED_TARGETS = "AllowedTargetsEnforcer"
ALLOWED_METHODS = "AllowedMethodsEnforcer"
ALLOWED_CALLDATA = "AllowedCalldataEnforcer"
EXACT_CALLDATA = "ExactCalldataEnforcer"
VALUE_LTE = "ValueLteEnforcer"
NATIVE_PERIOD = "NativeTokenPeriodTransferEnforcer"
ERC20_PERIOD = "ERC20PeriodTransferEnforcer"
TIMESTAMP = "TimestampEnforcer"
LIMITED_CALLS = "LimitedCallsEnforcer"
NONCE = "NonceEnforcer"
REDEEMER = "RedeemerEnforcer"
NATIVE_TOTAL = "NativeTokenTransferAmountEnforcer"
ERC20_TOTAL = "ERC20TransferAmountEnforcer"
ERC20_TX_CAP = "ERC20BalanceChangeEnforcer"
ENFORCERS = (
    ALLOWED_TARGETS,
    ALLOWED_METHODS,
    ALLOWED_CALLDATA,
    EXACT_CALLDATA,
    VALUE_LTE,
    NATIVE_PERIOD,
    ERC20_PERIOD,
    TIMESTAMP,
    LIMITED_CALLS,
    NONCE,
    REDEEMER,
    NATIVE_TOTAL,
    ERC20_TOTAL,
    ERC20_TX_CAP,
)
EVERY_LANE = (NONCE, REDEEMER)  # the signer refuses a lane without either

# The rule ids the signer names when the chain would refuse (docs/tier3.md).
RULE_BY_ENFORCER = {
    ALLOWED_TARGETS: "onchain.allowed_targets",
    ALLOWED_METHODS: "onchain.allowed_methods",
    ALLOWED_CALLDATA: "onchain.allowed_calldata",
    EXACT_CALLDATA: "onchain.exact_calldata",
    VALUE_LTE: "onchain.value_lte",
    NATIVE_PERIOD: "onchain.native_period",
    ERC20_PERIOD: "onchain.erc20_period",
    TIMESTAMP: "onchain.expired",
    LIMITED_CALLS: "onchain.limited_calls",
    NONCE: "onchain.revoked",
    REDEEMER: "onchain.redeemer",
    NATIVE_TOTAL: "onchain.native_total",
    ERC20_TOTAL: "onchain.erc20_total",
    ERC20_TX_CAP: "onchain.erc20_tx_cap",
}


CONTRACT = "contract"  # a contract lane's asset: it carries calls, not one asset's transfers

# Selectors that move or approve tokens: on a contract lane (target + selector, any arguments) they would
# let the session key send or approve the main account's tokens to anyone.
TOKEN_MOVING = frozenset(
    selector_of(s)
    for s in (
        "transfer(address,uint256)",
        "transferFrom(address,address,uint256)",
        "approve(address,uint256)",
        "increaseAllowance(address,uint256)",
        "permit(address,address,uint256,uint256,uint8,bytes32,bytes32)",
        "approve(address,address,uint160,uint48)",
        "setApprovalForAll(address,bool)",
        "redeemDelegations(bytes[],bytes32[],bytes[])",
    )
)


class GrantError(ValueError):
    """A grant the signer will not use (or the companion will not build); the text says why."""


@dataclass(frozen=True, slots=True)
class Lane:
    """One delegation's caveats, decoded: what the session key may do through it."""

    asset: str  # "native", the token address, or CONTRACT
    targets: tuple[str, ...]  # native: recipients; ERC-20: (token,); contract: (contract,)
    recipient: str | None  # ERC-20: the one recipient AllowedCalldata pins
    value_lte: int
    period_amount: int
    period_seconds: int
    period_start: int
    expires_at: int  # unix seconds; the Timestamp enforcer's "before" bound
    call_limit: int | None = None
    selectors: tuple[bytes, ...] = ()  # contract lanes: the AllowedMethods list
    nonce: int = 0  # the NonceEnforcer nonce the grant was signed at (every lane the same)
    total: int = 0  # native / ERC-20: the lifetime cap (NativeTokenTransferAmount / ERC20TransferAmount)
    token_per_tx: int = (
        0  # ERC-20: the per-transaction cap (ERC20BalanceChange, decrease of the main account)
    )

    def caveats(self, enforcers: dict[str, str], *, delegate: str, delegator: str) -> tuple[Caveat, ...]:
        def at(name: str) -> str:
            if name not in enforcers:
                raise GrantError(f"the chain's config names no {name}: run `owlia chain dev` or add it")
            return enforcers[name]

        out = [Caveat(at(ALLOWED_TARGETS), b"".join(bytes.fromhex(t[2:]) for t in self.targets))]
        if self.asset == CONTRACT:
            out.append(Caveat(at(ALLOWED_METHODS), b"".join(self.selectors)))
            out.append(Caveat(at(VALUE_LTE), word(self.value_lte)))
            out.append(Caveat(at(TIMESTAMP), (0).to_bytes(16, "big") + self.expires_at.to_bytes(16, "big")))
            if self.call_limit is not None:
                out.append(Caveat(at(LIMITED_CALLS), word(self.call_limit)))
            return (*out, *self._every_lane(at, delegate))
        if self.asset == NATIVE:
            out.append(Caveat(at(EXACT_CALLDATA), b""))  # empty calldata: value only
        else:
            if self.recipient is None:
                raise GrantError("an ERC-20 lane needs its one recipient")
            out.append(Caveat(at(ALLOWED_CALLDATA), word(4) + addr_word(self.recipient)))
        out.append(Caveat(at(VALUE_LTE), word(self.value_lte)))
        if self.asset == NATIVE:
            terms = word(self.period_amount) + word(self.period_seconds) + word(self.period_start)
            out.append(Caveat(at(NATIVE_PERIOD), terms))
        else:
            terms = (
                bytes.fromhex(self.asset[2:])
                + word(self.period_amount)
                + word(self.period_seconds)
                + word(self.period_start)
            )
            out.append(Caveat(at(ERC20_PERIOD), terms))
        out.append(Caveat(at(TIMESTAMP), (0).to_bytes(16, "big") + self.expires_at.to_bytes(16, "big")))
        if self.call_limit is not None:
            out.append(Caveat(at(LIMITED_CALLS), word(self.call_limit)))
        if self.total <= 0:
            raise GrantError("a transfer lane needs its lifetime total (above zero)")
        if self.asset == NATIVE:
            out.append(Caveat(at(NATIVE_TOTAL), word(self.total)))
        else:
            if self.token_per_tx <= 0:
                raise GrantError("an ERC-20 lane needs its per-transaction cap (above zero)")
            token = bytes.fromhex(self.asset[2:])
            out.append(Caveat(at(ERC20_TOTAL), token + word(self.total)))
            out.append(
                Caveat(
                    at(ERC20_TX_CAP),
                    b"\x01" + token + bytes.fromhex(delegator.lower()[2:]) + word(self.token_per_tx),
                )
            )
        return (*out, *self._every_lane(at, delegate))

    def _every_lane(self, at: Callable[[str], str], delegate: str) -> tuple[Caveat, ...]:
        """Appended last, so a redeem that breaks a limit is refused by that limit's enforcer by name."""
        return (
            Caveat(at(NONCE), word(self.nonce)),
            Caveat(at(REDEEMER), bytes.fromhex(delegate.lower()[2:])),
        )

    def delegation(
        self, *, delegate: str, delegator: str, salt: int, enforcers: dict[str, str]
    ) -> Delegation:
        return Delegation(
            delegate.lower(),
            delegator.lower(),
            self.caveats(enforcers, delegate=delegate, delegator=delegator),
            salt,
        )


# ---- policy -> lanes (the companion) --------------------------------------------------------------


def lifetime_bound(windows: tuple[Window, ...], start: int, expires_at: int) -> int:
    """The most the policy's windows let out between `start` and `expires_at`: for each window its limit
    times the fixed periods of that length the grant spans; the smallest of these. A lifetime cap above
    it would bound nothing the periods do not."""
    span = max(expires_at - start, 1)
    return min(w.limit * -(-span // w.seconds) for w in windows)


def token_tx_bound(rule: AssetRule) -> int:
    """An ERC-20 lane's per-transaction cap: the policy's per_tx, or without one its shortest window."""
    shortest = min(rule.windows, key=lambda w: w.seconds).limit
    return shortest if rule.per_tx is None else min(rule.per_tx, shortest)


def derive_lanes(
    policy: Policy,
    chain_id: int,
    *,
    expires_at: int,
    nonce: int,
    start: int | None = None,
    erc20_recipient: str | None = None,
    call_limit: int | None = None,
) -> list[Lane]:
    """The widest grant the policy allows: every caveat comes from a policy limit, none is invented.
    `nonce` is the main account's current NonceEnforcer nonce, read from the chain."""
    index = policy.index
    if not index.has_chain(chain_id):
        raise GrantError(f"the policy does not list chain {chain_id}")
    recipients = tuple(sorted(a for c, a in index.book if c == chain_id))
    if not recipients:
        raise GrantError(
            "the policy's address book has no recipient on this chain: a grant would allow nobody"
        )
    start = int(time.time()) if start is None else start
    lanes = []
    for (rule_chain, asset), rule in sorted(index.assets.items()):
        if rule_chain != chain_id or not rule.windows:
            continue
        window = min(rule.windows, key=lambda w: w.seconds)
        if asset == NATIVE:
            if rule.per_tx is None:
                raise GrantError(
                    f"{rule.symbol} has no per_tx limit in the policy: Tier 3 needs one (ValueLte)"
                )
            lanes.append(
                Lane(
                    NATIVE,
                    recipients,
                    None,
                    rule.per_tx,
                    window.limit,
                    window.seconds,
                    start,
                    expires_at,
                    call_limit,
                    nonce=nonce,
                    total=lifetime_bound(rule.windows, start, expires_at),
                )
            )
            continue
        if erc20_recipient is None:
            if len(recipients) != 1:
                raise GrantError(
                    f"{rule.symbol}: an ERC-20 lane pins one recipient; the address book has "
                    f"{len(recipients)}: choose one"
                )
            pinned = recipients[0]
        else:
            pinned = erc20_recipient.lower()
            if (chain_id, pinned) not in index.book:
                raise GrantError(f"{erc20_recipient} is not in the policy's address book")
        lanes.append(
            Lane(
                asset,
                (asset,),
                pinned,
                0,
                window.limit,
                window.seconds,
                start,
                expires_at,
                call_limit,
                nonce=nonce,
                total=lifetime_bound(rule.windows, start, expires_at),
                token_per_tx=token_tx_bound(rule),
            )
        )
    lanes += contract_lanes(policy, chain_id, expires_at=expires_at, call_limit=call_limit, nonce=nonce)
    if not lanes:
        raise GrantError("the policy has no asset with a window limit on this chain: nothing to grant")
    return lanes


def _contract_rules(policy: Policy, chain_id: int) -> dict[str, dict[bytes, int]]:
    """Per contract, its allowed selectors and each one's value bound: 0 for a decoded call under
    `contracts` (its value would be a transfer, which the native lane carries), `max_value` for an
    `opaque_calls` entry, never above the native per_tx. Token-moving selectors are left out, and so are
    selectors under `contracts` the decoder does not know (the policy denies those: `decode.opaque`)."""
    index = policy.index
    native = index.assets.get((chain_id, NATIVE))
    native_cap = native.per_tx if native is not None and native.per_tx is not None else 0
    rules: dict[str, dict[bytes, int]] = {}
    for (chain, address), selectors in index.contracts.items():
        if chain == chain_id:  # only decoded functions: the policy denies an undecoded one listed here
            for selector in (s for s in selectors - TOKEN_MOVING if s in KNOWN):
                rules.setdefault(address, {})[selector] = 0
    for (chain, address, selector), max_value in index.opaque.items():
        if chain == chain_id and selector not in TOKEN_MOVING:
            bound = min(max_value, native_cap)
            rules.setdefault(address, {})[selector] = min(bound, rules.get(address, {}).get(selector, bound))
    return {a: r for a, r in rules.items() if r}


def contract_lanes(
    policy: Policy, chain_id: int, *, expires_at: int, call_limit: int | None, nonce: int = 0
) -> list[Lane]:
    """One lane per allowed contract. Its ValueLte is the smallest bound among its selectors, and 0 without
    a call limit: nothing on chain would bound the total value sent through it otherwise."""
    lanes = []
    for address, rules in sorted(_contract_rules(policy, chain_id).items()):
        value = min(rules.values()) if call_limit is not None else 0
        lanes.append(
            Lane(
                CONTRACT,
                (address,),
                None,
                value,
                0,
                0,
                0,
                expires_at,
                call_limit,
                tuple(sorted(rules)),
                nonce=nonce,
            )
        )
    return lanes


# ---- delegation -> lane (the signer) ----------------------------------------------------------------


def parse_lane(delegation: Delegation, enforcers: dict[str, str]) -> Lane:
    """Decode a delegation's caveats; anything unexpected refuses it (default deny)."""
    by_address = {address.lower(): name for name, address in enforcers.items()}
    found: dict[str, bytes] = {}
    for caveat in delegation.caveats:
        name = by_address.get(caveat.enforcer)
        if name is None:
            raise GrantError(
                f"caveat enforcer {caveat.enforcer} is not one of this chain's configured enforcers"
            )
        if name in found:
            raise GrantError(f"{name} appears twice")
        found[name] = caveat.terms
    for required in (ALLOWED_TARGETS, VALUE_LTE, TIMESTAMP):
        if required not in found:
            raise GrantError(f"the grant has no {required}: it would not bound the session key")
    nonce = _every_lane(found, delegation)
    if ALLOWED_METHODS in found:
        return replace(_parse_contract_lane(found), nonce=nonce)
    if (NATIVE_PERIOD in found) == (ERC20_PERIOD in found):
        raise GrantError("a lane needs exactly one period enforcer (native or ERC-20)")
    targets = _targets(found)
    value_lte = _uint(found[VALUE_LTE], VALUE_LTE)
    expires_at = _expiry(found)
    call_limit = _uint(found[LIMITED_CALLS], LIMITED_CALLS) if LIMITED_CALLS in found else None
    recipient = None
    if NATIVE_PERIOD in found:
        if ALLOWED_CALLDATA in found:
            raise GrantError("a native lane carries no AllowedCalldata")
        if found.get(EXACT_CALLDATA) != b"":
            raise GrantError(
                "a native lane must pin empty calldata (ExactCalldata with empty terms): without it "
                "the session key could call any recipient that is a contract as the main account"
            )
        terms = found[NATIVE_PERIOD]
        if len(terms) != 96:
            raise GrantError("NativeTokenPeriodTransfer terms must be 96 bytes")
        asset = NATIVE
        amount, seconds, start = (int.from_bytes(terms[i : i + 32], "big") for i in (0, 32, 64))
        if ERC20_TOTAL in found or ERC20_TX_CAP in found:
            raise GrantError("a native lane carries no ERC-20 caps")
        if NATIVE_TOTAL not in found:
            raise GrantError("a native lane needs its lifetime total (NativeTokenTransferAmount)")
        total = _uint(found[NATIVE_TOTAL], NATIVE_TOTAL)
        token_per_tx = 0
    else:
        terms = found[ERC20_PERIOD]
        if len(terms) != 116:
            raise GrantError("ERC20PeriodTransfer terms must be 116 bytes")
        asset = "0x" + terms[:20].hex()
        amount, seconds, start = (int.from_bytes(terms[i : i + 32], "big") for i in (20, 52, 84))
        calldata = found.get(ALLOWED_CALLDATA)
        if (
            calldata is None
            or len(calldata) != 64
            or int.from_bytes(calldata[:32], "big") != 4
            or calldata[32:44] != b"\x00" * 12
        ):
            raise GrantError(
                "an ERC-20 lane must pin its recipient (AllowedCalldata at offset 4, one address)"
            )
        recipient = "0x" + calldata[44:].hex()
        if targets != (asset,):
            raise GrantError("an ERC-20 lane's AllowedTargets must be exactly its token")
        total, token_per_tx = _erc20_caps(found, asset, delegation.delegator)
    if amount == 0 or seconds == 0 or start == 0:
        raise GrantError("the period caveat has a zero amount, duration or start")
    if total == 0:
        raise GrantError("the lifetime total is zero: the lane would allow nothing")
    return Lane(
        asset,
        targets,
        recipient,
        value_lte,
        amount,
        seconds,
        start,
        expires_at,
        call_limit,
        nonce=nonce,
        total=total,
        token_per_tx=token_per_tx,
    )


def _every_lane(found: dict[str, bytes], delegation: Delegation) -> int:
    """Nonce and Redeemer, on every lane: the lane's nonce. Without the Nonce caveat the main key could
    not end the grant without knowing it; without Redeemer the session key could redelegate it."""
    for required, why in (
        (NONCE, "the main key could not revoke it without the signer (incrementNonce)"),
        (REDEEMER, "the session key could pass it on (redelegation)"),
    ):
        if required not in found:
            raise GrantError(f"the grant has no {required}: {why}")
    if found[REDEEMER] != bytes.fromhex(delegation.delegate[2:]):
        raise GrantError("the Redeemer caveat must name exactly the session key the grant is for")
    return _uint(found[NONCE], NONCE)


def _erc20_caps(found: dict[str, bytes], token: str, delegator: str) -> tuple[int, int]:
    """ERC20TransferAmount (lifetime) and ERC20BalanceChange (per transaction), both for this token; the
    balance watched must be the main account's, falling (the decrease flag)."""
    if NATIVE_TOTAL in found:
        raise GrantError("an ERC-20 lane carries no native total")
    total_terms, cap_terms = found.get(ERC20_TOTAL), found.get(ERC20_TX_CAP)
    if total_terms is None or len(total_terms) != 52 or total_terms[:20] != bytes.fromhex(token[2:]):
        raise GrantError(
            "an ERC-20 lane needs its lifetime total for its own token (ERC20TransferAmount, 52 bytes)"
        )
    if (
        cap_terms is None
        or len(cap_terms) != 73
        or cap_terms[0] != 1
        or cap_terms[1:21] != bytes.fromhex(token[2:])
        or cap_terms[21:41] != bytes.fromhex(delegator[2:])
    ):
        raise GrantError(
            "an ERC-20 lane needs its per-transaction cap: ERC20BalanceChange on its token, watching "
            "the main account's balance fall (73 bytes, decrease flag)"
        )
    cap = int.from_bytes(cap_terms[41:], "big")
    if cap == 0:
        raise GrantError("the ERC-20 per-transaction cap is zero: the lane would allow nothing")
    return int.from_bytes(total_terms[20:], "big"), cap


def _targets(found: dict[str, bytes]) -> tuple[str, ...]:
    raw = found[ALLOWED_TARGETS]
    if not raw or len(raw) % 20:
        raise GrantError("AllowedTargets terms are not a list of addresses")
    return tuple("0x" + raw[i : i + 20].hex() for i in range(0, len(raw), 20))


def _expiry(found: dict[str, bytes]) -> int:
    stamp = found[TIMESTAMP]
    if len(stamp) != 32:
        raise GrantError("Timestamp terms must be 32 bytes")
    expires_at = int.from_bytes(stamp[16:], "big")
    if expires_at == 0:
        raise GrantError("the grant never expires (Timestamp has no 'before' bound)")
    return expires_at


def _parse_contract_lane(found: dict[str, bytes]) -> Lane:
    extra = set(found) - {ALLOWED_TARGETS, ALLOWED_METHODS, VALUE_LTE, TIMESTAMP, LIMITED_CALLS, *EVERY_LANE}
    if extra:
        raise GrantError(f"a contract lane carries no {', '.join(sorted(extra))}")
    targets = _targets(found)
    if len(targets) != 1:
        raise GrantError("a contract lane's AllowedTargets must be exactly one contract")
    raw = found[ALLOWED_METHODS]
    if not raw or len(raw) % 4:
        raise GrantError("AllowedMethods terms are not a list of 4-byte selectors")
    selectors = tuple(raw[i : i + 4] for i in range(0, len(raw), 4))
    if len(set(selectors)) != len(selectors):
        raise GrantError("AllowedMethods lists a selector twice")
    call_limit = _uint(found[LIMITED_CALLS], LIMITED_CALLS) if LIMITED_CALLS in found else None
    return Lane(
        CONTRACT,
        targets,
        None,
        _uint(found[VALUE_LTE], VALUE_LTE),
        0,
        0,
        0,
        _expiry(found),
        call_limit,
        selectors,
    )


def _uint(terms: bytes, name: str) -> int:
    if len(terms) != 32:
        raise GrantError(f"{name} terms must be 32 bytes")
    return int.from_bytes(terms, "big")


CLOCK_SLACK = (
    3600  # seconds a grant's period start may precede the signer's clock (chain and host clocks differ)
)


def check_lane(
    lane: Lane, policy: Policy, chain_id: int, *, not_after: float, taken_at: float | None = None
) -> None:
    """Refuse a lane wider than the policy: every bound must sit inside the matching policy limit.
    `taken_at` (when the signer takes the grant): the lifetime bound counts from then, not from a period
    start the grant may set in the past to stretch it."""
    if lane.asset == CONTRACT:
        _check_contract_lane(lane, policy, chain_id, not_after=not_after)
        return
    index = policy.index
    rule = index.assets.get((chain_id, lane.asset))
    if rule is None:
        raise GrantError(f"the policy has no limits for {lane.asset} on chain {chain_id}")
    for target in lane.targets if lane.asset == NATIVE else ((lane.recipient or ""),):
        if (chain_id, target) not in index.book:
            raise GrantError(
                f"{target} may receive through the grant but is not in the policy's address book"
            )
    if lane.asset == NATIVE:
        if rule.per_tx is None or lane.value_lte > rule.per_tx:
            raise GrantError(f"ValueLte {lane.value_lte} is above the policy's per_tx for {rule.symbol}")
    elif lane.value_lte != 0:
        raise GrantError("an ERC-20 lane must not move ETH (ValueLte must be 0)")
    window = next((w for w in rule.windows if w.seconds == lane.period_seconds), None)
    if window is None:
        raise GrantError(
            f"the grant's period of {lane.period_seconds}s is none of the policy's windows for {rule.symbol}"
        )
    if lane.period_amount > window.limit:
        allowed = format_amount(lane.period_amount, rule.decimals, rule.symbol)
        limit = format_amount(window.limit, rule.decimals, rule.symbol)
        raise GrantError(f"the grant allows {allowed} per {window.label}, above the policy's {limit}")
    counted_from = (
        lane.period_start if taken_at is None else max(lane.period_start, int(taken_at) - CLOCK_SLACK)
    )
    bound = lifetime_bound(rule.windows, counted_from, lane.expires_at)
    if lane.total > bound:
        raise GrantError(
            f"the grant's lifetime total of {format_amount(lane.total, rule.decimals, rule.symbol)} is "
            f"above the {format_amount(bound, rule.decimals, rule.symbol)} the policy's windows allow "
            "over its lifetime"
        )
    if lane.asset != NATIVE and lane.token_per_tx > token_tx_bound(rule):
        raise GrantError(
            f"the grant's per-transaction cap of "
            f"{format_amount(lane.token_per_tx, rule.decimals, rule.symbol)} is above the policy's "
            f"{format_amount(token_tx_bound(rule), rule.decimals, rule.symbol)}"
        )
    if lane.expires_at > not_after:
        raise GrantError("the grant outlives the session key it is for")


def _check_contract_lane(lane: Lane, policy: Policy, chain_id: int, *, not_after: float) -> None:
    (target,) = lane.targets
    rules = _contract_rules(policy, chain_id).get(target)
    if rules is None:
        raise GrantError(
            f"{target} may be called through the grant but the policy lists no call to it "
            "(contracts or opaque_calls)"
        )
    for selector in lane.selectors:
        if selector in TOKEN_MOVING:
            raise GrantError(
                f"0x{selector.hex()} moves or approves tokens: a contract lane would allow it with any "
                "arguments (ERC-20 lanes carry token transfers)"
            )
        if selector not in rules:
            raise GrantError(f"0x{selector.hex()} on {target} is not a call the policy allows")
        if lane.value_lte > rules[selector]:
            raise GrantError(
                f"ValueLte {lane.value_lte} is above the policy's value bound of {rules[selector]} wei "
                f"for 0x{selector.hex()} on {target}"
            )
    if lane.value_lte > 0 and lane.call_limit is None:
        raise GrantError(
            "a contract lane that may send value needs LimitedCalls: no period enforcer bounds its total"
        )
    if lane.expires_at > not_after:
        raise GrantError("the grant outlives the session key it is for")


# ---- words ---------------------------------------------------------------------------------------------


def describe(lane: Lane, policy: Policy, chain_id: int) -> str:
    """The grant in one sentence, shown before the main key signs it."""
    index = policy.index
    rule = index.assets.get((chain_id, lane.asset))
    symbol, decimals = (rule.symbol, rule.decimals) if rule else (lane.asset, 0)

    def who(address: str) -> str:
        name = index.names.get((chain_id, address))
        return f"{name} ({address})" if name else address

    until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(lane.expires_at))
    if lane.asset == CONTRACT:
        native = index.assets.get((chain_id, NATIVE))
        coin = native.symbol if native is not None else "ETH"
        calls = ", ".join(_selector_words(s) for s in lane.selectors)
        text = (
            f"this key may call {calls} on {who(lane.targets[0])} with at most "
            f"{format_amount(lane.value_lte, 18, coin)} per call, until {until}"
        )
        if lane.call_limit is not None:
            text += f", {lane.call_limit} transactions in all"
        return text
    period = _period_words(lane.period_seconds)
    per_tx = lane.value_lte if lane.asset == NATIVE else lane.token_per_tx
    recipients = lane.targets if lane.asset == NATIVE else (lane.recipient or "",)
    text = (
        f"this key may send at most {format_amount(per_tx, decimals, symbol)} per transaction, "
        f"{format_amount(lane.period_amount, decimals, symbol)} per {period} and "
        f"{format_amount(lane.total, decimals, symbol)} in all, only to "
        f"{', '.join(who(t) for t in recipients)}, until {until}"
    )
    if lane.call_limit is not None:
        text += f", {lane.call_limit} transactions in all"
    return text


def _selector_words(selector: bytes) -> str:
    known = KNOWN.get(selector)
    return f"{known.signature.split('(')[0]}() (0x{selector.hex()})" if known else f"0x{selector.hex()}"


def _period_words(seconds: int) -> str:
    for unit, name in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds % unit == 0:
            n = seconds // unit
            return name if n == 1 else f"{n} {name}s"
    return f"{seconds} seconds"
