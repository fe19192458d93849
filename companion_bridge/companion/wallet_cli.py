"""`owlia wallet`: Tier 3 from the CLI companion (docs/tier3.md).

Every act here is signed by the companion's main key and checked on chain afterwards:
authorize (EIP-7702, once), grant (delegations derived from the signer's policy, shown in words
first, and kept in the companion's own record), revoke (NonceEnforcer.incrementNonce: every grant
ends on chain at once, with or without the signer), rotate (revoke, new session key, grant), freeze
(7702 to zero and the nonce moved, so authorizing again revives nothing), status (grants and what is
left per period, read from the chain by the signer).
The signer installs or drops a grant through its admin socket; revoke works without it.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from companion_bridge.companion.cli import DIR_OPTION, PASS_OPTION, _passphrase, _wallet
from policies.kernel.cli import fail, print_json
from signer.wire.cli import signer_call_as, signer_call_if_up, signer_config

if TYPE_CHECKING:  # the command tree stays light: the reply models load when a command runs
    from signer.wire.replies import SessionKeyJson, Tier3GrantJson, Tier3GrantReply

app = typer.Typer(
    help="Tier 3: on-chain limits for the session key (EIP-7702 + delegations).", no_args_is_help=True
)
CHAIN_OPTION = typer.Option(
    None, "--chain", help="Chain id (default: the first chain with Tier 3 contracts)."
)
YES_OPTION = typer.Option(False, "--yes", help="Do not ask for confirmation (the words are still printed).")


def _chain(ctx: typer.Context, chain_id: Optional[int]):
    config = signer_config(ctx)
    chains = [c for c in config.chains if c.delegation is not None and (chain_id is None or c.id == chain_id)]
    if not chains:
        fail(
            "no chain has Tier 3 contracts in config.yaml (chains[].delegation): run `owlia chain dev`, or name "
            "the canonical deployments for a real chain (docs/tier3.md)"
        )
    return chains[0]


def _link(chain):
    from companion_bridge.companion.tier3 import ChainLink  # lazy: 597 ms, 27572 KiB

    return ChainLink(chain.rpc_url, chain.id)


def _confirm(words: list[str], yes: bool) -> None:
    for line in words:
        typer.echo(line)
    if not yes and not typer.confirm("Sign this with the main key?", default=False):
        fail("nothing was signed")


def _key(ctx: typer.Context, directory: Optional[Path], passphrase_file: Optional[Path]):
    from companion_bridge.companion.wallet import WalletError  # lazy: 582 ms, 26680 KiB

    wallet = _wallet(ctx, directory)
    try:
        return wallet.main_key(_passphrase(passphrase_file))
    except WalletError as exc:
        fail(str(exc))


def _grants(ctx: typer.Context) -> tuple[Tier3GrantJson, ...]:
    from signer.wire.replies import Tier3StatusReply  # lazy: 79 ms, 8172 KiB

    return signer_call_as(ctx, Tier3StatusReply, "tier3.status", admin=True).grants


def _live_grant(ctx: typer.Context, chain_id: int) -> Tier3GrantJson | None:
    return next((g for g in _grants(ctx) if g.chain_id == chain_id), None)


def _active_keys(ctx: typer.Context, chain_id: int) -> list[SessionKeyJson]:
    from signer.wire.protocol import KeyStatus  # lazy: 75 ms, 8180 KiB (2 imports)
    from signer.wire.replies import SessionKeysReply

    listed = signer_call_as(ctx, SessionKeysReply, "session_key.list", admin=True).session_keys
    return [k for k in listed if k.chain_id == chain_id and k.status is KeyStatus.ACTIVE]


@app.command("authorize")
def authorize(
    ctx: typer.Context,
    chain_id: Optional[int] = CHAIN_OPTION,
    directory: Optional[Path] = DIR_OPTION,
    passphrase_file: Optional[Path] = PASS_OPTION,
    yes: bool = YES_OPTION,
) -> None:
    """Once: make the main account an EIP7702StatelessDeleGator (no funds move)."""
    from companion_bridge.companion import tier3  # lazy: 537 ms, 27560 KiB

    chain = _chain(ctx, chain_id)
    wallet = _wallet(ctx, directory)
    implementation = chain.delegation.stateless_delegator.lower()
    _confirm(
        [
            f"This makes your main account {wallet.main_address} a smart account on chain {chain.id} "
            f"({chain.name}): its code becomes the EIP7702StatelessDeleGator at {implementation}.",
            "No funds move. Your main key keeps full control and can undo it with `owlia wallet freeze`.",
        ],
        yes,
    )
    key = _key(ctx, directory, passphrase_file)
    link = _link(chain)
    receipt = link.send(
        tier3.authorize(key, implementation=implementation, **link.tx_fields(wallet.main_address))
    )
    if receipt["status"] != "0x1" or tier3.delegated_to(link.code(wallet.main_address)) != implementation:
        fail("the authorization did not take effect on chain")
    typer.echo(
        f"done: {wallet.main_address} is delegated to {implementation} (tx {receipt['transactionHash']})"
    )


@app.command("grant")
def grant(
    ctx: typer.Context,
    chain_id: Optional[int] = CHAIN_OPTION,
    days: int = typer.Option(7, min=1, help="Expiry in days (never past the session key's own expiry)."),
    max_calls: Optional[int] = typer.Option(None, min=1, help="At most this many transactions in all."),
    erc20_recipient: Optional[str] = typer.Option(None, help="The one recipient of ERC-20 lanes."),
    swap_to: Optional[str] = typer.Option(
        None, help="The token (address) the swap lane buys with ETH; default: the policy's first one."
    ),
    directory: Optional[Path] = DIR_OPTION,
    passphrase_file: Optional[Path] = PASS_OPTION,
    yes: bool = YES_OPTION,
) -> None:
    """Grant the signer's session key what the policy allows, as on-chain caveats."""
    _grant(
        ctx, _chain(ctx, chain_id), days, max_calls, erc20_recipient, directory, passphrase_file, yes, swap_to
    )


