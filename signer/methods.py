"""The RPC method table: which scope each method needs and what it does.

Nothing here returns key material: session keys are described by id and address only.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from pydantic import BaseModel, ValidationError

from policies.loader import PolicyError, parse_policy
from signer import __version__
from signer.auth import Client
from signer.chain import Chain, ChainError
from signer.clock import SignerClock, steady
from signer.engine import Engine
from signer.server import Handler, Method
from signer.store import audit as audit_store, requests as request_store
from signer.store.db import Connection, IntegrityError
from signer.tier1.approvals import Approvals
from signer.tier1.home import Home
from signer.tier1.policy_edit import PhoneEdits
from signer.tier1.policy_live import PolicyKeeper
from signer.tier1.topup import request_topup, room_under_cap
from signer.tier2.session_keys import RETIRED, REVOKED
from signer.tier3.grant_offers import GrantOffers
from signer.wire.messages import HOME_VIEW_DOMAIN
from signer.wire.protocol import PROTOCOL_VERSION, ErrorCode, KeyStatus, RpcError, Scope
from signer.wire.replies import (
    AddressesReply,
    ApprovalsStateReply,
    ApprovalsWaitReply,
    AuditTailReply,
    AuditVerifyReply,
    BalanceReply,
    DeviceReply,
    DevicesReply,
    HomeReply,
    InFlight,
    PolicyCheckReply,
    PolicyEditReply,
    PolicyReloadReply,
    PolicyValidateReply,
    PolicyViewReply,
    SessionKeyCreateReply,
    SessionKeyJson,
    SessionKeyRetireReply,
    SessionKeysReply,
    SignerState,
    StatusReply,
    Tier3GrantReply,
    Tier3OfferReply,
    Tier3RevokeReply,
    Tier3StatusReply,
    TopUpReply,
)
from signer.wire.requests import (
    ApprovalAnswerParams,
    ApprovalsWaitParams,
    AuditTailParams,
    BalanceParams,
    DeviceRefParams,
    DeviceRevokeParams,
    FreezeParams,
    PairBeginParams,
    PairCompleteParams,
    PolicyCheckParams,
    PolicyEditParams,
    PolicyValidateParams,
    SessionKeyCreateParams,
    SessionKeyRefParams,
    SignRequestParams,
    SignStatusParams,
    StateParams,
    Tier3AnswerParams,
    Tier3GrantParams,
    Tier3OfferParams,
    Tier3RevokeParams,
    TopUpParams,
    TopUpRequestParams,
)
from signer.wire.settings import SignerSettings
from signer.wire.sign_replies import PolicyShowReply, Reply, SignReply, dump_reply

if TYPE_CHECKING:
    from signer.tier3.grants import Tier3  # loaded only where a chain has Tier 3 (signer.daemon)

R = TypeVar("R", bound=Reply)

WriterUnit = Callable[[Connection], object]
"""What an admin change writes, inside the writer's transaction, beside its request row (what it
returns is not used)."""
Change = tuple[WriterUnit, Callable[[], None]]
"""An admin change: what it writes, and what it installs in memory once that is committed."""
STARTED = steady()  # uptime is real time elapsed, whatever is done to the system clock


def bridge_only(handler: Handler) -> Handler:
    """Bridge methods sit outside the read < sign < admin ladder: only `bridge` (or admin) may call them."""

    def check(client: Client, params: Any) -> Any:
        if client.scope not in (Scope.BRIDGE, Scope.ADMIN):
            raise RpcError(
                ErrorCode.FORBIDDEN,
                f"this method needs the 'bridge' scope; this client has {client.scope.value!r}",
            )
        return handler(client, params)

    return check


async def typed(model: type[R], built: Awaitable[Mapping[str, object]] | Mapping[str, object]) -> R:
    """A reply some module built as JSON, checked against its model where it leaves the signer."""
    return model.model_validate(await built if inspect.isawaitable(built) else built)


def clock_lag(clock: Callable[[], float]) -> float:
    """How far the system clock is ahead of the signer's (signer.clock); 0 for a plain clock (tests)."""
    return clock.lag() if isinstance(clock, SignerClock) else 0.0


