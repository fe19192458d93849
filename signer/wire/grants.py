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
- one swap lane (ETH in, one listed token out, through a router the policy lists): AllowedTargets (the
  router), AllowedMethods (its multicall only), two AllowedCalldata ranges that pin every byte of
  `multicall([exactInputSingle(WETH -> token, fee, recipient = the main account, no price limit),
  refundETH()])` but the deadline, amountIn and amountOutMinimum (signer.wire.swap_template), ValueLte,
  NativeTokenPeriodTransfer, Timestamp, NativeTokenTransferAmount, ERC20BalanceChange (the main account's
  WETH may not fall at all: the router cannot pull it through an old allowance), optionally LimitedCalls.
  Its ETH budget is shared with the native lane: the two lanes' period amounts and lifetime totals add up
  to at most the policy's (`check_shared_native`);
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

from policies.decode import KNOWN, selector_of
from policies.intent import NATIVE
from policies.model import AssetRule, Policy, Window
from policies.units import format_amount
from signer.wire.delegation import Caveat, Delegation, addr_word, word
from signer.wire.swap_template import MULTICALL, PIN_HEAD, PIN_TAIL, pinned_ranges

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
    "SWAP",
    "SWAP_FEE",
    "SWAP_FEE_TIERS",
    "TIMESTAMP",
    "TOKEN_MOVING",
    "VALUE_LTE",
    "GrantError",
    "Lane",
    "check_lane",
    "check_shared_native",
    "contract_lanes",
    "derive_lanes",
    "describe",
    "lifetime_bound",
    "parse_lane",
    "split_native",
    "swap_lane",
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
SWAP = "swap"  # a swap lane's asset: ETH in through the router, one token out to the main account
SWAP_FEE = 3000  # the pool a swap lane pins by default: the 0.3 % tier, the one the bot's swap tool uses
SWAP_FEE_TIERS = frozenset({100, 500, 3000, 10000})  # Uniswap v3's fee tiers

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
    token_in: str | None = None  # swap lanes: the router's WETH (ETH in, wrapped by the router)
    token_out: str | None = None  # swap lanes: the one token bought
    fee: int = 0  # swap lanes: the pool's fee tier

    def caveats(self, enforcers: dict[str, str], *, delegate: str, delegator: str) -> tuple[Caveat, ...]:
        def at(name: str) -> str:
            if name not in enforcers:
                raise GrantError(f"the chain's config names no {name}: run `owlia chain dev` or add it")
            return enforcers[name]

        out = [Caveat(at(ALLOWED_TARGETS), b"".join(bytes.fromhex(t[2:]) for t in self.targets))]
        if self.asset == SWAP:
            return (*out, *self._swap_caveats(at, delegator), *self._every_lane(at, delegate))
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

    def _swap_caveats(self, at: Callable[[str], str], delegator: str) -> tuple[Caveat, ...]:
        """After AllowedTargets(router): the function, the pinned calldata, the ETH limits, and the
        main account's WETH held still (ERC20BalanceChange, decrease by at most 0)."""
        if self.token_in is None or self.token_out is None or self.recipient is None:
            raise GrantError("a swap lane needs its WETH, its token out and its recipient")
        if self.recipient != delegator.lower():
            raise GrantError("a swap lane pays only the main account (the delegator)")
        if self.fee not in SWAP_FEE_TIERS:
            raise GrantError(f"a swap lane's pool fee must be one of {sorted(SWAP_FEE_TIERS)}")
        head, tail = pinned_ranges(self.token_in, self.token_out, self.fee, self.recipient)
        out = [
            Caveat(at(ALLOWED_METHODS), MULTICALL),
            Caveat(at(ALLOWED_CALLDATA), word(PIN_HEAD[0]) + head),
            Caveat(at(ALLOWED_CALLDATA), word(PIN_TAIL[0]) + tail),
            Caveat(at(VALUE_LTE), word(self.value_lte)),
            Caveat(
                at(NATIVE_PERIOD),
                word(self.period_amount) + word(self.period_seconds) + word(self.period_start),
            ),
            Caveat(at(TIMESTAMP), (0).to_bytes(16, "big") + self.expires_at.to_bytes(16, "big")),
        ]
        if self.call_limit is not None:
            out.append(Caveat(at(LIMITED_CALLS), word(self.call_limit)))
        if self.total <= 0:
            raise GrantError("a swap lane needs its lifetime total (above zero)")
        out.append(Caveat(at(NATIVE_TOTAL), word(self.total)))
        weth, account = bytes.fromhex(self.token_in[2:]), bytes.fromhex(delegator.lower()[2:])
        out.append(Caveat(at(ERC20_TX_CAP), b"\x01" + weth + account + word(0)))
        return tuple(out)

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
    delegator: str | None = None,
    swap_to: str | None = None,
) -> list[Lane]:
    """The widest grant the policy allows: every caveat comes from a policy limit, none is invented.
    `nonce` is the main account's current NonceEnforcer nonce, read from the chain. With the main
    account (`delegator`) known, a policy that lets ETH be swapped gets a swap lane too (to `swap_to`,
    else the first token the policy lets the agent swap to), and the ETH limits are split between it
    and the native lane (`split_native`)."""
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
    if delegator is not None:
        swap = swap_lane(
            policy,
            chain_id,
            delegator=delegator,
            expires_at=expires_at,
            start=start,
            nonce=nonce,
            call_limit=call_limit,
            token_out=swap_to,
        )
        if swap is not None:
            lanes = [split_native(lane, swap) if lane.asset == NATIVE else lane for lane in lanes] + [swap]
    elif swap_to is not None:
        raise GrantError("a swap lane needs the main account it pays")
    if not lanes:
        raise GrantError("the policy has no asset with a window limit on this chain: nothing to grant")
    return lanes