def _nonce_contracts(chain) -> tuple[str, str]:
    """(manager, NonceEnforcer) of a chain's Tier 3 contracts; a config without the NonceEnforcer predates
    revocation without the signer: redeploy (`owlia chain dev`) or pin the canonical set again."""
    enforcer = chain.delegation.enforcer_map().get("NonceEnforcer")
    if enforcer is None:
        fail(
            f"chain {chain.id}'s Tier 3 contracts in config.yaml name no NonceEnforcer: run `owlia chain dev` "
            "again (dev) or `owlia wallet pin` (a real chain)"
        )
    return chain.delegation.manager.lower(), enforcer


def _grant(
    ctx, chain, days, max_calls, erc20_recipient, directory, passphrase_file, yes, swap_to=None
) -> Tier3GrantReply:
    from companion_bridge.companion import grant_record, tier3  # lazy: 584 ms, 29112 KiB (6 imports)
    from policies.model import Policy
    from signer.wire.exchange import new_idempotency_key
    from signer.wire.grants import GrantError, derive_lanes, describe
    from signer.wire.replies import Tier3GrantReply
    from signer.wire.sign_replies import PolicyShowReply

    wallet = _wallet(ctx, directory)
    link = _link(chain)
    if tier3.delegated_to(link.code(wallet.main_address)) != chain.delegation.stateless_delegator.lower():
        fail(
            f"{wallet.main_address} is not delegated on chain {chain.id}: run `owlia wallet authorize` first"
        )
    policy = Policy.model_validate(signer_call_as(ctx, PolicyShowReply, "policy.show", admin=True).policy)
    keys = _active_keys(ctx, chain.id)
    if not keys:
        fail(f"the signer has no active session key on chain {chain.id}: `owlia signer session-key create`")
    session = max(keys, key=lambda k: k.created_at)
    now = link.timestamp()
    expires_at = min(now + days * 86400, int(session.expires_at))
    manager, nonce_enforcer = _nonce_contracts(chain)
    nonce = link.current_nonce(nonce_enforcer, manager, wallet.main_address)
    try:
        lanes = derive_lanes(
            policy,
            chain.id,
            expires_at=expires_at,
            start=now,
            erc20_recipient=erc20_recipient,
            call_limit=max_calls,
            nonce=nonce,
            delegator=wallet.main_address,
            swap_to=swap_to,
        )
    except GrantError as exc:
        fail(str(exc))
    words = [describe(lane, policy, chain.id) for lane in lanes]
    _confirm(
        [
            f"Grant to session key {session.address} on chain {chain.id}, from {wallet.main_address}:",
            *(f"  - {line}" for line in words),
            "Only that key may redeem it. Periods are fixed on chain: around a period's end up to twice the "
            "period amount can go out (docs/tier3.md). `owlia wallet revoke` ends it on chain, even without "
            "the signer.",
        ],
        yes,
    )
    key = _key(ctx, directory, passphrase_file)
    salt = secrets.randbits(64)
    delegations = tier3.sign_grant(
        key,
        lanes,
        session_address=session.address,
        chain_id=chain.id,
        manager=manager,
        enforcers=chain.delegation.enforcer_map(),
        salt=salt,
    )
    grant_record.record_signed(
        wallet.home,
        chain_id=chain.id,
        rpc_url=chain.rpc_url,
        manager=manager,
        nonce_enforcer=nonce_enforcer,
        account=wallet.main_address,
        delegate=session.address,
        nonce=nonce,
        salt=salt,
        delegations=delegations,
        words=words,
    )
    result = signer_call_as(
        ctx,
        Tier3GrantReply,
        "tier3.grant",
        {
            "idempotency_key": new_idempotency_key("cli"),
            "chain_id": chain.id,
            "delegations": [d.to_json() for d in delegations],
        },
        admin=True,
    )
    live = _live_grant(ctx, chain.id)
    if live is None or any(lane.error is not None for lane in live.lanes):
        fail("the signer took the grant but cannot read it on chain; see `owlia wallet status`")
    typer.echo(f"granted: {result.grant.grant_id}")
    return result


