"""`owlia wallet`: Tier 3 from the CLI companion (docs/tier3.md).

Every act here is signed by the companion's main key and checked on chain afterwards:
authorize (EIP-7702, once), grant (delegations derived from the signer's policy, shown in words
first), revoke (disableDelegation), rotate (revoke, new session key, grant), freeze (7702 to zero),
status (grants and what is left per period, read from the chain by the signer).
The signer installs or drops a grant through its admin socket, so run these as the signer's user.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from policies.kernel.cli import fail, print_json
from signer.wire.cli import signer_call_as, signer_config
from companion_bridge.companion.cli import DIR_OPTION, PASS_OPTION, _passphrase, _wallet

if TYPE_CHECKING:  # the command tree stays light: the reply models load when a command runs
    from signer.wire.replies import SessionKeyJson, Tier3GrantJson, Tier3GrantReply

app = typer.Typer(help="Tier 3: on-chain limits for the session key (EIP-7702 + delegations).",
                  no_args_is_help=True)
CHAIN_OPTION = typer.Option(None, "--chain", help="Chain id (default: the first chain with Tier 3 contracts).")
YES_OPTION = typer.Option(False, "--yes", help="Do not ask for confirmation (the words are still printed).")


def _chain(ctx: typer.Context, chain_id: Optional[int]):
    config = signer_config(ctx)
    chains = [c for c in config.chains if c.delegation is not None and (chain_id is None or c.id == chain_id)]
    if not chains:
        fail("no chain has Tier 3 contracts in config.yaml (chains[].delegation): run `owlia chain dev`, or name "
             "the canonical deployments for a real chain (docs/tier3.md)")
    return chains[0]


def _link(chain):
    from companion_bridge.companion.tier3 import ChainLink

    return ChainLink(chain.rpc_url, chain.id)


def _confirm(words: list[str], yes: bool) -> None:
    for line in words:
        typer.echo(line)
    if not yes and not typer.confirm("Sign this with the main key?", default=False):
        fail("nothing was signed")


def _key(ctx: typer.Context, directory: Optional[Path], passphrase_file: Optional[Path]):
    from companion_bridge.companion.wallet import WalletError

    wallet = _wallet(ctx, directory)
    try:
        return wallet.main_key(_passphrase(passphrase_file))
    except WalletError as exc:
        fail(str(exc))


def _grants(ctx: typer.Context) -> tuple[Tier3GrantJson, ...]:
    from signer.wire.replies import Tier3StatusReply

    return signer_call_as(ctx, Tier3StatusReply, "tier3.status", admin=True).grants


def _live_grant(ctx: typer.Context, chain_id: int) -> Tier3GrantJson | None:
    return next((g for g in _grants(ctx) if g.chain_id == chain_id), None)


def _active_keys(ctx: typer.Context, chain_id: int) -> list[SessionKeyJson]:
    from signer.wire.protocol import KeyStatus
    from signer.wire.replies import SessionKeysReply

    listed = signer_call_as(ctx, SessionKeysReply, "session_key.list", admin=True).session_keys
    return [k for k in listed if k.chain_id == chain_id and k.status is KeyStatus.ACTIVE]


@app.command("authorize")
def authorize(ctx: typer.Context, chain_id: Optional[int] = CHAIN_OPTION, directory: Optional[Path] = DIR_OPTION,
              passphrase_file: Optional[Path] = PASS_OPTION, yes: bool = YES_OPTION) -> None:
    """Once: make the main account an EIP7702StatelessDeleGator (no funds move)."""
    from companion_bridge.companion import tier3

    chain = _chain(ctx, chain_id)
    wallet = _wallet(ctx, directory)
    implementation = chain.delegation.stateless_delegator.lower()
    _confirm([f"This makes your main account {wallet.main_address} a smart account on chain {chain.id} "
              f"({chain.name}): its code becomes the EIP7702StatelessDeleGator at {implementation}.",
              "No funds move. Your main key keeps full control and can undo it with `owlia wallet freeze`."], yes)
    key = _key(ctx, directory, passphrase_file)
    link = _link(chain)
    receipt = link.send(tier3.authorize(key, implementation=implementation, **link.tx_fields(wallet.main_address)))
    if receipt["status"] != "0x1" or tier3.delegated_to(link.code(wallet.main_address)) != implementation:
        fail("the authorization did not take effect on chain")
    typer.echo(f"done: {wallet.main_address} is delegated to {implementation} (tx {receipt['transactionHash']})")


@app.command("grant")
def grant(ctx: typer.Context, chain_id: Optional[int] = CHAIN_OPTION, days: int = typer.Option(
        7, min=1, help="Expiry in days (never past the session key's own expiry)."),
          max_calls: Optional[int] = typer.Option(None, min=1, help="At most this many transactions in all."),
          erc20_recipient: Optional[str] = typer.Option(None, help="The one recipient of ERC-20 lanes."),
          directory: Optional[Path] = DIR_OPTION, passphrase_file: Optional[Path] = PASS_OPTION,
          yes: bool = YES_OPTION) -> None:
    """Grant the signer's session key what the policy allows, as on-chain caveats."""
    _grant(ctx, _chain(ctx, chain_id), days, max_calls, erc20_recipient, directory, passphrase_file, yes)


