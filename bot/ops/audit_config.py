"""Audit checks over what the config, the policy and the signer's records allow.

These judge intent rather than files: an allowlist that admits everyone, sign tools reachable
from a group, a policy that never says "enough", a session key that outlived its purpose.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from bot.ops.checks import Finding, Severity, Skip
from bot.ops.context import OpsContext, require_visible
from policies.decision import Outcome

T = TypeVar("T")

CRIT, WARN, INFO = Severity.CRITICAL, Severity.WARNING, Severity.INFO
WILDCARDS = frozenset({"*", "all", "any", "everyone"})


def check_config(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-CONF-001: nothing else can be judged on a config that does not load."""
    if ctx.config_error:
        yield Finding(
            "OWL-CONF-001",
            CRIT,
            ctx.config_error.splitlines()[0],
            "fix the fields named by `owlia doctor`, then re-run the audit",
        )


def _is_wild(values: tuple[str, ...]) -> bool:
    return any(v.strip().lower() in WILDCARDS for v in values)


def check_allowlists(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-ALLOW-001 (wildcards) / OWL-ALLOW-002 (empty): who may talk to the bot."""
    bot = ctx.need_config().bot
    lists = {"bot.pairing.owners": bot.pairing.owners}
    for name in ("telegram", "discord"):
        channel = getattr(bot.channels, name)
        groups = channel.groups if name == "telegram" else channel.guilds
        lists[f"bot.channels.{name}.allow_from"] = channel.allow_from
        group_key = "groups" if name == "telegram" else "guilds"
        lists[f"bot.channels.{name}.{group_key}.allow_chats"] = groups.allow_chats
    for channel_name, rule in bot.tools.channels.items():
        if rule.allow is not None:
            lists[f"bot.tools.channels.{channel_name}.allow"] = rule.allow
    lists["bot.web.allow_private"] = bot.web.allow_private
    for field, values in lists.items():
        if _is_wild(values):
            yield Finding(
                "OWL-ALLOW-001",
                CRIT,
                f"{field} contains a wildcard: it admits everyone",
                f"list the exact ids in {field} (use DM pairing for new users)",
            )
    for name in ("telegram", "discord"):
        channel = getattr(bot.channels, name)
        groups = channel.groups if name == "telegram" else channel.guilds
        if not channel.enabled or ctx.channel_token(name) is None:
            continue
        if not channel.allow_from and not bot.pairing.owners:
            yield Finding(
                "OWL-ALLOW-002",
                INFO,
                f"{name} is on with empty bot.channels.{name}.allow_from and bot.pairing.owners: everyone, "
                "you included, gets a pairing code first, approved on this machine with "
                "`owlia pair approve CODE`",
                f"to skip pairing for yourself, add your own {name} user id to "
                f"bot.channels.{name}.allow_from",
            )
        if groups.enabled and not groups.allow_chats:
            yield Finding(
                "OWL-ALLOW-002",
                INFO,
                f"{name} groups are enabled with an empty allow_chats: no group is admitted",
                f"list the group ids in bot.channels.{name} allow_chats, or disable groups",
            )


def check_group_sign_tools(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-GRP-001: a group chat is many people; sign tools there hand the wallet to all of them."""
    from bot.tools.defi import DEFI_TOOLS  # lazy: 99 ms, 10940 KiB (2 imports)
    from bot.tools.signing import SIGN_TOOLS

    bot = ctx.need_config().bot
    sign_names = {t.name for t in (*SIGN_TOOLS, *DEFI_TOOLS)}
    for name in ("telegram", "discord"):
        channel = getattr(bot.channels, name)
        groups = channel.groups if name == "telegram" else channel.guilds
        if not (channel.enabled and groups.enabled):
            continue
        rule = bot.tools.channels.get(name)
        granted = sorted(sign_names & set(rule.allow or ())) if rule else []
        if granted and not sign_names <= set(bot.tools.deny):
            yield Finding(
                "OWL-GRP-001",
                CRIT,
                f"{name} groups are enabled and bot.tools.channels.{name}.allow grants {', '.join(granted)}",
                f"remove {', '.join(granted)} from bot.tools.channels.{name}.allow "
                f"(sign tools belong in a private DM), or disable {name} groups",
            )


def _load_policy(ctx: OpsContext):
    import os  # lazy: 46 ms, 6460 KiB (2 imports)

    from policies.loader import PolicyError, load_policy

    path = ctx.signer_paths().policy
    require_visible(path)
    if not os.access(path, os.R_OK):
        raise Skip(f"{path} is not readable by this user: run as the signer's user or root")
    try:
        return load_policy(path)
    except PolicyError as exc:
        raise Skip(f"the policy does not load: {exc}") from None


def check_policy(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-POL-001/002/003: limits exist, approvals are bounded, open recipients are capped in USD."""
    policy = _load_policy(ctx)
    unlimited = [a for a in policy.assets if a.per_tx is None and not a.windows]
    if not policy.assets or len(unlimited) == len(policy.assets) and policy.usd is None:
        yield Finding(
            "OWL-POL-001",
            WARN,
            "the policy sets no spending limit at all: every spend waits for you",
            "add per_tx and windows to each asset in the signer's policy.yaml (docs/policy.md), "
            "then restart the signer",
        )
    else:
        for asset in unlimited:
            yield Finding(
                "OWL-POL-001",
                WARN,
                f"asset {asset.symbol} on chain {asset.chain} has no per_tx or window limit",
                f"add per_tx and windows to {asset.symbol} in the policy",
            )
    for asset in policy.assets:
        spenders = [s.name for s in policy.spenders if s.chain == asset.chain]
        if asset.asset != "native" and spenders and asset.per_tx is None:
            yield Finding(
                "OWL-POL-002",
                CRIT,
                f"spenders ({', '.join(spenders)}) may be approved for {asset.symbol} with no per_tx cap: "
                "an approval is bounded only by the windows",
                f"set per_tx for {asset.symbol}; approvals count against it",
            )
    if policy.recipients.unknown == Outcome.ALLOW and policy.usd is None:
        yield Finding(
            "OWL-POL-003",
            WARN,
            "recipients.unknown is allow with no usd limits: new addresses are paid on asset limits alone",
            "set recipients.unknown: escalate, or add usd: {per_tx, windows}",
        )
    if policy.rate_limits.tx_per_hour > 600:
        yield Finding(
            "OWL-POL-003",
            INFO,
            f"rate_limits.tx_per_hour is {policy.rate_limits.tx_per_hour}",
            "lower rate_limits.tx_per_hour to what you really send",
        )
    yield from _undecoded_calls(policy)


def _undecoded_calls(policy) -> Iterator[Finding]:
    """OWL-POL-004: what the policy says about functions the signer cannot decode."""
    from policies.decode import KNOWN  # lazy: 9 ms, 704 KiB

    for c in policy.contracts:
        dead = [s for s in c.selectors if bytes.fromhex(s[2:]) not in KNOWN]
        if dead:
            yield Finding(
                "OWL-POL-004",
                WARN,
                f"contracts: {c.name} lists {', '.join(dead)}, which the signer does not decode: such "
                "calls are denied (decode.opaque), listed or not",
                "remove them, or, if you accept their effect unseen, name each under opaque_calls with "
                "a max_value (docs/policy.md)",
            )
    for o in policy.opaque_calls:
        yield Finding(
            "OWL-POL-004",
            INFO,
            f"opaque_calls: {o.selector} on {o.address} (chain {o.chain}) is signed without being "
            f"decoded, with up to {o.max_value} of the native coin",
            "keep opaque_calls to functions you trust with anything their arguments can do",
        )


def read_signer_db(ctx: OpsContext, read: Callable[[Any], T]) -> T:
    """`read` on the signer's database, read-only, as the signer's user: the bot never imports the
    signer's store (docs/architecture.md). Unreadable is a skip that says whom to run as."""
    import sqlite3  # lazy: 1 ms, 944 KiB

    db = ctx.signer_paths().db
    require_visible(db)
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None, timeout=30)
        try:
            return read(conn)
        finally:
            conn.close()
    except (PermissionError, sqlite3.OperationalError):
        raise Skip(f"{db} is not readable by this user: run as the signer's user or root") from None


def check_session_keys(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-KEY-001 (past TTL yet active) / OWL-KEY-002 (holding more than its cap)."""
    config = ctx.need_config()
    rows = read_signer_db(
        ctx,
        lambda conn: conn.execute(
            "SELECT key_id, chain_id, address, expires_at, balance_cap FROM session_keys WHERE status='active'"
        ).fetchall(),
    )
    now = ctx.now
    for key_id, chain_id, address, expires_at, cap in rows:
        if expires_at <= now:
            yield Finding(
                "OWL-KEY-001",
                WARN,
                f"session key {key_id} expired {int(now - expires_at)}s ago but is still active",
                f"owlia signer session-key rotate {key_id}   (or: revoke {key_id})",
            )
        if int(cap) > config.signer.session_key_balance_cap:
            yield Finding(
                "OWL-KEY-002",
                WARN,
                f"session key {key_id} has a cap of {cap} wei, above "
                f"signer.session_key_balance_cap ({config.signer.session_key_balance_cap})",
                f"owlia signer session-key rotate {key_id}",
            )
        chain = config.chain(chain_id)
        if chain is None:
            continue
        balance = _balance(chain.rpc_url, address, ctx.rpc_timeout)
        if balance is None:
            yield Finding(
                "OWL-KEY-002",
                INFO,
                f"could not read the balance of {key_id} on chain {chain_id}",
                "check the chain RPC with `owlia doctor`",
            )
        elif balance > int(cap):
            yield Finding(
                "OWL-KEY-002",
                WARN,
                f"session key {key_id} holds {balance} wei, above its cap of {cap}",
                f"move the excess out, or `owlia signer session-key rotate {key_id}`",
            )


INIT_ADMIN = ("admin", "admin")
"""(name, scope) of the token `owlia signer init` writes to the signer home's admin.token (0600)."""


def check_client_tokens(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-TOK-001: an active client token that never expires (issued with --no-expiry)."""
    rows = read_signer_db(
        ctx,
        lambda conn: conn.execute(
            "SELECT name, scope FROM clients WHERE expires_at IS NULL AND revoked_at IS NULL ORDER BY created_at"
        ).fetchall(),
    )
    for name, scope in rows:
        if (name, scope) == INIT_ADMIN:
            continue  # the local admin token never leaves the signer home; its file mode is OWL-PERM-003
        yield Finding(
            "OWL-TOK-001",
            WARN,
            f"client token {name!r} ({scope}) never expires: a leaked copy works until it is revoked",
            f"owlia signer client revoke {name} && owlia signer client add {name} --scope {scope}",
        )


def check_unproven_transactions(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-TX-001: signed transactions the node did not accept, whose spends stay held until proven."""

    def read(conn: Any) -> tuple[list[Any], int]:
        rows = conn.execute(
            "SELECT r.chain_id, s.asset, s.amount, r.request_id FROM requests r JOIN spends s"
            " ON s.request_id=r.request_id AND s.state!='released' WHERE r.status='unconfirmed'"
        )
        return rows.fetchall(), conn.execute(
            "SELECT count(*) FROM requests WHERE status='unconfirmed'"
        ).fetchone()[0]

    rows, count = read_signer_db(ctx, read)
    if not count:
        return
    held: dict[str, int] = {}
    for chain_id, asset, amount, _ in rows:
        held[f"{chain_id}:{asset}"] = held.get(f"{chain_id}:{asset}", 0) + int(amount)
    amounts = ", ".join(f"{amount} on {key}" for key, amount in sorted(held.items())) or "no spend"
    yield Finding(
        "OWL-TX-001",
        WARN,
        f"{count} signed transaction(s) the RPC node did not accept may still be mined; they hold "
        f"{amounts} (base units) of your limits until mined or proven dropped",
        "see `owlia signer status` (in_flight); if the node lies, set chains[].check_rpc_url to a "
        "second, independent endpoint",
    )


def check_signer_integrity(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-INT-001: the signer refused to start over authority-bearing state edited offline.

    Read from the audit log without the key (a report; `owlia audit verify` authenticates it), with
    plain read-only SQLite: the bot's process imports nothing of the signer's store."""

    def read(conn: Any) -> tuple[Any, bool]:
        row = conn.execute(
            "SELECT seq, kind, body FROM audit WHERE kind IN ('integrity.refused', 'integrity.sealed')"
            " ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        started = (
            row is not None
            and conn.execute(
                "SELECT 1 FROM audit WHERE kind='signer.started' AND seq>?", (row[0],)
            ).fetchone()
            is not None
        )
        return row, started

    row, started = read_signer_db(ctx, read)
    if row is not None and row[1] == "integrity.refused" and not started:
        findings = json.loads(row[2]).get("findings", [])
        yield Finding(
            "OWL-INT-001",
            CRIT,
            f"signer integrity: the signer refused to start: {len(findings)} authority-bearing row(s) "
            f"were changed without the master key ({'; '.join(findings[:3])})",
            "owlia signer integrity check; then restore signer.db from a backup, or "
            "owlia signer integrity seal (removes what fails)",
        )


def _balance(url: str, address: str, timeout: float) -> int | None:
    from bot.devchain import rpc  # lazy: 31 ms, 9316 KiB

    try:
        return int(rpc(url, "eth_getBalance", [address, "latest"], timeout=timeout), 16)
    except Exception:  # noqa: BLE001 - unreachable RPC is reported, not raised
        return None