def _revoke(
    ctx, chain_id: Optional[int], directory, passphrase_file, yes, rpc_url: Optional[str] = None
) -> None:
    """End every grant of the main account on chain, from the companion alone: the signer is told when it
    answers, and not needed otherwise (after a host theft it is the thief's)."""
    from companion_bridge.companion import grant_record, tier3  # lazy: 569 ms, 29112 KiB (4 imports)
    from signer.wire.delegation import Delegation
    from signer.wire.exchange import new_idempotency_key
    from signer.wire.replies import Tier3RevokeReply, Tier3StatusReply

    wallet = _wallet(ctx, directory)
    try:
        recorded = grant_record.load(wallet.home)
    except grant_record.RecordError as exc:
        fail(str(exc))
    target = _revoke_target(ctx, chain_id, rpc_url, wallet.main_address, recorded)
    status = signer_call_if_up(ctx, Tier3StatusReply, "tier3.status", admin=True)
    live = (
        None if status is None else next((g for g in status.grants if g.chain_id == target["chain_id"]), None)
    )
    recorded = [
        g
        for g in recorded
        if g["chain_id"] == target["chain_id"] and g["account"] == wallet.main_address.lower()
    ]
    link = tier3.ChainLink(target["rpc_url"], target["chain_id"])
    if link.node_chain_id() != target["chain_id"]:
        fail(
            f"the node at {target['rpc_url']} is chain {link.node_chain_id()}, not {target['chain_id']}: nothing was "
            "signed; pass the right node with --rpc-url"
        )
    manager, enforcer = target["manager"], target["nonce_enforcer"]
    before = link.current_nonce(enforcer, manager, wallet.main_address)
    # Delegations without the Nonce caveat (signed before it existed) end only by disableDelegation.
    known = [Delegation.from_json(d) for g in recorded for d in g["delegations"]]
    known += [Delegation.from_json(d) for d in (live.delegations or ())] if live is not None else []
    no_nonce = {
        d.struct_hash(): d
        for d in known
        if enforcer not in {c.enforcer for c in d.caveats} and not link.is_disabled(manager, d)
    }
    alive = [g for g in recorded if int(g["nonce"]) == before]
    _confirm(
        [
            f"Revoke every Tier 3 grant of {wallet.main_address} on chain {target['chain_id']}: the main key "
            f"moves its revocation nonce (NonceEnforcer) from {before} to {before + 1}, so every delegation "
            f"signed at nonce {before} is dead on chain, recorded here or not.",
            *(f"  - grant to session key {g['delegate']}: " + "; ".join(g["words"]) for g in alive),
            *(
                [f"  - and {len(no_nonce)} older delegation(s) without the nonce are disabled one by one"]
                if no_nonce
                else []
            ),
            "signer: "
            + (
                "it is told to drop its grant too"
                if live is not None
                else "not reachable or no grant there; it is not needed (the chain refuses the old "
                "grant, and so will the signer's own pre-check)"
            ),
        ],
        yes,
    )
    key = _key(ctx, directory, passphrase_file)
    receipt = link.send(
        tier3.revoke_all(key, manager=manager, nonce_enforcer=enforcer, **link.tx_fields(wallet.main_address))
    )
    after = link.current_nonce(enforcer, manager, wallet.main_address)
    if receipt["status"] != "0x1" or after <= before:
        fail(
            "incrementNonce did not take effect on chain: nothing is revoked yet; run `owlia wallet revoke` again"
        )
    for delegation in no_nonce.values():
        receipt = link.send(
            tier3.disable(key, delegation, manager=manager, **link.tx_fields(wallet.main_address))
        )
        if receipt["status"] != "0x1" or not link.is_disabled(manager, delegation):
            fail(
                "disableDelegation did not take effect on chain for an older delegation; run `owlia wallet revoke` "
                "again"
            )
    # Check each delegation we know of on chain: dead by the nonce, or disabled.
    for delegation in known:
        nonce_caveat = next((c for c in delegation.caveats if c.enforcer == enforcer), None)
        dead = (
            nonce_caveat is not None and int.from_bytes(nonce_caveat.terms, "big") != after
        ) or link.is_disabled(manager, delegation)
        if not dead:
            fail(
                f"a recorded delegation to {delegation.delegate} is still valid on chain; run `owlia wallet revoke` "
                "again"
            )
    why = f"revoked on chain: revocation nonce moved from {before} to {after}"
    grant_record.mark_ended(wallet.home, target["chain_id"], wallet.main_address, why)
    told = ""
    if live is not None:
        dropped = signer_call_if_up(
            ctx,
            Tier3RevokeReply,
            "tier3.revoke",
            {"idempotency_key": new_idempotency_key("cli"), "grant_id": live.grant_id},
            admin=True,
        )
        told = f"; the signer dropped grant {live.grant_id}" if dropped is not None else ""
    typer.echo(
        f"revoked: every Tier 3 grant of {wallet.main_address} on chain {target['chain_id']} is dead on chain "
        f"(revocation nonce now {after}; {len(alive)} grant(s) on record ended, {len(known)} delegation(s) "
        f"checked){told}."
    )
    for g in alive:
        typer.echo(f"  - dead: the grant to session key {g['delegate']}: " + "; ".join(g["words"]))
    if live is None:
        typer.echo(
            "The signer was not told (not reachable or no grant there): if it runs again it refuses the old "
            "grant on its own (onchain.revoked) and accepts a new one."
        )