def swap_lane(
    policy: Policy,
    chain_id: int,
    *,
    delegator: str,
    expires_at: int,
    start: int,
    nonce: int,
    call_limit: int | None = None,
    token_out: str | None = None,
) -> Lane | None:
    """ETH in through the policy's first router on this chain, to one token the policy lets the agent
    swap to, paid to the main account only. Half the ETH window and half the lifetime bound: the native
    lane keeps the other half (`split_native`), so both lanes together stay within the policy's ETH
    limits on chain. None when the policy swaps no ETH here (or the router already has a contract lane)."""
    index, rules = policy.index, policy.swaps
    native = index.assets.get((chain_id, NATIVE))
    if rules is None or index.swaps is None or native is None or not native.windows or native.per_tx is None:
        if token_out is not None:
            raise GrantError("the policy lets no ETH be swapped on this chain: no swap lane")
        return None
    routers = [r for r in rules.routers if r.chain == chain_id]
    if not routers or (chain_id, NATIVE) not in index.swaps.tokens_in:
        if token_out is not None:
            raise GrantError("the policy lets no ETH be swapped on this chain: no swap lane")
        return None
    router, weth = routers[0].address.lower(), routers[0].weth.lower()
    if router in _contract_rules(policy, chain_id):
        return None  # the policy lists the router as a contract: its contract lane covers it
    outs = [
        a.asset.lower()
        for a in rules.tokens_out
        if a.chain == chain_id and a.asset.lower() not in (NATIVE, weth)
    ]
    if token_out is None:
        if not outs:
            return None
        chosen = outs[0]
    else:
        chosen = token_out.lower()
        if chosen not in outs:
            raise GrantError(f"{token_out} is not a token the policy lets the agent swap ETH to")
    window = min(native.windows, key=lambda w: w.seconds)
    share, total = window.limit // 2, lifetime_bound(native.windows, start, expires_at) // 2
    if share == 0 or total == 0:
        return None
    return Lane(
        SWAP,
        (router,),
        delegator.lower(),
        min(native.per_tx, share),
        share,
        window.seconds,
        start,
        expires_at,
        call_limit,
        (MULTICALL,),
        nonce=nonce,
        total=total,
        token_in=weth,
        token_out=chosen,
        fee=SWAP_FEE,
    )


