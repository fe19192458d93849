"""Tier 3 in the signer: grants on record, and turning an allowed call into `redeemDelegations`.

The off-chain policy decides first (signer.engine). For a chain with a live grant, an allowed call is
then carried out as the session key calling `redeemDelegations` on the DelegationManager, so the
main account pays and the on-chain caveats are the ceiling. Before signing, the signer reads what is
left on chain (period allowance, lifetime total, call count, disabled flag, the main account's
NonceEnforcer nonce, block time, the account's 7702 code and every contract's code hash) and refuses
with the on-chain rule named, instead of sending a transaction that would revert. A grant whose nonce
the main key moved (revoke or freeze, with or without this signer) is ended for good: refused at
redeem (`onchain.revoked`) and replaced by the next grant.

Grants are authority-bearing state: `tier3_grants` says which delegations the session key may
redeem. Every row is re-verified when installed and when loaded (signature, enforcers, caveats
against the current policy), so an edited row cannot widen what is signed; a MAC over the table is
the signer state-MAC work's job (docs/tier3.md).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from policies.intent import NATIVE, Decoded, Transfer
from policies.kernel.keccak import keccak256
from policies.model import Policy
from policies.units import format_amount
from signer.chain import Chain, ChainError
from signer.store import tier3_grants as grant_store
from signer.store.db import Connection
from signer.wire.delegation import (
    Delegation,
    DelegationError,
    available_amount_calldata,
    call_counts_calldata,
    current_nonce_calldata,
    disabled_calldata,
    erc20_transfer_calldata,
    recover,
    redeem_calldata,
    spent_calldata,
)
from signer.wire.grants import (
    CONTRACT,
    ERC20_PERIOD,
    ERC20_TOTAL,
    LIMITED_CALLS,
    NATIVE_PERIOD,
    NATIVE_TOTAL,
    NONCE,
    SWAP,
    TOKEN_MOVING,
    GrantError,
    Lane,
    check_lane,
    check_shared_native,
    describe,
    parse_lane,
)
from signer.wire.replies import Tier3GrantJson
from signer.wire.settings import DelegationContracts
from signer.wire.swap_template import decode_exact_input_single, swap_call

LIVE = "live"
REVOKED = "revoked"
DESIGNATION_PREFIX = bytes.fromhex("ef0100")  # EIP-7702 delegation indicator


@dataclass(frozen=True, slots=True)
class Grant:
    grant_id: str
    chain_id: int
    account: str  # the main account: every delegation's delegator
    delegate: str  # the session key's address
    delegations: tuple[Delegation, ...]
    lanes: tuple[Lane, ...]
    status: str
    created_at: float

    @property
    def nonce(self) -> int:
        """The NonceEnforcer nonce every lane carries (verify_grant checks they agree)."""
        return self.lanes[0].nonce

    def lane_for(self, asset: str) -> tuple[Delegation, Lane] | None:
        for delegation, lane in zip(self.delegations, self.lanes):
            if lane.asset == asset and asset not in (CONTRACT, SWAP):
                return delegation, lane
        return None

    def swap_lane_for(self, router: str) -> tuple[Delegation, Lane] | None:
        for delegation, lane in zip(self.delegations, self.lanes):
            if lane.asset == SWAP and lane.targets == (router,):
                return delegation, lane
        return None

    def contract_lane_for(self, target: str) -> tuple[Delegation, Lane] | None:
        for delegation, lane in zip(self.delegations, self.lanes):
            if lane.asset == CONTRACT and lane.targets == (target,):
                return delegation, lane
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "grant_id": self.grant_id,
            "chain_id": self.chain_id,
            "account": self.account,
            "delegate": self.delegate,
            "status": self.status,
            "created_at": self.created_at,
            "delegation_hashes": ["0x" + d.struct_hash().hex() for d in self.delegations],
            "lanes": [_lane_json(lane) for lane in self.lanes],
        }


def _lane_json(lane: Lane) -> dict[str, Any]:
    return {
        "asset": lane.asset,
        "targets": list(lane.targets),
        "recipient": lane.recipient,
        "value_lte": str(lane.value_lte),
        "period_amount": str(lane.period_amount),
        "period_seconds": lane.period_seconds,
        "period_start": lane.period_start,
        "expires_at": lane.expires_at,
        "call_limit": lane.call_limit,
        "selectors": ["0x" + s.hex() for s in lane.selectors],
        "nonce": str(lane.nonce),
        "total": str(lane.total),
        "token_per_tx": str(lane.token_per_tx),
        "token_in": lane.token_in,
        "token_out": lane.token_out,
        "fee": lane.fee,
    }


@dataclass(frozen=True, slots=True)
class Refusal:
    rule_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Redeem:
    """The transaction the session key sends instead of the call itself."""

    to: str
    value: int
    data: bytes
    grant_id: str


def verify_grant(
    delegations: list[Delegation],
    *,
    chain_id: int,
    contracts: DelegationContracts,
    policy: Policy,
    delegate: str,
    not_after: float,
    taken_at: float | None = None,
) -> tuple[str, tuple[Lane, ...]]:
    """Everything the signer requires of a grant before it will redeem it; returns (account, lanes)."""
    if not delegations:
        raise GrantError("a grant needs at least one delegation")
    account = delegations[0].delegator
    enforcers = contracts.enforcer_map()
    lanes = []
    seen_assets: set[str] = set()
    for d in delegations:
        if d.delegator != account:
            raise GrantError("every delegation of a grant must come from the same main account")
        if d.delegate != delegate.lower():
            raise GrantError(f"the grant is for {d.delegate}, not this chain's session key {delegate}")
        if d.authority != b"\xff" * 32:
            raise GrantError("only root delegations (from the main account itself) are accepted")
        try:
            signer_address = recover(d.signing_digest(chain_id, contracts.manager.lower()), d.signature)
        except DelegationError as exc:
            raise GrantError(str(exc)) from None
        if signer_address != account:
            raise GrantError("a delegation's signature is not the main account's")
        lane = parse_lane(d, enforcers)
        check_lane(lane, policy, chain_id, not_after=not_after, taken_at=taken_at)
        if lane.asset == CONTRACT:
            _check_contract_target(lane.targets[0], account, contracts)
        key = lane.targets[0] if lane.asset in (CONTRACT, SWAP) else lane.asset
        if key in seen_assets:
            raise GrantError(f"two lanes for {key}: their limits would add up")
        seen_assets.add(key)
        lanes.append(lane)
    if len({lane.nonce for lane in lanes}) != 1:
        raise GrantError("the grant's lanes carry different NonceEnforcer nonces: one grant, one nonce")
    check_shared_native(lanes, policy, chain_id, taken_at=taken_at)
    return account, tuple(lanes)


def _check_contract_target(target: str, account: str, contracts: DelegationContracts) -> None:
    """A contract lane may never call the grant's own machinery as the main account: the account itself
    (its `execute` runs anything when the caller is itself), the DelegationManager (`enableDelegation`
    would undo a revocation), the delegator implementation or an enforcer."""
    machinery = {
        account,
        contracts.manager.lower(),
        contracts.stateless_delegator.lower(),
        *contracts.enforcer_map().values(),
    }
    if target in machinery:
        raise GrantError(
            f"a contract lane may not call {target}: it is the main account or part of the "
            "Delegation Framework, and a call to it as the main account could undo the grant's limits"
        )


class Tier3:
    """Live grants per chain (at most one), and the on-chain checks before a redeem is signed."""

    def __init__(self, chains: dict[int, Chain]) -> None:
        self.chains = chains
        self._grants: dict[str, Grant] = {}
        self._tier3_chains: set[int] = set()  # chains that ever had a grant: they never fall back to Tier 2
        self._code_checked: set[tuple[int, str]] = set()
        self._claimed: set[int] = set()  # chains with a grant being written right now

    @staticmethod
    def contracts(chain: Chain) -> DelegationContracts | None:
        return chain.settings.delegation

    # ---- state ---------------------------------------------------------------------------------

    def load(
        self, conn: Connection, policy: Policy, session_addresses: dict[int, tuple[str, float]]
    ) -> list[str]:
        """Load live grants, re-verifying each; one that no longer verifies is skipped (and named)."""
        problems = []
        self._tier3_chains |= grant_store.chains_with_grants(conn)
        for grant_id, chain_id, raw, status, created in grant_store.grants_in_status(conn, LIVE):
            try:
                grant = self.build(
                    grant_id,
                    chain_id,
                    [Delegation.from_json(d) for d in json.loads(raw)],
                    policy,
                    session_addresses,
                    created,
                )
            except (GrantError, DelegationError, ValueError) as exc:
                problems.append(f"grant {grant_id} is not used: {exc}")
                continue
            self._grants[grant_id] = grant
        return problems

    def build(
        self,
        grant_id: str,
        chain_id: int,
        delegations: list[Delegation],
        policy: Policy,
        session_addresses: dict[int, tuple[str, float]],
        created_at: float,
    ) -> Grant:
        chain = self.chains.get(chain_id)
        if chain is None or chain.settings.delegation is None:
            raise GrantError(f"chain {chain_id} has no Tier 3 contracts in config.yaml (chains[].delegation)")
        session = session_addresses.get(chain_id)
        if session is None:
            raise GrantError(f"chain {chain_id} has no active session key to grant to")
        account, lanes = verify_grant(
            delegations,
            chain_id=chain_id,
            contracts=chain.settings.delegation,
            policy=policy,
            delegate=session[0],
            not_after=session[1],
            taken_at=created_at,
        )
        return Grant(grant_id, chain_id, account, session[0], tuple(delegations), lanes, LIVE, created_at)

    @staticmethod
    def new_id() -> str:
        return "gr_" + secrets.token_hex(8)

    @staticmethod
    def insert(conn: Connection, grant: Grant) -> None:
        grant_store.insert_grant(
            conn,
            grant.grant_id,
            grant.chain_id,
            grant.account,
            grant.delegate,
            json.dumps([d.to_json() for d in grant.delegations]),
            LIVE,
            grant.created_at,
        )

    @staticmethod
    def mark_revoked(conn: Connection, grant_id: str, now: float) -> None:
        grant_store.end_grant(conn, grant_id, REVOKED, now)

    def install(self, grant: Grant) -> None:
        self._grants[grant.grant_id] = grant
        self._tier3_chains.add(grant.chain_id)

    def is_tier3(self, chain_id: int) -> bool:
        """Once granted, a chain stays Tier 3: a revoked grant never falls back to the session key's float."""
        return chain_id in self._tier3_chains

    def claim(self, chain_id: int) -> bool:
        """Reserve the chain's one grant slot while a grant is checked and written; False if taken."""
        if chain_id in self._claimed:
            return False
        self._claimed.add(chain_id)
        return True

    def release(self, chain_id: int) -> None:
        self._claimed.discard(chain_id)

    def drop(self, grant_id: str) -> Grant | None:
        return self._grants.pop(grant_id, None)

    def live(self, chain_id: int) -> Grant | None:
        return next((g for g in self._grants.values() if g.chain_id == chain_id), None)

    def grants(self) -> list[Grant]:
        return sorted(self._grants.values(), key=lambda g: g.created_at)

    # ---- the redeem --------------------------------------------------------------------------------

    async def plan(self, decoded: Decoded, grant: Grant, session_address: str) -> Redeem | Refusal:
        """The redeemDelegations call for an allowed transfer, or the on-chain rule that would refuse it."""
        chain = self.chains[grant.chain_id]
        contracts = chain.settings.delegation
        assert contracts is not None
        if grant.delegate != session_address.lower():
            return Refusal(
                "tier3.grant_mismatch", "the live grant is for another session key: grant the new key"
            )
        call = decoded.call
        if grant.swap_lane_for(call.to) is not None:  # the router: only the swap lane's one call
            return await self._plan_swap(call.to, call.value, call.data, grant)
        if len(call.data) >= 4 and call.data[:4] not in TOKEN_MOVING:  # a contract call: its own lane
            return await self._plan_contract_call(call.to, call.value, call.data, grant)
        transfers = [a for a in decoded.actions if isinstance(a, Transfer)]
        if len(transfers) != 1:  # the exact calldata is matched below
            return Refusal(
                "tier3.not_a_transfer", "Tier 3 grants carry single transfers only (native or ERC-20)"
            )
        transfer = transfers[0]
        found = grant.lane_for(transfer.asset)
        if found is None:
            return Refusal("tier3.no_lane", f"the grant has no lane for {transfer.asset}")
        delegation, lane = found
        expected = (
            b"" if lane.asset == NATIVE else erc20_transfer_calldata(transfer.recipient, transfer.amount)
        )
        if (
            call.data != expected
            or call.to != (transfer.recipient if lane.asset == NATIVE else lane.asset)
            or (lane.asset != NATIVE and call.value != 0)
        ):
            return Refusal(
                "tier3.not_a_transfer", "Tier 3 redeems plain transfers only (no transferFrom, no calls)"
            )
        if lane.asset == NATIVE:
            target, value, data = transfer.recipient, transfer.amount, b""
            if transfer.recipient not in lane.targets:
                return Refusal("onchain.allowed_targets", "the grant does not allow this recipient")
            if transfer.amount > lane.value_lte:
                return Refusal(
                    "onchain.value_lte", f"above the grant's per-transaction cap of {lane.value_lte} wei"
                )
        else:
            target, value, data = lane.asset, 0, erc20_transfer_calldata(transfer.recipient, transfer.amount)
            if transfer.recipient != lane.recipient:
                return Refusal("onchain.allowed_calldata", "the grant pins another recipient for this token")
        return await self._redeem(grant, delegation, lane, transfer.amount, target, value, data)

    async def _plan_swap(self, router: str, value: int, data: bytes, grant: Grant) -> Redeem | Refusal:
        """An allowed ETH-in exactInputSingle (the policy checked it as on Tier 2: quote, slippage, deadline,
        listed tokens) carried as the swap lane's one call, multicall([it, refundETH()]). Anything the
        lane's caveats would refuse on chain is refused here by name first."""
        found = grant.swap_lane_for(router)
        assert found is not None
        delegation, lane = found
        swap = decode_exact_input_single(data)
        if swap is None:
            return Refusal(
                "onchain.allowed_methods",
                "a Tier 3 swap lane carries one exactInputSingle with ETH in, nothing else on the router "
                "(AllowedMethods, AllowedCalldata)",
            )
        if (swap.token_in, swap.token_out, swap.fee) != (lane.token_in, lane.token_out, lane.fee):
            return Refusal(
                "onchain.allowed_calldata",
                f"the grant's swap lane buys {lane.token_out} with ETH in the {lane.fee / 10000:g}% pool only "
                "(AllowedCalldata)",
            )
        if swap.recipient != grant.account:
            return Refusal(
                "onchain.allowed_calldata",
                f"the swap lane pays only the main account {grant.account} (AllowedCalldata)",
            )
        if swap.price_limit != 0 or value != swap.amount_in:
            return Refusal(
                "onchain.allowed_calldata",
                "a Tier 3 swap sends exactly its input as ETH and sets no price limit",
            )
        if value > lane.value_lte:
            return Refusal(
                "onchain.value_lte",
                f"the swap sends {value} wei, above the grant's {lane.value_lte} wei per transaction (ValueLte)",
            )
        return await self._redeem(grant, delegation, lane, value, router, value, swap_call(swap))

    async def _plan_contract_call(self, to: str, value: int, data: bytes, grant: Grant) -> Redeem | Refusal:
        """An allowed contract call through its contract lane: AllowedTargets, AllowedMethods and ValueLte
        are checked here first, so a call the chain would refuse is refused by name instead."""
        found = grant.contract_lane_for(to)
        if found is None:
            return Refusal(
                "onchain.allowed_targets",
                f"the grant has no contract lane for {to}: the chain would refuse the call (AllowedTargets)",
            )
        delegation, lane = found
        if data[:4] not in lane.selectors:
            return Refusal(
                "onchain.allowed_methods",
                f"the grant does not allow 0x{data[:4].hex()} on {to} (AllowedMethods)",
            )
        if value > lane.value_lte:
            return Refusal(
                "onchain.value_lte",
                f"the call sends {value} wei, above the grant's {lane.value_lte} wei "
                "for this contract (ValueLte)",
            )
        return await self._redeem(grant, delegation, lane, 0, to, value, data)

    async def _redeem(
        self,
        grant: Grant,
        delegation: Delegation,
        lane: Lane,
        amount: int,
        target: str,
        value: int,
        data: bytes,
    ) -> Redeem | Refusal:
        chain = self.chains[grant.chain_id]
        contracts = chain.settings.delegation
        assert contracts is not None
        try:
            mismatch = await self._check_code(chain, contracts)
            if mismatch is not None:
                return Refusal(
                    "tier3.code_hash",
                    f"the code at {mismatch} is not the configured contract (its code "
                    "hash differs): check chains[].delegation in config.yaml",
                )
            if not await self._delegated(chain, contracts, grant.account):
                return Refusal(
                    "onchain.frozen",
                    "the main account is no longer delegated to the "
                    "EIP7702StatelessDeleGator (frozen): no grant can be redeemed",
                )
            ended = await self.ended_on_chain(grant)
            if ended is not None:
                return Refusal("onchain.revoked", ended)
            refusal = await self._check_state(chain, contracts, delegation, lane, amount)
        except ChainError as exc:
            return Refusal("tier3.chain_unreadable", f"could not read the grant's state on chain: {exc}")
        if refusal is not None:
            return refusal
        return Redeem(
            contracts.manager.lower(), 0, redeem_calldata([delegation], target, value, data), grant.grant_id
        )

    async def preflight(self, grant: Grant) -> str | None:
        """Before a grant is accepted: the contracts are the pinned code and the main account is delegated
        to the EIP7702StatelessDeleGator. Returns what is wrong, in words, or None."""
        chain = self.chains[grant.chain_id]
        contracts = chain.settings.delegation
        assert contracts is not None
        try:
            mismatch = await self._check_code(chain, contracts)
            if mismatch is not None:
                return f"the code at {mismatch} is not the configured contract (its code hash differs)"
            if not await self._delegated(chain, contracts, grant.account):
                return (
                    f"the main account {grant.account} is not delegated to the EIP7702StatelessDeleGator: "
                    "run `owlia wallet authorize` first"
                )
            current = await self.current_nonce(chain, contracts, grant.account)
            if current != grant.nonce:
                return (
                    f"the grant was signed at nonce {grant.nonce} but the main account's nonce on chain is "
                    f"{current} (NonceEnforcer): a revoked grant never comes back; sign a new grant"
                )
        except ChainError as exc:
            return f"could not read the chain: {exc}"
        return None

    @staticmethod
    async def current_nonce(chain: Chain, contracts: DelegationContracts, account: str) -> int:
        """The main account's NonceEnforcer nonce for the pinned DelegationManager: every delegation
        signed at another nonce is dead on chain."""
        enforcer = contracts.enforcer_map().get(NONCE)
        if enforcer is None:
            raise ChainError(
                "config.yaml names no NonceEnforcer for this chain: run `owlia chain dev` again or add it"
            )
        answer = await chain.call(enforcer, current_nonce_calldata(contracts.manager.lower(), account))
        if len(answer) != 32:
            raise ChainError("the NonceEnforcer gave a malformed answer")
        return int.from_bytes(answer, "big")

    async def ended_on_chain(self, grant: Grant) -> str | None:
        """Why the chain no longer honours `grant`, in words, or None while it does. The main key ends
        every grant at once with `incrementNonce` (`owlia wallet revoke` and `freeze` do), signer or no
        signer; a grant ended that way is over for good, here too."""
        chain = self.chains[grant.chain_id]
        contracts = chain.settings.delegation
        assert contracts is not None
        current = await self.current_nonce(chain, contracts, grant.account)
        if current != grant.nonce:
            return (
                f"the main key revoked every grant on chain (its NonceEnforcer nonce moved from {grant.nonce} "
                f"to {current}): this grant can never be redeemed again; sign a new grant from the companion"
            )
        return None

    @staticmethod
    async def _delegated(chain: Chain, contracts: DelegationContracts, account: str) -> bool:
        """Is `account`'s code the EIP-7702 designation of the pinned StatelessDeleGator? Asked before
        a grant is accepted and again before each redeem (a main account can be frozen at any time)."""
        return await chain.code(account) == DESIGNATION_PREFIX + bytes.fromhex(
            contracts.stateless_delegator[2:]
        )

    async def _check_code(self, chain: Chain, contracts: DelegationContracts) -> str | None:
        """The first contract whose code is not what config.yaml pinned, or None; checked once per process."""
        for address in (contracts.manager, contracts.stateless_delegator, *contracts.enforcers.values()):
            key = (chain.settings.id, address.lower())
            if key in self._code_checked:
                continue
            digest = "0x" + keccak256(await chain.code(address)).hex()
            if digest != contracts.code_hash(address):
                return address
            self._code_checked.add(key)
        return None

    async def _check_state(
        self, chain: Chain, contracts: DelegationContracts, delegation: Delegation, lane: Lane, amount: int
    ) -> Refusal | None:
        state = await self.remaining(chain, contracts, delegation, lane)
        if state["disabled"]:
            return Refusal("onchain.disabled", "the grant was revoked on chain (disableDelegation)")
        if state["now"] >= lane.expires_at:
            return Refusal("onchain.expired", "the grant expired on chain (Timestamp)")
        if lane.call_limit is not None and state["calls_left"] == 0:
            return Refusal("onchain.limited_calls", "the grant's call count is used up (LimitedCalls)")
        if lane.asset not in (CONTRACT, NATIVE, SWAP) and amount > lane.token_per_tx:
            return Refusal(
                "onchain.erc20_tx_cap",
                f"{amount} base units is above the grant's per-transaction cap of "
                f"{lane.token_per_tx} (ERC20BalanceChange)",
            )
        native = lane.asset in (NATIVE, SWAP)
        if lane.asset != CONTRACT and amount > state["available"]:
            rule = "onchain.native_period" if native else "onchain.erc20_period"
            return Refusal(
                rule,
                f"only {state['available']} base units are left in this on-chain period "
                f"({'NativeTokenPeriodTransfer' if native else 'ERC20PeriodTransfer'})",
            )
        if lane.asset != CONTRACT and amount > state["left_in_total"]:
            rule = "onchain.native_total" if native else "onchain.erc20_total"
            return Refusal(
                rule,
                f"only {state['left_in_total']} base units are left of the grant's lifetime total "
                f"({'NativeTokenTransferAmount' if native else 'ERC20TransferAmount'})",
            )
        return None

    async def remaining(
        self, chain: Chain, contracts: DelegationContracts, delegation: Delegation, lane: Lane
    ) -> dict[str, Any]:
        """What the chain says is left of one lane right now."""
        manager = contracts.manager.lower()
        enforcers = contracts.enforcer_map()
        digest = delegation.struct_hash()
        disabled = int.from_bytes(await chain.call(manager, disabled_calldata(digest)) or b"\0", "big") != 0
        calls_left = None
        if lane.call_limit is not None:
            used = int.from_bytes(
                await chain.call(enforcers[LIMITED_CALLS], call_counts_calldata(manager, digest)), "big"
            )
            calls_left = max(lane.call_limit - used, 0)
        now = await chain.latest_timestamp()
        if lane.asset == CONTRACT:  # no period: its value is bounded per call (and by the call count)
            return {
                "disabled": disabled,
                "available": None,
                "period": None,
                "period_ends_at": None,
                "calls_left": calls_left,
                "now": now,
                "left_in_total": None,
            }
        native = lane.asset in (NATIVE, SWAP)  # a swap lane spends ETH: the native enforcers count it
        total_enforcer = enforcers[NATIVE_TOTAL if native else ERC20_TOTAL]
        spent_raw = await chain.call(total_enforcer, spent_calldata(manager, digest))
        if len(spent_raw) != 32:
            raise ChainError("the lifetime-total enforcer gave a malformed answer")
        left_in_total = max(lane.total - int.from_bytes(spent_raw, "big"), 0)
        period_name = NATIVE_PERIOD if native else ERC20_PERIOD
        period_caveat = next(c for c in delegation.caveats if c.enforcer == enforcers[period_name])
        answer = await chain.call(
            enforcers[period_name], available_amount_calldata(digest, manager, period_caveat.terms)
        )
        if len(answer) < 96:
            raise ChainError("the period enforcer gave a malformed answer")
        available = int.from_bytes(answer[:32], "big")
        period_index = int.from_bytes(answer[64:96], "big")
        return {
            "disabled": disabled,
            "available": available,
            "period": period_index,
            "period_ends_at": lane.period_start + period_index * lane.period_seconds,
            "calls_left": calls_left,
            "now": now,
            "left_in_total": left_in_total,
        }

    async def status(self, policy: Policy) -> tuple[Tier3GrantJson, ...]:
        out = []
        for grant in self.grants():
            chain = self.chains[grant.chain_id]
            contracts = chain.settings.delegation
            lanes = []
            for delegation, lane in zip(grant.delegations, grant.lanes):
                entry = {**_lane_json(lane), "words": describe(lane, policy, grant.chain_id)}
                try:  # a policy tightened since the grant leaves the on-chain ceiling above it: say so
                    check_lane(lane, policy, grant.chain_id, not_after=lane.expires_at)
                    entry["wider_than_policy"] = None
                except GrantError as exc:
                    entry["wider_than_policy"] = f"{exc}: rotate the grant (`owlia wallet rotate`)"
                try:
                    assert contracts is not None
                    state = await self.remaining(chain, contracts, delegation, lane)
                    rule = policy.index.assets.get(
                        (grant.chain_id, NATIVE if lane.asset == SWAP else lane.asset)
                    )
                    left = None if state["available"] is None else str(state["available"])
                    entry |= {
                        "left_in_period": left,
                        "disabled": state["disabled"],
                        "left_in_total": None
                        if state["left_in_total"] is None
                        else str(state["left_in_total"]),
                        "period_ends_at": state["period_ends_at"],
                        "calls_left": state["calls_left"],
                        "left_words": format_amount(state["available"], rule.decimals, rule.symbol)
                        if rule and left is not None
                        else left,
                        "total_left_words": format_amount(state["left_in_total"], rule.decimals, rule.symbol)
                        if rule and state["left_in_total"] is not None
                        else None,
                    }
                except ChainError as exc:
                    entry["error"] = str(exc)
                lanes.append(entry)
            try:
                ended = await self.ended_on_chain(grant)
            except ChainError as exc:
                ended = None
                lanes = [{**lane, "error": lane.get("error") or str(exc)} for lane in lanes]
            out.append(
                Tier3GrantJson.model_validate(
                    {
                        **grant.to_json(),
                        "lanes": lanes,
                        "ended_on_chain": ended,
                        "delegations": [d.to_json() for d in grant.delegations],
                    }
                )
            )
        return tuple(out)