def _revoke_target(
    ctx, chain_id: Optional[int], rpc_url: Optional[str], account: str, recorded: list[dict]
) -> dict:
    """Which chain, node and contracts to revoke on: config.yaml when this home has one, else the
    companion's record of the grants it signed (the host with config.yaml may be gone)."""
    from policies.kernel.cli import home_of  # lazy: 65 ms, 8576 KiB (2 imports)
    from signer.wire.settings import ConfigError, load_signer_config

    try:
        config = load_signer_config(home_of(ctx))
        chains = [
            c for c in config.chains if c.delegation is not None and (chain_id is None or c.id == chain_id)
        ]
    except ConfigError:
        chains = []
    if chains:
        manager, enforcer = _nonce_contracts(chains[0])
        return {
            "chain_id": chains[0].id,
            "rpc_url": rpc_url or chains[0].rpc_url,
            "manager": manager,
            "nonce_enforcer": enforcer,
        }
    mine = [
        g
        for g in recorded
        if g["account"] == account.lower() and (chain_id is None or g["chain_id"] == chain_id)
    ]
    if not mine:
        fail(
            "no config.yaml with Tier 3 contracts here and no grant in the companion's record for this chain: "
            "name the chain with --chain and run where config.yaml is, or pass --rpc-url"
        )
    last = mine[-1]
    return {
        "chain_id": last["chain_id"],
        "rpc_url": rpc_url or last["rpc_url"],
        "manager": last["manager"],
        "nonce_enforcer": last["nonce_enforcer"],
    }