def _grant(ctx, chain, days, max_calls, erc20_recipient, directory, passphrase_file, yes) -> Tier3GrantReply:
    from companion_bridge.companion import tier3
    from policies.model import Policy
    from signer.wire.client import new_idempotency_key
    from signer.wire.grants import GrantError, derive_lanes, describe
    from signer.wire.replies import PolicyShowReply, Tier3GrantReply

    wallet = _wallet(ctx, directory)
    link = _link(chain)
    if tier3.delegated_to(link.code(wallet.main_address)) != chain.delegation.stateless_delegator.lower():
        fail(f"{wallet.main_address} is not delegated on chain {chain.id}: run `owlia wallet authorize` first")
    policy = Policy.model_validate(signer_call_as(ctx, PolicyShowReply, "policy.show", admin=True).policy)
    keys = _active_keys(ctx, chain.id)
    if not keys:
        fail(f"the signer has no active session key on chain {chain.id}: `owlia signer session-key create`")
    session = max(keys, key=lambda k: k.created_at)
    now = link.timestamp()
    expires_at = min(now + days * 86400, int(session.expires_at))
    try:
        lanes = derive_lanes(policy, chain.id, expires_at=expires_at, start=now, erc20_recipient=erc20_recipient,
                             call_limit=max_calls)
    except GrantError as exc:
        fail(str(exc))
    _confirm([f"Grant to session key {session.address} on chain {chain.id}, from {wallet.main_address}:",
              *(f"  - {describe(lane, policy, chain.id)}" for lane in lanes),
              "Periods are fixed on chain: around a period's end up to twice the period amount can go out "
              "(docs/tier3.md)."], yes)
    key = _key(ctx, directory, passphrase_file)
    delegations = tier3.sign_grant(key, lanes, session_address=session.address, chain_id=chain.id,
                                   manager=chain.delegation.manager.lower(), enforcers=chain.delegation.enforcer_map(),
                                   salt=secrets.randbits(64))
    result = signer_call_as(ctx, Tier3GrantReply, "tier3.grant",
                            {"idempotency_key": new_idempotency_key("cli"), "chain_id": chain.id,
                             "delegations": [d.to_json() for d in delegations]}, admin=True)
    live = _live_grant(ctx, chain.id)
    if live is None or any(lane.error is not None for lane in live.lanes):
        fail("the signer took the grant but cannot read it on chain; see `owlia wallet status`")
    typer.echo(f"granted: {result.grant.grant_id}")
    return result


def _revoke(ctx, chain, directory, passphrase_file, yes) -> None:
    from companion_bridge.companion import tier3
    from signer.wire.client import new_idempotency_key
    from signer.wire.delegation import Delegation
    from signer.wire.replies import Tier3RevokeReply

    live = _live_grant(ctx, chain.id)
    if live is None:
        fail(f"no live grant on chain {chain.id}")
    _confirm([f"Revoke grant {live.grant_id} to {live.delegate} on chain {chain.id}: "
              f"{len(live.delegations or ())} delegation(s) are disabled on chain (disableDelegation), "
              "then the signer stops using it."], yes)
    key = _key(ctx, directory, passphrase_file)
    wallet = _wallet(ctx, directory)
    link = _link(chain)
    manager = chain.delegation.manager.lower()
    # The chain first: that is what holds when the signer's host is not yours any more. Until the signer
    # drops the grant below, its pre-check reads disabledDelegations and refuses (onchain.disabled);
    # if a transaction fails here, the grant is still listed and `revoke` can simply be run again.
    for raw in live.delegations or ():
        delegation = Delegation.from_json(raw)
        if link.is_disabled(manager, delegation):
            continue
        receipt = link.send(tier3.disable(key, delegation, manager=manager, **link.tx_fields(wallet.main_address)))
        if receipt["status"] != "0x1" or not link.is_disabled(manager, delegation):
            fail("disableDelegation did not take effect on chain; run `owlia wallet revoke` again")
    signer_call_as(ctx, Tier3RevokeReply, "tier3.revoke",
                   {"idempotency_key": new_idempotency_key("cli"), "grant_id": live.grant_id}, admin=True)
    typer.echo(f"revoked: {live.grant_id} (disabled on chain)")