def split_native(native: Lane, swap: Lane) -> Lane:
    """The native lane with what the swap lane takes of the ETH limits taken out."""
    period = native.period_amount - swap.period_amount
    return replace(
        native, period_amount=period, value_lte=min(native.value_lte, period), total=native.total - swap.total
    )


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
    second_pin: bytes | None = None  # a swap lane's second AllowedCalldata range
    for caveat in delegation.caveats:
        name = by_address.get(caveat.enforcer)
        if name is None:
            raise GrantError(
                f"caveat enforcer {caveat.enforcer} is not one of this chain's configured enforcers"
            )
        if name in found:
            if name == ALLOWED_CALLDATA and second_pin is None:
                second_pin = caveat.terms
                continue
            raise GrantError(f"{name} appears twice")
        found[name] = caveat.terms
    for required in (ALLOWED_TARGETS, VALUE_LTE, TIMESTAMP):
        if required not in found:
            raise GrantError(f"the grant has no {required}: it would not bound the session key")
    nonce = _every_lane(found, delegation)
    if ALLOWED_METHODS in found and ALLOWED_CALLDATA in found:
        return _parse_swap_lane(delegation, enforcers, found, second_pin, nonce)
    if second_pin is not None:
        raise GrantError(f"{ALLOWED_CALLDATA} appears twice")
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


def _parse_swap_lane(
    delegation: Delegation,
    enforcers: dict[str, str],
    found: dict[str, bytes],
    second_pin: bytes | None,
    nonce: int,
) -> Lane:
    """Read the swap lane's numbers, rebuild its caveats from them, and require the delegation to be
    exactly those: any other byte (a range pinned elsewhere, a missing WETH guard, another function, an
    extra enforcer, another order) refuses it."""
    targets = _targets(found)
    head_terms = found[ALLOWED_CALLDATA]
    head_size = PIN_HEAD[1] - PIN_HEAD[0]
    if (
        len(targets) != 1
        or second_pin is None
        or len(head_terms) != 32 + head_size
        or int.from_bytes(head_terms[:32], "big") != PIN_HEAD[0]
    ):
        raise GrantError(
            "a swap lane is one router and two AllowedCalldata ranges: the multicall's layout, function, "
            "tokens, fee and recipient, then its price limit and refundETH()"
        )
    head = head_terms[32:]
    word_at = PIN_HEAD[0]  # head[i] is calldata byte i + 4

    def field(start: int) -> bytes:
        return head[start - word_at : start - word_at + 32]

    token_in, token_out = "0x" + field(168)[12:].hex(), "0x" + field(200)[12:].hex()
    fee, recipient = int.from_bytes(field(232), "big"), "0x" + field(264)[12:].hex()
    terms = found.get(NATIVE_PERIOD, b"")
    if len(terms) != 96 or NATIVE_TOTAL not in found:
        raise GrantError("a swap lane needs its ETH period (NativeTokenPeriodTransfer) and lifetime total")
    amount, seconds, start = (int.from_bytes(terms[i : i + 32], "big") for i in (0, 32, 64))
    if amount == 0 or seconds == 0 or start == 0:
        raise GrantError("the period caveat has a zero amount, duration or start")
    lane = Lane(
        SWAP,
        targets,
        recipient,
        _uint(found[VALUE_LTE], VALUE_LTE),
        amount,
        seconds,
        start,
        _expiry(found),
        _uint(found[LIMITED_CALLS], LIMITED_CALLS) if LIMITED_CALLS in found else None,
        (MULTICALL,),
        nonce=nonce,
        total=_uint(found[NATIVE_TOTAL], NATIVE_TOTAL),
        token_in=token_in,
        token_out=token_out,
        fee=fee,
    )
    expected = lane.caveats(enforcers, delegate=delegation.delegate, delegator=delegation.delegator)
    if [(c.enforcer, c.terms) for c in delegation.caveats] != [
        (c.enforcer.lower(), c.terms) for c in expected
    ]:
        raise GrantError(
            "the swap lane's caveats are not exactly the swap template's (signer.wire.swap_template): "
            "refused whole"
        )
    return lane


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
    if lane.asset == SWAP:
        _check_swap_route(lane, policy, chain_id)
    rule = index.assets.get((chain_id, NATIVE if lane.asset == SWAP else lane.asset))
    if rule is None:
        raise GrantError(f"the policy has no limits for {lane.asset} on chain {chain_id}")
    recipients = (
        lane.targets if lane.asset == NATIVE else () if lane.asset == SWAP else ((lane.recipient or ""),)
    )
    for target in recipients:
        if (chain_id, target) not in index.book:
            raise GrantError(
                f"{target} may receive through the grant but is not in the policy's address book"
            )
    if lane.asset in (NATIVE, SWAP):
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
    if lane.asset not in (NATIVE, SWAP) and lane.token_per_tx > token_tx_bound(rule):
        raise GrantError(
            f"the grant's per-transaction cap of "
            f"{format_amount(lane.token_per_tx, rule.decimals, rule.symbol)} is above the policy's "
            f"{format_amount(token_tx_bound(rule), rule.decimals, rule.symbol)}"
        )
    if lane.expires_at > not_after:
        raise GrantError("the grant outlives the session key it is for")