@app.command("revoke")
def revoke(
    ctx: typer.Context,
    chain_id: Optional[int] = CHAIN_OPTION,
    directory: Optional[Path] = DIR_OPTION,
    passphrase_file: Optional[Path] = PASS_OPTION,
    yes: bool = YES_OPTION,
    rpc_url: Optional[str] = typer.Option(
        None,
        "--rpc-url",
        help="The chain's node (default: config.yaml's, else the one on the companion's record).",
    ),
) -> None:
    """End every grant on chain at once (NonceEnforcer), and in the signer when it answers: works without it."""
    from policies.kernel.rpc import RpcRemoteError, RpcUnreachable  # lazy: 18 ms, 3532 KiB

    try:
        _revoke(ctx, chain_id, directory, passphrase_file, yes, rpc_url)
    except (RpcUnreachable, RpcRemoteError, TimeoutError) as exc:
        fail(
            f"the chain's node did not do what revoke needs ({type(exc).__name__}: {exc}); nothing may have been "
            "revoked: check the node (--rpc-url) and run `owlia wallet revoke` again"
        )


@app.command("rotate")
def rotate(
    ctx: typer.Context,
    chain_id: Optional[int] = CHAIN_OPTION,
    days: int = typer.Option(7, min=1),
    directory: Optional[Path] = DIR_OPTION,
    passphrase_file: Optional[Path] = PASS_OPTION,
    yes: bool = YES_OPTION,
) -> None:
    """Revoke the live grant, rotate the session key, grant the new key: never two live grants."""
    from signer.wire.exchange import new_idempotency_key  # lazy: 76 ms, 8208 KiB (2 imports)
    from signer.wire.replies import SessionKeyRetireReply, TopUpReply

    chain = _chain(ctx, chain_id)
    live = _live_grant(ctx, chain.id)
    if live is not None:
        _revoke(ctx, chain.id, directory, passphrase_file, yes)
    keys = _active_keys(ctx, chain.id)
    if not keys:
        fail(f"no active session key on chain {chain.id}")
    old = max(keys, key=lambda k: k.created_at)
    fresh = signer_call_as(
        ctx,
        SessionKeyRetireReply,
        "session_key.rotate",
        {"idempotency_key": new_idempotency_key("cli"), "key_id": old.key_id},
        admin=True,
    ).session_key
    if fresh is None:
        fail("the signer rotated the key but named no successor; see `owlia signer session-key list`")
    if chain.dev:  # gas float for the new key
        signer_call_as(
            ctx,
            TopUpReply,
            "session_key.topup",
            {"idempotency_key": new_idempotency_key("cli"), "key_id": fresh.key_id},
            admin=True,
        )
    typer.echo(f"new session key {fresh.address}")
    _grant(ctx, chain, days, None, None, directory, passphrase_file, yes)