@app.command("revoke")
def revoke(ctx: typer.Context, chain_id: Optional[int] = CHAIN_OPTION, directory: Optional[Path] = DIR_OPTION,
           passphrase_file: Optional[Path] = PASS_OPTION, yes: bool = YES_OPTION) -> None:
    """Disable the live grant on chain and in the signer."""
    _revoke(ctx, _chain(ctx, chain_id), directory, passphrase_file, yes)


@app.command("rotate")
def rotate(ctx: typer.Context, chain_id: Optional[int] = CHAIN_OPTION, days: int = typer.Option(7, min=1),
           directory: Optional[Path] = DIR_OPTION, passphrase_file: Optional[Path] = PASS_OPTION,
           yes: bool = YES_OPTION) -> None:
    """Revoke the live grant, rotate the session key, grant the new key: never two live grants."""
    from signer.wire.client import new_idempotency_key
    from signer.wire.replies import SessionKeyRetireReply, TopUpReply

    chain = _chain(ctx, chain_id)
    live = _live_grant(ctx, chain.id)
    if live is not None:
        _revoke(ctx, chain, directory, passphrase_file, yes)
    keys = _active_keys(ctx, chain.id)
    if not keys:
        fail(f"no active session key on chain {chain.id}")
    old = max(keys, key=lambda k: k.created_at)
    fresh = signer_call_as(ctx, SessionKeyRetireReply, "session_key.rotate",
                           {"idempotency_key": new_idempotency_key("cli"), "key_id": old.key_id}, admin=True).session_key
    if fresh is None:
        fail("the signer rotated the key but named no successor; see `owlia signer session-key list`")
    if chain.dev:  # gas float for the new key
        signer_call_as(ctx, TopUpReply, "session_key.topup",
                       {"idempotency_key": new_idempotency_key("cli"), "key_id": fresh.key_id}, admin=True)
    typer.echo(f"new session key {fresh.address}")
    _grant(ctx, chain, days, None, None, directory, passphrase_file, yes)


@app.command("freeze")
def freeze(ctx: typer.Context, chain_id: Optional[int] = CHAIN_OPTION, directory: Optional[Path] = DIR_OPTION,
           passphrase_file: Optional[Path] = PASS_OPTION, yes: bool = YES_OPTION) -> None:
    """A 7702 authorization to the zero address: no grant can be redeemed; funds stay with the main key."""
    from companion_bridge.companion import tier3

    chain = _chain(ctx, chain_id)
    wallet = _wallet(ctx, directory)
    _confirm([f"Freeze {wallet.main_address} on chain {chain.id}: it becomes a plain account again and no "
              "session key can spend from it. Run `owlia wallet authorize` and grant again to resume."], yes)
    key = _key(ctx, directory, passphrase_file)
    link = _link(chain)
    receipt = link.send(tier3.freeze(key, **link.tx_fields(wallet.main_address)))
    if receipt["status"] != "0x1" or tier3.delegated_to(link.code(wallet.main_address)) is not None:
        fail("the freeze did not take effect on chain")
    typer.echo(f"frozen: {wallet.main_address} has no code on chain {chain.id}")


@app.command("status")
def status(ctx: typer.Context, chain_id: Optional[int] = CHAIN_OPTION, directory: Optional[Path] = DIR_OPTION,
           as_json: bool = typer.Option(False, "--json")) -> None:
    """The main account, its grants, what is left in each period on chain, and when they expire."""
    from companion_bridge.companion import tier3

    chain = _chain(ctx, chain_id)
    wallet = _wallet(ctx, directory)
    link = _link(chain)
    delegated = tier3.delegated_to(link.code(wallet.main_address))
    balance = int(link._call("eth_getBalance", wallet.main_address, "latest"), 16)
    grants = [g for g in _grants(ctx) if g.chain_id == chain.id]
    if as_json:
        print_json({"account": wallet.main_address, "chain_id": chain.id, "delegated_to": delegated,
                    "balance": str(balance), "grants": [g.model_dump(mode="json", exclude_unset=True,
                                                                     exclude={"delegations"}) for g in grants]})
        return
    state = ("Tier 3 (EIP7702StatelessDeleGator)" if delegated == chain.delegation.stateless_delegator.lower()
             else "FROZEN (plain account)" if delegated is None else f"delegated to an unknown contract {delegated}")
    typer.echo(f"account {wallet.main_address} on chain {chain.id}: {state}; balance {balance} wei")
    if not grants:
        typer.echo("no live grant")
    for g in grants:
        typer.echo(f"grant {g.grant_id} to session key {g.delegate}")
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
