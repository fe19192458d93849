"""`owlia security audit`: files, sockets and who can read what.

Each check is a small function over an `OpsContext` that yields findings; the config, policy and
session-key checks live in `audit_config`. Ids are stable: never reuse one for a new meaning.
"""

from __future__ import annotations

import grp
import json
import os
from collections.abc import Iterator
from pathlib import Path

from bot.ops import audit_config
from bot.ops.audit_mainkey import check_main_key_placement
from bot.ops.checks import Check, Finding, Report, Severity, Skip, mode_of, run_checks, too_open
from bot.ops.context import OpsContext, is_socket, readable_by, require_visible
from bot.ops.sandbox import probe_sandbox
from bot.security.redact import find_secrets, redact_obj

CRIT, WARN, INFO = Severity.CRITICAL, Severity.WARNING, Severity.INFO
SIGNER_SECRETS = ("keystore.json", "signer.db", "policy.yaml", "admin.token", "audit.anchor")


def check_home_perms(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-PERM-001: the home holds sessions and memory; config.yaml is written 0600 by init."""
    if not ctx.home.is_dir():
        raise Skip(f"{ctx.home} does not exist: run `owlia init`")
    config = ctx.home / "config.yaml"
    # `owlia init --docker` writes config.yaml 0644 on purpose: three container uids read it through
    # a read-only mount, and it holds no secret (OWL-SEC-001 checks that). Nobody can chmod it there.
    config_allowed = 0o644 if on_read_only_mount(config) else 0o600
    for path, allowed in (
        (ctx.home, 0o700),
        (config, config_allowed),
        (ctx.home / "logs", 0o700),
        (ctx.home / "sessions", 0o700),
    ):
        if finding := too_open("OWL-PERM-001", WARN, path, allowed):
            yield finding
    logs = ctx.home / "logs"
    if logs.is_dir():
        for path in sorted(logs.iterdir()):
            if finding := too_open("OWL-PERM-001", WARN, path, 0o600):
                yield finding


def on_read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_secret_perms(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-PERM-002: a token another local user can read is a leaked token."""
    if finding := too_open("OWL-PERM-002", CRIT, ctx.secrets_dir, 0o700):
        yield finding
    if not ctx.secrets_dir.is_dir():
        return
    for name in sorted(p.name for p in ctx.secrets_dir.iterdir()):
        if finding := too_open("OWL-PERM-002", CRIT, ctx.secrets_dir / name, 0o600):
            yield finding


def check_oauth_perms(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-OAUTH-001: auth.json holds refresh tokens that outlive any API key rotation."""
    for name in ("auth.json", "auth.json.lock"):
        if finding := too_open("OWL-OAUTH-001", CRIT, ctx.home / name, 0o600):
            yield finding


def check_signer_perms(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-PERM-003: the signer home is 0700 and every file in it 0600 (the daemon refuses otherwise)."""
    paths = ctx.signer_paths()
    require_visible(paths.home)
    if finding := too_open("OWL-PERM-003", CRIT, paths.home, 0o700):
        yield finding
    try:
        names = [n for n in os.listdir(paths.home) if not n.endswith(".sock")]
    except PermissionError:
        raise Skip(f"{paths.home} is not readable by this user: run as the signer's user or root") from None
    for name in sorted(names):
        if finding := too_open("OWL-PERM-003", CRIT, paths.home / name, 0o600):
            yield finding


def check_socket(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-SOCK-001: 0660 at most, in the configured group, in a directory others cannot write."""
    config = ctx.need_config()
    sock = ctx.signer_paths().socket
    if not is_socket(sock):
        raise Skip(f"no signer socket at {sock} (the signer is not running)")
    if finding := too_open("OWL-SOCK-001", CRIT, sock, 0o660):
        yield finding
    wanted = config.signer.socket_group
    if wanted:
        try:
            gid = grp.getgrnam(wanted).gr_gid
        except KeyError:
            gid = None
        if gid is not None and os.lstat(sock).st_gid != gid:
            yield Finding(
                "OWL-SOCK-001",
                CRIT,
                f"{sock} is not in group {wanted!r}",
                f"restart the signer (it sets the group) or `chgrp {wanted} {sock}`",
            )
    parent_mode = mode_of(sock.parent) or 0
    if parent_mode & 0o002:
        yield Finding(
            "OWL-SOCK-001",
            CRIT,
            f"{sock.parent} is world-writable: anyone can replace the socket",
            f"move signer.socket to a private directory or `chmod o-w {sock.parent}`",
        )


def check_isolation(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-ISO-001: the bot's user must not be able to read the signer home or its keys."""
    paths = ctx.signer_paths()
    if ctx.bot_uid is None:
        raise Skip("cannot tell the bot's user: pass --bot-user")
    try:
        signer_uid = paths.home.stat().st_uid
    except FileNotFoundError:
        raise Skip(f"no signer home at {paths.home}") from None
    except PermissionError:
        if ctx.bot_uid == os.geteuid():
            return  # we are the bot's user and cannot even look: that is the pass
        raise Skip(f"{paths.home} is hidden from this user: run as root with --bot-user") from None
    if signer_uid == ctx.bot_uid:
        yield Finding(
            "OWL-ISO-001",
            WARN,
            f"the bot and the signer run as the same user (uid {signer_uid}): a compromised bot "
            "could read the keystore and any passphrase file",
            "run them as two users: `owlia service install` or `owlia init --docker`",
        )
        return
    for target in [paths.home, *(paths.home / n for n in SIGNER_SECRETS)]:
        if readable_by(target, ctx.bot_uid):
            yield Finding(
                "OWL-ISO-001",
                CRIT,
                f"the bot's user (uid {ctx.bot_uid}) can read {target}",
                f"chmod 700 {paths.home}; keep it owned by the signer's user only",
            )
            return
    passphrase = ctx.secrets_dir / "signer.passphrase"  # in the bot's home, it defeats the split
    if passphrase.exists():
        yield Finding(
            "OWL-ISO-001",
            CRIT,
            f"{passphrase} holds the signer passphrase in the bot's home",
            "move it to the signer's user (e.g. /etc/owliabot/signer.passphrase, 0600), then delete it here",
        )


def check_sandbox(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-SKILL-001: skills run untrusted code; with no working sandbox they must not run at all."""
    backend = ctx.need_config().bot.skills.backend
    probe = probe_sandbox(ctx.need_config().bot.skills)
    if probe.backend is None:
        yield Finding(
            "OWL-SKILL-001",
            CRIT,
            f"no working sandbox for skills (backend {backend}): {probe.detail}",
            "apt-get install bubblewrap (or set bot.skills.backend to an installed one)",
        )


def check_gateway(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-GW-001/002: exposed without a token, or with a token anyone could guess."""
    from bot.gateway.server import is_loopback  # lazy: 35 ms, 8792 KiB

    gateway = ctx.need_config().bot.gateway
    if not gateway.enabled:
        return
    exposed = not is_loopback(gateway.host)
    token_file = ctx.secrets_dir / "gateway.token"
    try:
        token = token_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = None
    except PermissionError:
        raise Skip(f"{token_file} is not readable by this user") from None
    if exposed and not token:
        yield Finding(
            "OWL-GW-001",
            CRIT,
            f"the gateway binds {gateway.host} (beyond loopback) with no token",
            f"set bot.gateway.host: 127.0.0.1, or create the token: "
            f"`python -c 'import secrets;print(secrets.token_urlsafe(32))' > {token_file}; "
            f"chmod 600 {token_file}`",
        )
    elif token and (reason := weak_token_reason(token)):
        yield Finding(
            "OWL-GW-002",
            CRIT if exposed else WARN,
            f"the gateway token in {token_file} is weak: {reason}",
            f"rm {token_file} (a new 256-bit token is created at the next start)",
        )


KNOWN_DEFAULTS = frozenset(
    {
        "changeme",
        "change-me",
        "secret",
        "password",
        "token",
        "admin",
        "owliabot",
        "test",
        "example",
        "default",
        "letmein",
        "your-token-here",
    }
)


def weak_token_reason(token: str) -> str | None:
    from bot.gateway.auth import MIN_TOKEN_LENGTH  # lazy: 37 ms, 8896 KiB

    lowered = token.lower()
    if lowered in KNOWN_DEFAULTS or any(lowered.startswith(d) for d in ("changeme", "your-token", "example")):
        return "a well-known default"
    if len(token) < MIN_TOKEN_LENGTH:
        return f"shorter than {MIN_TOKEN_LENGTH} characters"
    if len(set(token)) < 12:
        return "too few distinct characters to be random"
    return None


def check_secrets_in_files(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-SEC-001/002: secrets pasted into config.yaml, or leaked into the bot's logs."""
    targets = [("OWL-SEC-001", ctx.home / "config.yaml")]
    logs = ctx.home / "logs"
    if logs.is_dir():
        targets += [("OWL-SEC-002", p) for p in sorted(logs.rglob("*")) if p.is_file() and not p.is_symlink()]
    for check_id, path in targets:
        try:
            text = _tail(path)
        except (FileNotFoundError, PermissionError):
            continue
        kinds = sorted(_leaked_kinds(text))
        if kinds:
            where = "config.yaml" if check_id == "OWL-SEC-001" else str(path)
            hint = (
                "remove it, rotate the secret, and keep secrets in secrets/ (0600) or auth.json"
                if check_id == "OWL-SEC-001"
                else f"rotate the leaked secret, then delete or redact {path}"
            )
            yield Finding(
                check_id, CRIT, f"{where} contains what looks like a secret ({', '.join(kinds)})", hint
            )


def check_audit_chains(ctx: OpsContext) -> Iterator[Finding]:
    """OWL-LOG-001: the bot's audit logs are unbroken hash chains: no record removed, reordered or
    edited since it was written. (Whoever can write the file can also rewrite the whole chain; the
    signer's keyed audit is the record of what was signed.)"""
    from bot.observability.audit import (  # lazy: 5 ms, 4556 KiB
        bot_audit_path,
        skills_audit_path,
        verify_audit,
    )

    checked = 0
    for path in (bot_audit_path(ctx.home), skills_audit_path(ctx.home)):
        try:
            ok, count, problem = verify_audit(path)
        except FileNotFoundError:
            continue
        except PermissionError:
            raise Skip(f"{path} is not readable by this user: run the audit as the bot's user") from None
        except ValueError:  # bytes that are not UTF-8
            ok, count, problem = False, 0, "not UTF-8 text"
        checked += 1
        if not ok:
            yield Finding(
                "OWL-LOG-001",
                WARN,
                f"{path}: {problem}; intact before it: {count}",
                f"keep a copy of {path} to investigate, and compare what it says was done with the "
                f"signer's own audit (`owlia signer audit verify`, `owlia signer audit tail`)",
            )
    if not checked:
        raise Skip("no audit log yet: the bot has not run a tool")


MAX_SCAN_BYTES = 4 << 20


def _leaked_kinds(text: str) -> set[str]:
    """Secret kinds in a file. JSON lines (our audit logs) are read as data, so their public hashes
    (record hashes, chain links, tx hashes) are not mistaken for 64-hex private keys."""
    kinds: set[str] = set()
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            kinds |= {f.kind for f in find_secrets(line)}
        else:
            leaked = list(_redacted_values(record, redact_obj(record)))
            found = {f.kind for value in leaked for f in find_secrets(value)}
            kinds |= found or ({"secret field"} if leaked else set())
    return kinds


def _redacted_values(original: object, redacted: object) -> Iterator[str]:
    """The strings redaction would change (or remove), as they are in the file."""
    if isinstance(original, str):
        if original != redacted:
            yield original
    elif isinstance(original, dict):
        for key, value in original.items():
            yield from _redacted_values(value, redacted.get(key) if isinstance(redacted, dict) else None)
    elif isinstance(original, list):
        others = redacted if isinstance(redacted, list) else []
        for index, value in enumerate(original):
            yield from _redacted_values(value, others[index] if index < len(others) else None)


def _tail(path: Path) -> str:
    """The last MAX_SCAN_BYTES of a file: logs grow, and a leak is as likely at the end as anywhere."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - MAX_SCAN_BYTES))
        return handle.read().decode("utf-8", "replace")


AUDIT_CHECKS: tuple[Check, ...] = (
    Check("OWL-CONF-001", "config.yaml loads", audit_config.check_config),
    Check("OWL-PERM-001", "home, config and logs are private", check_home_perms),
    Check("OWL-PERM-002", "secrets/ is 0700 and tokens 0600", check_secret_perms),
    Check("OWL-OAUTH-001", "auth.json (OAuth tokens) is 0600", check_oauth_perms),
    Check("OWL-PERM-003", "signer home 0700, key files 0600", check_signer_perms),
    Check("OWL-SOCK-001", "signer socket 0660 in its group", check_socket),
    Check("OWL-ISO-001", "the bot's user cannot read the signer home", check_isolation),
    Check("OWL-MAIN-001", "the main key is not on the signer's host", check_main_key_placement),
    Check("OWL-GW-001", "gateway not exposed without a strong token", check_gateway),
    Check("OWL-ALLOW-001", "no wildcard or empty allowlists", audit_config.check_allowlists),
    Check("OWL-GRP-001", "groups cannot reach sign tools", audit_config.check_group_sign_tools),
    Check("OWL-POL-001", "the policy has limits and bounded approvals", audit_config.check_policy),
    Check("OWL-KEY-001", "session keys within TTL and balance cap", audit_config.check_session_keys),
    Check("OWL-TOK-001", "no client token that never expires", audit_config.check_client_tokens),
    Check("OWL-TX-001", "no signed transactions of unproven fate", audit_config.check_unproven_transactions),
    Check("OWL-INT-001", "signer state not edited offline", audit_config.check_signer_integrity),
    Check("OWL-SKILL-001", "a working sandbox backend for skills", check_sandbox),
    Check("OWL-SEC-001", "no secrets in config or logs", check_secrets_in_files),
    Check("OWL-LOG-001", "the bot's audit logs are unbroken chains", check_audit_chains),
)


def security_audit(ctx: OpsContext, *, fixed: list[str] | None = None) -> Report:
    return run_checks("security-audit", AUDIT_CHECKS, ctx, fixed=fixed)