def _check_swap_route(lane: Lane, policy: Policy, chain_id: int) -> None:
    """The router, WETH and token out of a swap lane are the policy's; ETH may be swapped from."""
    swaps = policy.index.swaps
    (router,) = lane.targets
    info = None if swaps is None else swaps.routers.get((chain_id, router))
    if swaps is None or info is None:
        raise GrantError(f"{router} may be called through the grant but is not a router the policy lists")
    if lane.token_in != info.weth.lower():
        raise GrantError(f"the swap lane's token in is not the WETH of {info.name} ({info.weth})")
    if (chain_id, NATIVE) not in swaps.tokens_in:
        raise GrantError("the policy does not let the agent swap from ETH")
    if lane.token_out in (None, NATIVE, lane.token_in) or (chain_id, lane.token_out) not in swaps.tokens_out:
        raise GrantError(f"{lane.token_out} is not a token the policy lets the agent swap to")
    if router in _contract_rules(policy, chain_id):
        raise GrantError(f"{router} has a contract lane: a swap lane beside it would widen it")


def check_shared_native(
    lanes: tuple[Lane, ...] | list[Lane], policy: Policy, chain_id: int, *, taken_at: float | None = None
) -> None:
    """The native lane and a swap lane both spend the main account's ETH and each keeps its own on-chain
    counters, so together they must stay within the policy's ETH limits: one period length, their
    period amounts adding up to at most that window's limit, their lifetime totals to at most the bound."""
    spending = [lane for lane in lanes if lane.asset in (NATIVE, SWAP)]
    if len(spending) < 2:
        return
    rule = policy.index.assets.get((chain_id, NATIVE))
    if rule is None:
        raise GrantError(f"the policy has no limits for ETH on chain {chain_id}")
    seconds = {lane.period_seconds for lane in spending}
    window = next((w for w in rule.windows if {w.seconds} == seconds), None)
    if window is None:
        raise GrantError("the lanes that spend ETH must share one period, one of the policy's windows")
    if sum(lane.period_amount for lane in spending) > window.limit:
        raise GrantError(
            f"the lanes that spend ETH allow {format_amount(sum(x.period_amount for x in spending), rule.decimals, rule.symbol)} "
            f"per {window.label} together, above the policy's {format_amount(window.limit, rule.decimals, rule.symbol)}"
        )
    start = min(lane.period_start for lane in spending)
    counted_from = start if taken_at is None else max(start, int(taken_at) - CLOCK_SLACK)
    bound = lifetime_bound(rule.windows, counted_from, max(lane.expires_at for lane in spending))
    if sum(lane.total for lane in spending) > bound:
        raise GrantError(
            "the lanes that spend ETH have lifetime totals that add up to more than the "
            f"{format_amount(bound, rule.decimals, rule.symbol)} the policy's windows allow over the grant"
        )


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
    if lane.asset == SWAP:
        native = index.assets.get((chain_id, NATIVE))
        coin, places = (native.symbol, native.decimals) if native is not None else ("ETH", 18)
        out = index.assets.get((chain_id, lane.token_out or ""))
        bought = f"{out.symbol} ({lane.token_out})" if out is not None else str(lane.token_out)
        swaps = index.swaps
        info = None if swaps is None else swaps.routers.get((chain_id, lane.targets[0]))
        router = f"{info.name}'s router" if info is not None else "the router"
        text = (
            f"this key may swap {coin} for {bought} on {router} at {lane.targets[0]}: at most "
            f"{format_amount(lane.value_lte, places, coin)} per transaction, "
            f"{format_amount(lane.period_amount, places, coin)} per {_period_words(lane.period_seconds)} and "
            f"{format_amount(lane.total, places, coin)} in all, the tokens back to your account "
            f"{lane.recipient} only, until {until}"
        )
        if lane.call_limit is not None:
            text += f", {lane.call_limit} transactions in all"
        return text
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