@app.command("freeze")
def freeze(
    ctx: typer.Context,
    chain_id: Optional[int] = CHAIN_OPTION,
    directory: Optional[Path] = DIR_OPTION,
    passphrase_file: Optional[Path] = PASS_OPTION,
    yes: bool = YES_OPTION,
) -> None:
    """A 7702 authorization to the zero address: no grant can be redeemed; funds stay with the main key."""
    from companion_bridge.companion import grant_record, tier3  # lazy: 517 ms, 28656 KiB

    chain = _chain(ctx, chain_id)
    wallet = _wallet(ctx, directory)
    manager, enforcer = _nonce_contracts(chain)
    link = _link(chain)
    before = link.current_nonce(enforcer, manager, wallet.main_address)
    _confirm(
        [
            f"Freeze {wallet.main_address} on chain {chain.id}: it becomes a plain account again, no session key "
            "can spend from it, and every grant is revoked for good (revocation nonce "
            f"{before} -> {before + 1}). To resume: `owlia wallet authorize`, then a new `owlia wallet grant`."
        ],
        yes,
    )
    key = _key(ctx, directory, passphrase_file)
    receipt = link.send(
        tier3.freeze(key, manager=manager, nonce_enforcer=enforcer, **link.tx_fields(wallet.main_address))
    )
    after = link.current_nonce(enforcer, manager, wallet.main_address)
    if (
        receipt["status"] != "0x1"
        or tier3.delegated_to(link.code(wallet.main_address)) is not None
        or after <= before
    ):
        fail("the freeze did not take effect on chain")
    try:
        grant_record.mark_ended(
            wallet.home,
            chain.id,
            wallet.main_address,
            f"frozen: revocation nonce moved from {before} to {after}",
        )
    except grant_record.RecordError as exc:
        typer.echo(f"warning: {exc}")
    typer.echo(
        f"frozen: {wallet.main_address} has no code on chain {chain.id} and every grant is revoked (revocation "
        f"nonce now {after}); authorizing again revives none of them"
    )


@app.command("status")
def status(
    ctx: typer.Context,
    chain_id: Optional[int] = CHAIN_OPTION,
    directory: Optional[Path] = DIR_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The main account, its grants, what is left in each period on chain, and when they expire."""
    from companion_bridge.companion import tier3  # lazy: 512 ms, 27524 KiB

    chain = _chain(ctx, chain_id)
    wallet = _wallet(ctx, directory)
    link = _link(chain)
    delegated = tier3.delegated_to(link.code(wallet.main_address))
    balance = int(link._call("eth_getBalance", wallet.main_address, "latest"), 16)
    grants = [g for g in _grants(ctx) if g.chain_id == chain.id]
    if as_json:
        print_json(
            {
                "account": wallet.main_address,
                "chain_id": chain.id,
                "delegated_to": delegated,
                "balance": str(balance),
                "grants": [
                    g.model_dump(mode="json", exclude_unset=True, exclude={"delegations"}) for g in grants
                ],
            }
        )
        return
    state = (
        "Tier 3 (EIP7702StatelessDeleGator)"
        if delegated == chain.delegation.stateless_delegator.lower()
        else "FROZEN (plain account)"
        if delegated is None
        else f"delegated to an unknown contract {delegated}"
    )
    typer.echo(f"account {wallet.main_address} on chain {chain.id}: {state}; balance {balance} wei")
    if not grants:
        typer.echo("no live grant")
    for g in grants:
        typer.echo(f"grant {g.grant_id} to session key {g.delegate}")
        if g.ended_on_chain:
            typer.echo(f"  ENDED ON CHAIN: {g.ended_on_chain}")
        for lane in g.lanes:
            typer.echo(f"  - {lane.words}")
            if lane.wider_than_policy:
                typer.echo(f"    WIDER THAN THE POLICY IN FORCE: {lane.wider_than_policy}")
            if lane.error is not None:
                typer.echo(f"    cannot read on chain: {lane.error}")
                continue
            calls = "" if lane.calls_left is None else f", {lane.calls_left} transactions left"
            flag = " DISABLED on chain" if lane.disabled else ""
            if lane.period_ends_at is None:  # a contract lane: no period, bounded per call
                typer.echo(f"    no period (bounded per call){calls}{flag}")
                continue
            ends = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(lane.period_ends_at))
            typer.echo(f"    left this period: {lane.left_words} (period ends {ends}){calls}{flag}")
            if lane.total_left_words is not None:
                typer.echo(f"    left of the grant's lifetime total: {lane.total_left_words}")
