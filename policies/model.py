"""The policy document: a validated, immutable pydantic model with precomputed lookups.

Validation is strict because a typo in a policy must never widen what the signer signs:
unknown keys, floats, bad checksums and duplicates are refused with the field path named.
The evaluator runs on every request, so every lookup it needs is built once, here.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from policies.context import PriceQuote
from policies.decode import KNOWN
from policies.index import PolicyIndex
from policies.intent import NATIVE
from policies.kernel.addresses import case_ok, is_address
from policies.kernel.text import display_safe
from policies.units import lookalike_key, parse_period, parse_units

USD_DECIMALS = 6  # USD limits and prices are held in micro-dollars

_SELECTOR = re.compile(r"0x[0-9a-fA-F]{8}")


def _address(value: Any) -> str:
    if not is_address(value):
        raise ValueError("must be an address: 0x followed by 40 hex digits (quote it in YAML)")
    body = value[2:]
    if not case_ok(value):
        raise ValueError(
            f"{value} has a bad EIP-55 checksum (a typo?); write it lowercase only if you are sure"
        )
    return "0x" + body.lower()


def _asset_id(value: Any) -> str:
    return NATIVE if value == NATIVE else _address(value)


def _amount(value: Any) -> str:
    """Amounts stay as the decimal text the user wrote; an int means whole units."""
    if isinstance(value, float):
        raise ValueError('write amounts as quoted strings, e.g. "0.01"')
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError("must be a decimal amount written as a quoted string")
    parse_units(value, 0 if isinstance(value, int) else 77)  # shape check; precision per asset later
    return str(value)


def _selector(value: Any) -> str:
    if not isinstance(value, str) or not _SELECTOR.fullmatch(value):
        raise ValueError("must be a function selector: 0x followed by 8 hex digits, quoted")
    return value.lower()


def _period_label(value: Any) -> str:
    parse_period(value)  # refuses anything but a label such as "24h", a str
    return str(value)


Address = Annotated[str, BeforeValidator(_address)]
AssetId = Annotated[str, BeforeValidator(_asset_id)]
Amount = Annotated[str, BeforeValidator(_amount)]
Selector = Annotated[str, BeforeValidator(_selector)]
Name = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(display_safe)]
Windows = dict[Annotated[str, BeforeValidator(_period_label)], Amount]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_windows(windows: dict[str, str], decimals: int) -> dict[str, str]:
    periods: dict[int, str] = {}
    for label, amount in windows.items():
        parse_units(amount, decimals)
        seconds = parse_period(label)
        if seconds in periods:
            raise ValueError(f"{periods[seconds]} and {label} are the same window")
        periods[seconds] = label
    return windows


class ChainEntry(_Strict):
    id: StrictInt = Field(gt=0)
    name: Name


class AssetEntry(_Strict):
    chain: StrictInt
    asset: AssetId
    symbol: Annotated[str, Field(min_length=1, max_length=20), AfterValidator(display_safe)]
    decimals: StrictInt = Field(ge=0, le=77)
    per_tx: Amount | None = None
    windows: Windows = Field(default_factory=dict)
    price_usd: Amount | None = None

    @field_validator("per_tx")
    @classmethod
    def _per_tx_precision(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and "decimals" in info.data:
            parse_units(value, info.data["decimals"])
        return value

    @field_validator("windows")
    @classmethod
    def _windows_precision(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        return _check_windows(value, info.data["decimals"]) if "decimals" in info.data else value

    @field_validator("price_usd")
    @classmethod
    def _price_precision(cls, value: str | None) -> str | None:
        if value is not None:
            parse_units(value, USD_DECIMALS)
        return value


class AddressEntry(_Strict):
    chain: StrictInt
    address: Address
    name: Name


class ContractEntry(_Strict):
    chain: StrictInt
    address: Address
    name: Name
    selectors: tuple[Selector, ...] = ()

    @field_validator("selectors")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("a selector is listed twice")
        return value


NATIVE_DECIMALS = 18
"""`opaque_calls` bounds are written in the native coin, which has 18 decimals on every EVM chain."""


class OpaqueCallEntry(_Strict):
    """A function the signer cannot decode, accepted unseen on one contract, with a bound on its value."""

    chain: StrictInt
    address: Address
    selector: Selector
    max_value: Amount

    @field_validator("selector")
    @classmethod
    def _not_decoded(cls, value: str) -> str:
        known = KNOWN.get(bytes.fromhex(value[2:]))
        if known is not None:
            raise ValueError(
                f"{value} is {known.signature}, which the signer decodes: list it under contracts, "
                "not opaque_calls"
            )
        return value

    @field_validator("max_value")
    @classmethod
    def _max_value_precision(cls, value: str) -> str:
        parse_units(value, NATIVE_DECIMALS)
        return value


class SwapRouterEntry(_Strict):
    """A Uniswap v3 SwapRouter the agent may swap through, with the QuoterV2 the signer asks for its own
    quote and the WETH the router wraps ETH into."""

    chain: StrictInt
    address: Address
    quoter: Address
    weth: Address
    name: Name


class SwapAsset(_Strict):
    chain: StrictInt
    asset: AssetId


class SwapRules(_Strict):
    """`swaps:`: what the signer may swap on its own (docs/defi.md). Tokens are listed by address: a
    token whose symbol copies a listed one's is another token."""

    routers: tuple[SwapRouterEntry, ...] = Field(min_length=1)
    tokens_in: tuple[SwapAsset, ...] = ()
    tokens_out: tuple[SwapAsset, ...] = ()
    max_slippage_bps: StrictInt = Field(default=100, ge=0, le=5000)  # minimum out vs the signer's own quote
    max_price_impact_bps: StrictInt = Field(default=300, ge=0, le=5000)  # minimum out vs the policy's prices
    max_deadline_seconds: StrictInt = Field(default=600, gt=0, le=3600)