class CompanionReach(TypedDict):
    main_account: str | None
    companions: int  # live paired devices


class Methods:
    def __init__(
        self,
        engine: Engine,
        settings: SignerSettings,
        approvals: Approvals | None = None,
        policies: PolicyKeeper | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.approvals = approvals
        self.policies = policies
        self.offers = GrantOffers(approvals, engine) if approvals is not None else None

    def table(self) -> dict[str, Method]:
        table = self._core()
        if self.approvals is not None:
            table |= self._tier1(self.approvals)
        if self.policies is not None:
            table["policy.reload"] = Method(Scope.ADMIN, None, self.policy_reload)
        if self.policies is not None and self.approvals is not None:
            table |= self._phone_policy(PhoneEdits(self.approvals, self.policies))
        return table

    @staticmethod
    def _phone_policy(edits: PhoneEdits) -> dict[str, Method]:
        """Limits and the address book from the phone (signer.tier1.policy_edit)."""
        return {
            "policy.view": Method(
                Scope.BRIDGE, None, bridge_only(lambda c, p: typed(PolicyViewReply, edits.view()))
            ),
            "policy.edit": Method(
                Scope.BRIDGE,
                PolicyEditParams,
                bridge_only(lambda c, p: typed(PolicyEditReply, edits.edit(p))),
            ),
        }

    def _tier1(self, approvals: Approvals) -> dict[str, Method]:
        devices = approvals.devices
        return {
            # The approval and device modules build JSON (stored, hashed or signed as built); it is
            # typed here, where it leaves the signer.
            "approvals.wait": Method(
                Scope.BRIDGE,
                ApprovalsWaitParams,
                bridge_only(
                    lambda c, p: typed(ApprovalsWaitReply, approvals.wait(p.after, p.timeout, p.limit))
                ),
            ),
            "approvals.answer": Method(
                Scope.BRIDGE,
                ApprovalAnswerParams,
                bridge_only(lambda c, p: typed(SignReply, approvals.answer(p))),
            ),
            "approvals.freeze": Method(
                Scope.BRIDGE, FreezeParams, bridge_only(lambda c, p: typed(SignerState, approvals.freeze(p)))
            ),
            "signer.freeze": Method(
                Scope.ADMIN, None, lambda c, p: typed(SignerState, approvals.freeze_on_host(c.name))
            ),
            "approvals.topup": Method(
                Scope.BRIDGE,
                TopUpRequestParams,
                bridge_only(lambda c, p: typed(SignReply, request_topup(approvals, p))),
            ),
            "approvals.state": Method(
                Scope.BRIDGE,
                StateParams,
                bridge_only(
                    lambda c, p: typed(ApprovalsStateReply, approvals.state_for_signing(p.witness_seq))
                ),
            ),
            "approvals.home": Method(Scope.BRIDGE, None, bridge_only(self._home)),
            # Tier 3 from the phone (signer.tier3.grant_offers): the signer offers, the main key signs on the phone.
            "tier3.offer": Method(Scope.BRIDGE, Tier3OfferParams, bridge_only(self._tier3_offer)),
            "tier3.grant_answer": Method(Scope.BRIDGE, Tier3AnswerParams, bridge_only(self._tier3_answer)),
            "companion.pair_complete": Method(
                Scope.BRIDGE, PairCompleteParams, bridge_only(lambda c, p: devices.complete_pairing(p))
            ),
            "companion.devices": Method(
                Scope.BRIDGE,
                None,
                bridge_only(
                    lambda c, p: DevicesReply(
                        devices=tuple(d.to_reply() for d in devices.all()), devices_rev=devices.revision
                    )
                ),
            ),
            "companion.pair_begin": Method(
                Scope.ADMIN, PairBeginParams, lambda c, p: devices.begin_pairing(p.name, p.ttl_seconds)
            ),
            "companion.list": Method(
                Scope.ADMIN,
                None,
                lambda c, p: DevicesReply(
                    devices=tuple(d.to_reply() for d in devices.all()), main_account=devices.main_account()
                ),
            ),
            "companion.revoke": Method(Scope.ADMIN, DeviceRefParams, lambda c, p: self._revoke_device(c, p)),
            "approvals.revoke_device": Method(
                Scope.BRIDGE, DeviceRevokeParams, bridge_only(lambda c, p: self._revoke_from_device(p))
            ),
        }

    async def _revoke_device(self, client: Client, params: DeviceRefParams) -> DeviceReply:
        assert self.approvals is not None
        result = await self.approvals.devices.revoke(params.device_id, client.name)
        self.approvals.announce()  # the bridge drops the device's connections and tokens at once
        return result

    async def _revoke_from_device(self, params: DeviceRevokeParams) -> DeviceReply:
        assert self.approvals is not None
        result = await self.approvals.devices.revoke_signed(
            params.device_id, params.target_device_id, params.ts, params.signature
        )
        self.approvals.announce()  # as from the host: the bridge drops the device's connections and tokens
        return result

    def _core(self) -> dict[str, Method]:
        return {
            "status": Method(Scope.READ, None, self.status),
            "addresses": Method(Scope.READ, None, self.addresses),
            "balance": Method(Scope.READ, BalanceParams, self.balance),
            "sign.request": Method(Scope.SIGN, SignRequestParams, self.engine.sign_request),
            "sign.status": Method(Scope.READ, SignStatusParams, self.sign_status),
            "session_key.list": Method(Scope.READ, None, self.session_key_list),
            "session_key.create": Method(Scope.ADMIN, SessionKeyCreateParams, self.session_key_create),
            "session_key.rotate": Method(Scope.ADMIN, SessionKeyRefParams, self.session_key_rotate),
            "session_key.revoke": Method(Scope.ADMIN, SessionKeyRefParams, self.session_key_revoke),
            "session_key.topup": Method(Scope.ADMIN, TopUpParams, self.session_key_topup),
            "policy.show": Method(Scope.READ, None, self.policy_show),
            "policy.validate": Method(Scope.READ, PolicyValidateParams, self.policy_validate),
            "policy.check": Method(Scope.READ, PolicyCheckParams, self.policy_check),
            "audit.tail": Method(Scope.ADMIN, AuditTailParams, self.audit_tail),
            "tier3.grant": Method(Scope.ADMIN, Tier3GrantParams, self.tier3_grant),
            "tier3.revoke": Method(Scope.ADMIN, Tier3RevokeParams, self.tier3_revoke),
            "tier3.status": Method(Scope.READ, None, self.tier3_status),
            "audit.verify": Method(Scope.ADMIN, None, self.audit_verify),
        }

    # ---- reads ------------------------------------------------------------------------------

    def status(self, client: Client, _: None) -> StatusReply:
        engine = self.engine
        return StatusReply.model_validate(
            {
                "version": __version__,
                "protocol": PROTOCOL_VERSION,
                "uptime_seconds": round(steady() - STARTED, 1),
                "clock_lag_seconds": round(clock_lag(engine.clock), 1),
                "unlocked": True,
                "frozen": engine.frozen,
                "broadcast": engine.broadcast,
                "chains": sorted(engine.chains),
                "policy_hash": engine.policy.policy_hash(),
                "session_keys": [i.to_json() for i in engine.keys.infos() if i.status is KeyStatus.ACTIVE],
                # Spends held by transactions not yet proven mined or dead (signer.receipts).
                "in_flight": self._in_flight(client),
                "client": {"name": client.name, "scope": client.scope},
            }
        )

    def _in_flight(self, client: Client) -> InFlight:
        """Totals for every client; which requests and transactions, only for the admin."""
        unproven = self.engine.unproven()
        if client.scope is not Scope.ADMIN:
            del unproven["transactions"]
        return InFlight.model_validate(unproven)

    def addresses(self, client: Client, _: None) -> AddressesReply:
        keys = self.engine.keys
        tier3 = self.engine.tier2.tier3
        return AddressesReply.model_validate(
            {
                "addresses": [
                    {
                        "chain_id": i.chain_id,
                        "address": i.address,
                        "key_id": i.key_id,
                        "expires_at": i.expires_at,
                    }
                    for i in keys.infos()
                    if i.status is KeyStatus.ACTIVE
                ],
                # Tier 3: the main accounts live grants spend from (the session keys only pay gas there).
                "tier3_accounts": [
                    {"chain_id": g.chain_id, "address": g.account, "grant_id": g.grant_id}
                    for g in (tier3.grants() if tier3 is not None else [])
                ],
                **self._companion_reach(),
            }
        )

    async def _home(self, client: Client, _: None) -> HomeReply:
        """The phone's home screen: balances, what was spent per window, what Tier 3 still allows."""
        assert self.approvals is not None
        engine = self.engine
        home = Home(
            engine.policy, engine.chains, engine.keys, engine.ledger, engine.tier2.tier3, engine.clock
        )
        reply = HomeReply.model_validate(await home.summary(self.approvals.devices.main_account()))
        body = reply.model_dump(mode="json", exclude={"signer_sig"})
        return reply.model_copy(update={"signer_sig": self.approvals.identity.sign(HOME_VIEW_DOMAIN, body)})

    def _companion_reach(self) -> CompanionReach:
        """The main account and the number of live companions (no Tier 1 on this signer: none)."""
        if self.approvals is None:
            return {"main_account": None, "companions": 0}
        devices = self.approvals.devices
        live = sum(1 for device in devices.all() if device.active)
        return {"main_account": devices.main_account(), "companions": live}

    async def balance(self, client: Client, params: BalanceParams) -> BalanceReply:
        chain = self._chain(params.chain_id)
        address = params.address
        if address is None:
            key = self.engine.keys.current(params.chain_id)
            if key is None:
                raise RpcError(ErrorCode.NOT_FOUND, f"no session key on chain {params.chain_id}")
            address = key.address
        try:
            amount = await chain.balance(address, params.token)
        except ChainError as exc:
            raise RpcError(ErrorCode.UNAVAILABLE, str(exc)) from None
        return BalanceReply(
            chain_id=params.chain_id, address=address, token=params.token or "native", balance=amount
        )

    def sign_status(self, client: Client, params: SignStatusParams) -> SignReply:
        try:
            return SignReply.model_validate(self.engine.status_of(client, params.request_id))
        except ValidationError:  # the id of an admin mutation (its row holds that method's reply)
            raise RpcError(ErrorCode.NOT_FOUND, f"{params.request_id} is not a signing request") from None

    def session_key_list(self, client: Client, _: None) -> SessionKeysReply:
        return SessionKeysReply.model_validate(
            {"session_keys": [i.to_json() for i in self.engine.keys.infos()]}
        )

    def policy_show(self, client: Client, _: None) -> PolicyShowReply:
        policy = self.engine.policy
        return PolicyShowReply(policy_hash=policy.policy_hash(), policy=policy.model_dump(mode="json"))

    async def policy_reload(self, client: Client, _: None) -> PolicyReloadReply:
        """Read the policy file again: a tightening applies now, a loosening waits for the companion."""
        assert self.policies is not None
        try:
            result = await self.policies.reload()
        except PolicyError as exc:
            raise RpcError(
                ErrorCode.INVALID_PARAMS, f"policy not reloaded, the one in force stays: {exc}"
            ) from None
        return PolicyReloadReply.model_validate(result.to_json())

    def policy_validate(self, client: Client, params: PolicyValidateParams) -> PolicyValidateReply:
        try:
            policy = parse_policy(params.text)
        except PolicyError as exc:
            return PolicyValidateReply(valid=False, error=str(exc))
        return PolicyValidateReply(valid=True, policy_hash=policy.policy_hash())

    def policy_check(self, client: Client, params: PolicyCheckParams) -> PolicyCheckReply:
        return PolicyCheckReply.model_validate(self.engine.preview(params.intent))

    def audit_tail(self, client: Client, params: AuditTailParams) -> AuditTailReply:
        entries = audit_store.tail(self.engine.reader, params.n, kind=params.kind)
        return AuditTailReply.model_validate({"entries": [e.to_json() for e in entries]})

    async def audit_verify(self, client: Client, _: None) -> AuditVerifyReply:
        """The keyed chain and the anchor checked by the process that holds their keys, on a thread
        and a read-only connection of its own: `owlia audit verify` without the passphrase."""
        return AuditVerifyReply.model_validate(await asyncio.to_thread(self.engine.audit.verify_all))

    # ---- admin mutations (idempotent) ---------------------------------------------------------

    async def session_key_create(
        self, client: Client, params: SessionKeyCreateParams
    ) -> SessionKeyCreateReply:
        self._chain(params.chain_id)
        ttl = params.ttl_seconds or self.settings.session_key_ttl_seconds
        cap = self.settings.session_key_balance_cap if params.balance_cap is None else params.balance_cap
        keys = self.engine.keys

        async def create() -> tuple[SessionKeyCreateReply, Change]:
            info, key, sealed = keys.prepare(params.chain_id, ttl, cap)

            def unit(conn: Connection) -> None:
                keys.insert(conn, info, sealed)
                self.engine.audit.append("session_key.created", {**info.to_json(), "by": client.name})

            reply = SessionKeyCreateReply(session_key=SessionKeyJson.model_validate(info.to_json()))
            return reply, (unit, lambda: keys.install(info, key))

        return await self._idempotent(
            client, params.idempotency_key, "session_key.create", params, create, SessionKeyCreateReply
        )

    async def session_key_rotate(self, client: Client, params: SessionKeyRefParams) -> SessionKeyRetireReply:
        return await self._retire(client, params, RETIRED, rotate=True)

    async def session_key_revoke(self, client: Client, params: SessionKeyRefParams) -> SessionKeyRetireReply:
        return await self._retire(client, params, REVOKED, rotate=False)

    async def _retire(
        self, client: Client, params: SessionKeyRefParams, status: KeyStatus, rotate: bool
    ) -> SessionKeyRetireReply:
        keys = self.engine.keys
        old = keys.info(params.key_id)
        if old is None:
            raise RpcError(ErrorCode.NOT_FOUND, f"no session key {params.key_id}")
        kind = "session_key.rotate" if rotate else "session_key.revoke"

        async def retire() -> tuple[SessionKeyRetireReply, Change]:
            updated = keys.disarm(params.key_id, status)  # signing power goes first, in memory
            fresh = (
                keys.prepare(old.chain_id, self.settings.session_key_ttl_seconds, old.balance_cap)
                if rotate
                else None
            )

            def unit(conn: Connection) -> None:
                keys.mark(conn, params.key_id, status)
                self.engine.audit.append(
                    kind, {"key_id": params.key_id, "address": old.address, "by": client.name}
                )
                if fresh is not None:
                    keys.insert(conn, fresh[0], fresh[2])
                    self.engine.audit.append("session_key.created", {**fresh[0].to_json(), "by": client.name})

            retired = SessionKeyJson.model_validate(updated.to_json())
            if fresh is None:
                result = SessionKeyRetireReply(retired=retired)
            else:
                result = SessionKeyRetireReply(
                    retired=retired,
                    session_key=SessionKeyJson.model_validate(fresh[0].to_json()),
                    sweep_hint=f"move the remaining balance of {old.address} to {fresh[0].address} with a Tier 1 transfer",
                )
            install = (lambda: keys.install(fresh[0], fresh[1])) if fresh is not None else (lambda: None)
            return result, (unit, install)

        return await self._idempotent(
            client, params.idempotency_key, kind, params, retire, SessionKeyRetireReply
        )

    async def session_key_topup(self, client: Client, params: TopUpParams) -> TopUpReply:
        """Fund a session key up to its cap. Only dev chains can be funded here; elsewhere it is Tier 1.

        One top-up per key at a time, held until it is mined: concurrent calls each saw the whole
        room before, and funded the key to a multiple of its cap."""
        async with self.engine.topups.lock(params.key_id):
            return await self._topup_locked(client, params)

    async def _topup_locked(self, client: Client, params: TopUpParams) -> TopUpReply:
        info, chain, balance, room = await room_under_cap(self.engine, params.key_id)
        amount = room if params.amount is None else params.amount
        if amount > room:
            raise RpcError(
                ErrorCode.FORBIDDEN,
                f"a top-up of {amount} wei would exceed the balance cap "
                f"({info.balance_cap} wei; held or on its way {balance} wei)",
            )
        if not chain.settings.dev:
            return TopUpReply(
                funded=False,
                address=info.address,
                room=room,
                hint="send up to `room` wei to the address from your main wallet (Tier 1)",
            )

        async def fund() -> tuple[TopUpReply, Change]:
            try:
                tx_hash = await chain.dev_fund(info.address, amount)
            except ChainError as exc:
                raise RpcError(ErrorCode.UNAVAILABLE, str(exc)) from None
            body = {
                "key_id": info.key_id,
                "address": info.address,
                "amount": str(amount),
                "tx_hash": tx_hash,
                "by": client.name,
            }
            return TopUpReply.model_validate({"funded": True, **body}), (
                lambda conn: self.engine.audit.append("session_key.topup", body),
                lambda: None,
            )

        return await self._idempotent(
            client, params.idempotency_key, "session_key.topup", params, fund, TopUpReply
        )

    # ---- Tier 3 (signer.tier3.grants, docs/tier3.md) ------------------------------------------------

    def _tier3(self) -> Tier3:
        tier3 = self.engine.tier2.tier3
        if tier3 is None:
            raise RpcError(ErrorCode.NOT_FOUND, "Tier 3 is not set up: no chain has `delegation` contracts")
        return tier3

    async def tier3_grant(self, client: Client, params: Tier3GrantParams) -> Tier3GrantReply:
        """Install a grant the main key signed, after checking it is no wider than the policy.
        Never two live grants per chain: rotation is revoke (on chain and here) then grant."""
        tier3 = self._tier3()
        self._chain(params.chain_id)
        keys = self.engine.keys
        key = keys.current(params.chain_id)
        sessions = {params.chain_id: (key.address, key.expires_at)} if key is not None else {}

        claimed = False

        async def grant() -> tuple[Tier3GrantReply, Change]:
            nonlocal claimed
            already = RpcError(
                ErrorCode.INVALID_PARAMS,
                "a grant is already live on this chain: revoke it first "
                "(rotation = revoke the old grant, then grant the new key)",
            )
            # Claimed in one synchronous step: two concurrent grants cannot both pass.
            if not tier3.claim(params.chain_id):
                raise already
            claimed = True
            # Tier 3 only: not held by the idle daemon (tests/signer/test_idle_memory.py: 0.5-2 MB per such cut)
            from signer.wire.delegation import Delegation, DelegationError  # lazy: 4 ms, 384 KiB (2 imports)
            from signer.wire.grants import GrantError

            # A live grant the main key ended on chain (its nonce moved: `owlia wallet revoke` or `freeze`
            # with this signer down) is over, not live: it is recorded as ended and the new grant may go in.
            old = tier3.live(params.chain_id)
            ended = None
            if old is not None:
                try:
                    ended = await tier3.ended_on_chain(old)
                except ChainError as exc:
                    raise RpcError(
                        ErrorCode.INVALID_PARAMS,
                        f"grant refused: could not read the live grant's state on chain: {exc}",
                    ) from None
                if ended is None:
                    raise already

            try:
                delegations = [Delegation.from_json(d) for d in params.delegations]
                built = tier3.build(
                    tier3.new_id(),
                    params.chain_id,
                    delegations,
                    self.engine.policy,
                    sessions,
                    self.engine.clock(),
                )
            except (GrantError, DelegationError) as exc:
                raise RpcError(ErrorCode.INVALID_PARAMS, f"grant refused: {exc}") from None
            problem = await tier3.preflight(built)
            if problem is not None:
                raise RpcError(ErrorCode.INVALID_PARAMS, f"grant refused: {problem}")

            def unit(conn: Connection) -> None:
                if old is not None:
                    tier3.mark_revoked(conn, old.grant_id, self.engine.clock())
                    self.engine.audit.append(
                        "tier3.ended",
                        {"grant_id": old.grant_id, "reason": "nonce moved on chain", "by": client.name},
                    )
                tier3.insert(conn, built)
                # The audit log refuses 32-byte hex (secret-shaped): delegation hashes stay out of it.
                body = {k: v for k, v in built.to_json().items() if k != "delegation_hashes"}
                self.engine.audit.append("tier3.granted", {**body, "by": client.name})

            def commit() -> None:
                if old is not None:
                    tier3.drop(old.grant_id)
                tier3.install(built)

            return Tier3GrantReply.model_validate({"grant": built.to_json()}), (unit, commit)

        try:
            return await self._idempotent(
                client, params.idempotency_key, "tier3.grant", params, grant, Tier3GrantReply
            )
        finally:
            if claimed:
                tier3.release(params.chain_id)  # installed by now, or never will be

    async def _tier3_offer(self, client: Client, params: Tier3OfferParams) -> Tier3OfferReply:
        assert self.offers is not None

        async def rotate(key_id: str, device_id: str) -> None:
            once = f"rotate:{device_id}:{secrets.token_hex(8)}"
            await self._retire(
                client, SessionKeyRefParams(idempotency_key=once, key_id=key_id), RETIRED, rotate=True
            )

        return Tier3OfferReply(offer=await self.offers.offer(params, rotate))

    async def _tier3_answer(self, client: Client, params: Tier3AnswerParams) -> Tier3GrantReply:
        """The phone's signatures on the signer's own offer, then every check `tier3.grant` makes."""
        assert self.offers is not None
        chain_id, delegations = await self.offers.answer(params)
        return await self.tier3_grant(
            client,
            Tier3GrantParams(
                idempotency_key=f"phone:{params.offer_id}", chain_id=chain_id, delegations=delegations
            ),
        )

    async def tier3_revoke(self, client: Client, params: Tier3RevokeParams) -> Tier3RevokeReply:
        """Stop redeeming a grant here at once (the companion disables it on chain too)."""
        tier3 = self._tier3()

        async def revoke() -> tuple[Tier3RevokeReply, Change]:
            dropped = tier3.drop(params.grant_id)  # signing power goes first, in memory
            if dropped is None:
                raise RpcError(ErrorCode.NOT_FOUND, f"no live grant {params.grant_id}")

            def unit(conn: Connection) -> None:
                tier3.mark_revoked(conn, params.grant_id, self.engine.clock())
                self.engine.audit.append("tier3.revoked", {"grant_id": params.grant_id, "by": client.name})

            return Tier3RevokeReply(revoked=params.grant_id), (unit, lambda: None)

        return await self._idempotent(
            client, params.idempotency_key, "tier3.revoke", params, revoke, Tier3RevokeReply
        )

    async def tier3_status(self, client: Client, _: None) -> Tier3StatusReply:
        return Tier3StatusReply(grants=await self._tier3().status(self.engine.policy))

    # ---- helpers ----------------------------------------------------------------------------

    def _chain(self, chain_id: int) -> Chain:
        chain = self.engine.chains.get(chain_id)
        if chain is None:
            raise RpcError(ErrorCode.NOT_FOUND, f"chain {chain_id} is not configured in the signer")
        return chain

    async def _idempotent(
        self,
        client: Client,
        key: str,
        kind: str,
        params: BaseModel,
        action: Callable[[], Awaitable[tuple[R, Change]]],
        reply: type[R],
    ) -> R:
        """Run an admin mutation once per idempotency key; replays return the first result."""
        digest = hashlib.sha256(
            json.dumps(params.model_dump(mode="json"), sort_keys=True).encode()
        ).hexdigest()
        row = request_store.by_idempotency_key(self.engine.reader, client.client_id, key)
        if row is not None:
            if row[0] != digest or row[1] is None:
                raise RpcError(ErrorCode.IDEMPOTENCY_CONFLICT, "this idempotency key was already used")
            return reply.model_validate_json(row[1]).model_copy(update={"replayed": True})
        result, (unit, install) = await action()
        request_id = "req_" + hashlib.sha256(f"{client.client_id}:{key}".encode()).hexdigest()[:32]
        now = self.engine.clock()  # the signer's clock (signer.clock), read when it is decided

        def record(conn: Connection) -> None:
            reply_text = dump_reply(result).decode()
            request_store.insert_done(conn, request_id, client.client_id, key, kind, digest, now, reply_text)
            unit(conn)

        try:
            await self.engine.writer.run(record)
        except IntegrityError:
            raise RpcError(ErrorCode.IDEMPOTENCY_CONFLICT, "this idempotency key was already used") from None
        install()
        return result