class DistributorEntry(_Strict):
    """A merkle distributor the agent may claim from (`claims.distributors`)."""

    chain: StrictInt
    address: Address
    token: AssetId
    name: Name


class ClaimRules(_Strict):
    distributors: tuple[DistributorEntry, ...] = Field(min_length=1)


class UsdLimits(_Strict):
    per_tx: Amount | None = None
    windows: Windows = Field(default_factory=dict)

    @field_validator("per_tx")
    @classmethod
    def _per_tx_precision(cls, value: str | None) -> str | None:
        if value is not None:
            parse_units(value, USD_DECIMALS)
        return value

    @field_validator("windows")
    @classmethod
    def _windows_precision(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_windows(value, USD_DECIMALS)


class RecipientRules(_Strict):
    unknown: Literal["escalate", "deny", "allow"] = "escalate"
    untrusted_provenance: Literal["escalate", "deny"] = "escalate"


class SourceRules(_Strict):
    skill: Literal["escalate", "policy"] = "escalate"
    heartbeat: Literal["deny", "escalate", "policy"] = "deny"


class RateLimits(_Strict):
    tx_per_hour: StrictInt = Field(default=30, ge=0)
    new_recipients_per_day: StrictInt = Field(default=5, ge=0)


# ---- precomputed views the evaluator reads ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    label: str
    seconds: int
    limit: int  # base units (micro-dollars for USD windows)


@dataclass(frozen=True, slots=True)
class AssetRule:
    symbol: str
    decimals: int
    per_tx: int | None
    windows: tuple[Window, ...]
    price: PriceQuote | None  # the policy's static price, if any


@dataclass(frozen=True, slots=True)
class SwapRouterInfo:
    name: str
    quoter: str
    weth: str


@dataclass(frozen=True, slots=True)
class SwapIndex:
    routers: dict[tuple[int, str], SwapRouterInfo]
    wethers: frozenset[tuple[int, str]]  # every listed router's WETH
    tokens_in: frozenset[tuple[int, str]]
    tokens_out: frozenset[tuple[int, str]]
    max_slippage_bps: int
    max_price_impact_bps: int
    max_deadline_seconds: int


@dataclass(frozen=True, slots=True)
class UsdRule:
    per_tx: int | None  # micro-dollars
    windows: tuple[Window, ...]


def _windows(windows: dict[str, str], decimals: int) -> tuple[Window, ...]:
    return tuple(
        Window(label, parse_period(label), parse_units(amount, decimals)) for label, amount in windows.items()
    )


class Policy(_Strict):
    version: Literal[1]
    chains: tuple[ChainEntry, ...] = Field(min_length=1)
    assets: tuple[AssetEntry, ...] = ()
    address_book: tuple[AddressEntry, ...] = ()
    spenders: tuple[AddressEntry, ...] = ()
    contracts: tuple[ContractEntry, ...] = ()
    opaque_calls: tuple[OpaqueCallEntry, ...] = ()
    swaps: SwapRules | None = None
    claims: ClaimRules | None = None
    usd: UsdLimits | None = None
    recipients: RecipientRules = RecipientRules()
    sources: SourceRules = SourceRules()
    over_limit: Literal["escalate", "deny"] = "escalate"
    rate_limits: RateLimits = RateLimits()

    _index: PolicyIndex | None = PrivateAttr(default=None)
    _hash: str = PrivateAttr(default="")

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        chain_ids = [c.id for c in self.chains]
        for i, chain_id in enumerate(chain_ids):
            if chain_id in chain_ids[:i]:
                raise ValueError(f"chains.{i}.id: chain {chain_id} is listed twice")
        sections: list[tuple[str, tuple[Any, ...], str]] = [
            ("assets", self.assets, "asset"),
            ("address_book", self.address_book, "address"),
            ("spenders", self.spenders, "address"),
            ("contracts", self.contracts, "address"),
        ]
        for section, entries, key in sections:
            seen: set[tuple[int, str]] = set()
            for i, entry in enumerate(entries):
                if entry.chain not in chain_ids:
                    raise ValueError(f"{section}.{i}.chain: chain {entry.chain} is not listed under chains")
                ident = (entry.chain, getattr(entry, key))
                if ident in seen:
                    raise ValueError(f"{section}.{i}: {ident[1]} on chain {ident[0]} is listed twice")
                seen.add(ident)
        seen_opaque: set[tuple[int, str, str]] = set()
        for i, entry in enumerate(self.opaque_calls):
            if entry.chain not in chain_ids:
                raise ValueError(f"opaque_calls.{i}.chain: chain {entry.chain} is not listed under chains")
            opaque = (entry.chain, entry.address, entry.selector)
            if opaque in seen_opaque:
                raise ValueError(
                    f"opaque_calls.{i}: {entry.selector} on {entry.address} (chain {entry.chain}) "
                    "is listed twice"
                )
            seen_opaque.add(opaque)
        for i, d in enumerate(self.claims.distributors if self.claims is not None else ()):
            if d.chain not in chain_ids:
                raise ValueError(f"claims.distributors.{i}.chain: chain {d.chain} is not listed under chains")
        if self.swaps is not None:
            listed = {(a.chain, a.asset) for a in self.assets}
            routers: set[tuple[int, str]] = set()
            for i, router in enumerate(self.swaps.routers):
                if router.chain not in chain_ids:
                    raise ValueError(
                        f"swaps.routers.{i}.chain: chain {router.chain} is not listed under chains"
                    )
                if (router.chain, router.address) in routers:
                    raise ValueError(
                        f"swaps.routers.{i}: {router.address} on chain {router.chain} is listed twice"
                    )
                routers.add((router.chain, router.address))
            for side in ("tokens_in", "tokens_out"):
                for i, ref in enumerate(getattr(self.swaps, side)):
                    if (ref.chain, ref.asset) not in listed:
                        raise ValueError(
                            f"swaps.{side}.{i}: {ref.asset} on chain {ref.chain} is not under assets "
                            "(a swapped token needs its symbol, decimals and limits there)"
                        )
        return self

    def model_post_init(self, __context: Any) -> None:
        assets = {}
        for a in self.assets:
            price = (
                None
                if a.price_usd is None
                else PriceQuote(parse_units(a.price_usd, USD_DECIMALS), a.decimals)
            )
            per_tx = None if a.per_tx is None else parse_units(a.per_tx, a.decimals)
            assets[(a.chain, a.asset)] = AssetRule(
                a.symbol, a.decimals, per_tx, _windows(a.windows, a.decimals), price
            )
        names = {}
        # Address book names win over spender names, which win over contract names.
        named: tuple[AddressEntry | ContractEntry, ...] = (
            *self.contracts,
            *self.spenders,
            *self.address_book,
        )
        for entry in named:
            names[(entry.chain, entry.address)] = entry.name
        lookalikes: dict[tuple[int, str, str], set[str]] = {}
        for entry in named:  # a set per look-alike key: the order does not matter
            lookalikes.setdefault((entry.chain, *lookalike_key(entry.address)), set()).add(entry.address)
        swaps = None
        if self.swaps is not None:
            rules = self.swaps
            for r in rules.routers:
                names.setdefault((r.chain, r.address), r.name)
                names.setdefault((r.chain, r.weth), f"WETH of {r.name}")
                lookalikes.setdefault((r.chain, *lookalike_key(r.address)), set()).add(r.address)
            swaps = SwapIndex(
                routers={
                    (r.chain, r.address): SwapRouterInfo(r.name, r.quoter, r.weth) for r in rules.routers
                },
                wethers=frozenset((r.chain, r.weth) for r in rules.routers),
                tokens_in=frozenset((a.chain, a.asset) for a in rules.tokens_in),
                tokens_out=frozenset((a.chain, a.asset) for a in rules.tokens_out),
                max_slippage_bps=rules.max_slippage_bps,
                max_price_impact_bps=rules.max_price_impact_bps,
                max_deadline_seconds=rules.max_deadline_seconds,
            )
        distributors: dict[tuple[int, str], tuple[str, str]] = {}
        for d in self.claims.distributors if self.claims is not None else ():
            names.setdefault((d.chain, d.address), d.name)
            lookalikes.setdefault((d.chain, *lookalike_key(d.address)), set()).add(d.address)
            distributors[(d.chain, d.address)] = (d.name, d.token)
        usd = None
        if self.usd is not None:
            usd = UsdRule(
                None if self.usd.per_tx is None else parse_units(self.usd.per_tx, USD_DECIMALS),
                _windows(self.usd.windows, USD_DECIMALS),
            )
        seconds = {w.seconds for rule in assets.values() for w in rule.windows}
        if usd is not None:
            seconds |= {w.seconds for w in usd.windows}
        self._index = PolicyIndex(
            chains={c.id: c.name for c in self.chains},
            assets=assets,
            names=names,
            book=frozenset((e.chain, e.address) for e in self.address_book),
            spenders=frozenset((e.chain, e.address) for e in self.spenders),
            contracts={
                (c.chain, c.address): frozenset(bytes.fromhex(s[2:]) for s in c.selectors)
                for c in self.contracts
            },
            lookalikes={k: tuple(sorted(v)) for k, v in lookalikes.items()},
            usd=usd,
            window_seconds=frozenset(seconds),
            opaque={
                (o.chain, o.address, bytes.fromhex(o.selector[2:])): parse_units(o.max_value, NATIVE_DECIMALS)
                for o in self.opaque_calls
            },
            swaps=swaps,
            distributors=distributors,
        )
        dumped = self.model_dump(mode="json")
        if not self.opaque_calls:  # added later: a policy without any keeps the hash it always had
            del dumped["opaque_calls"]
        if self.swaps is None:  # likewise
            del dumped["swaps"]
        if self.claims is None:
            del dumped["claims"]
        canonical = json.dumps(dumped, sort_keys=True, separators=(",", ":"))
        self._hash = hashlib.sha256(canonical.encode()).hexdigest()

    # ---- queries -----------------------------------------------------------------------------

    # Read straight from pydantic's slot of private values: `self._index` goes through the model's
    # `__getattr__`, about 2 us, and both are read on every request (evaluate, the audit record).

    @property
    def index(self) -> PolicyIndex:
        """The precomputed lookups (policies.index); take it once per request, not per lookup."""
        index: PolicyIndex | None = self.__pydantic_private__["_index"]  # type: ignore[index]
        assert index is not None
        return index

    def window_seconds(self) -> set[int]:
        """Every rolling-window length the ledger must sum for this policy."""
        return set(self.index.window_seconds)

    def policy_hash(self) -> str:
        """sha256 of the canonical JSON dump: names the exact policy a decision ran under."""
        digest: str = self.__pydantic_private__["_hash"]  # type: ignore[index]
        return digest
