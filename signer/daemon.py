"""Signer home setup and the daemon's life: unlock, load, serve, shut down clean.

Layout of the signer home (0700, owned by the signer's user, never mounted into the bot):
  keystore.json   master key sealed by the passphrase (0600)
  signer.db       clients, session keys (sealed), requests, spend ledger, audit log, and in `meta`
                  the daemon's saved clock (signer.clock; written by the daemon only). Every
                  authority-bearing row carries a MAC under a key derived from the master key
                  (signer.store.integrity): a row edited offline stops the daemon at start.
  audit.anchor    last audit record's seq and hash with their MAC, to detect a truncated log (0600)
  policy.yaml     the policy in force (0600; the bot cannot read or change it)
  admin.token     the local admin CLI's token (0600)
  signer.sock     the JSON-RPC socket (0660)
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from policies.kernel.files import check_private_file, ensure_private_dir, write_private_file
from policies.kernel.passphrase import zeroize
from policies.loader import PolicyError, parse_policy
from signer.auth import ClientRegistry, add_client
from signer.chain import Chain
from signer.clock import SAVE_INTERVAL_SECONDS, SignerClock, estimate, save_state
from signer.engine import Engine
from signer.keystore import create_keystore, unlock
from signer.methods import Methods
from signer.server import SignerServer
from signer.store import audit as audit_store
from signer.store.db import Connection, DatabaseError, connect, get_meta, set_meta, write_transaction
from signer.store.guard import IntegrityRefused, Unlocked
from signer.store.integrity import sealed_row_count
from signer.store.writer import Writer, WriterClosed
from signer.tier1 import devices as devices_store, policy_change
from signer.tier1.approvals import Approvals
from signer.tier1.identity import SignerIdentity
from signer.tier1.policy_live import PolicyKeeper, read_policy_file
from signer.tier2.session_keys import SessionKeys
from signer.wire.protocol import Scope
from signer.wire.settings import KEYSTORE, SignerConfig, SignerPaths

log = logging.getLogger("owlia.signer")


def default_policy_text() -> str:
    from importlib import resources  # lazy: 4 ms, 720 KiB; init only: with tempfile and shutil, 1 MB at rest

    return resources.files("policies").joinpath("defaults/default.yaml").read_text(encoding="utf-8")


def init_home(
    paths: SignerPaths, passphrase: bytearray, *, policy_file: Path | None = None, scrypt_n: int | None = None
) -> None:
    """Create the signer home, keystore, database, policy and the local admin token."""
    ensure_private_dir(paths.home)
    kwargs = {"scrypt_n": scrypt_n} if scrypt_n else {}
    create_keystore(paths.home, passphrase, **kwargs)
    policy_text = policy_file.read_text(encoding="utf-8") if policy_file else default_policy_text()
    parse_policy(policy_text)  # refuse to install a policy that does not validate
    write_private_file(paths.policy, policy_text.encode())
    with unlock(paths.home, passphrase) as master:
        unlocked = Unlocked.from_master(master)
    conn = unlocked.connect(paths.db)
    try:
        with write_transaction(conn):
            unlocked.sealer.seal(
                conn
            )  # empty tables: from here on every authority-bearing row carries its MAC
            # the baseline, so a missing one is never "first start"
            set_meta(conn, policy_change.ACCEPTED, policy_text)
            _, token = add_client(conn, "admin", Scope.ADMIN)
            audit = unlocked.audit_log(conn, paths.anchor)
            audit.append(audit_store.KEYED_KIND, {"legacy_records": 0})
            audit.append("signer.initialized", {"home": str(paths.home)})
            audit.bind_state()
        audit.write_anchor()
        audit.close()
    finally:
        conn.close()
    paths.db.chmod(0o600)
    write_private_file(paths.admin_token, token.encode())


class Daemon:
    """Everything `owlia signer serve` runs, startable in-process for tests and benchmarks."""

    def __init__(self, paths: SignerPaths, config: SignerConfig, passphrase: bytearray) -> None:
        self.paths = paths
        self.config = config
        ensure_private_dir(paths.home)
        for path in (paths.home / KEYSTORE, paths.policy, paths.db):
            check_private_file(path)
        self.master = unlock(paths.home, passphrase)
        zeroize(passphrase)
        policy_text, file_policy = read_policy_file(paths.policy)
        unlocked = Unlocked.from_master(self.master)
        self.writer_conn = unlocked.connect(paths.db)
        # Before anything is read from it: every authority-bearing row must be one the signer wrote.
        self.integrity_checked = self._check_integrity(unlocked)
        self.reader = connect(paths.db)
        # One clock for decisions, windows, expiries and records, never behind what is on record and
        # never far ahead of real time (signer.clock). Everything in the daemon reads this one.
        self.clock = SignerClock.resume(self.reader)
        self.policies = PolicyKeeper(paths.policy, self.reader, policy_text, file_policy, clock=self.clock)
        self.audit = unlocked.audit_log(self.writer_conn, paths.anchor, clock=self.clock)
        self.keys = SessionKeys(self.master, clock=self.clock)
        self.keys.load(self.reader)
        self.ledger = self.policies.ledger()
        self.chains = {c.id: Chain(c, timeout=config.signer.rpc_timeout_seconds) for c in config.chains}
        self.writer = Writer(
            self.writer_conn,
            before_commit=self.audit.bind_state,
            on_commit=self.audit.write_anchor,
            on_inline_commit=self.audit.write_anchor_soon,
            on_rollback=self.audit.reload,
        )
        self.engine = Engine(
            policy=self.policies.policy,
            keys=self.keys,
            ledger=self.ledger,
            chains=self.chains,
            writer=self.writer,
            audit=self.audit,
            reader=self.reader,
            broadcast=config.signer.broadcast,
            pending_ttl=config.signer.pending_ttl_seconds,
            frozen=get_meta(self.reader, "frozen") == "1",
            clock=self.clock,
        )
        if any(c.delegation is not None for c in config.chains):  # Tier 3 (signer.tier3), imported only then:
            # the idle daemon, tests/signer/test_idle_memory.py: 0.5-2 MB per such cut
            from signer.tier3 import grants as tier3_store  # lazy: 6 ms, 480 KiB

            tier3 = tier3_store.Tier3(self.chains)  # its table: made with every signer's (RowSealer.install)
            sessions = {}
            for chain_id in self.chains:
                key = self.keys.current(chain_id)
                if key is not None:
                    sessions[chain_id] = (key.address, key.expires_at)
            for problem in tier3.load(self.reader, self.policies.policy, sessions):
                log.warning(problem)
            self.engine.tier2 = dataclasses.replace(self.engine.tier2, tier3=tier3)  # nonce ceiling kept
        identity = SignerIdentity(self.master)
        self.devices = devices_store.DeviceRegistry(
            self.reader, self.writer, self.audit, self.clock, signer_key=identity.public_key
        )
        self.approvals = Approvals(self.engine, self.devices, identity, clock=self.clock)
        self.engine.approvals = self.approvals
        self.policies.engine, self.policies.approvals = self.engine, self.approvals
        self.approvals.policies = self.policies
        self.server = SignerServer(
            paths.socket,
            Methods(self.engine, config.signer, self.approvals, self.policies).table(),
            ClientRegistry(self.reader),
            allowed_uids=config.signer.allowed_uids,
            max_request_bytes=config.signer.max_request_bytes,
            max_connections=config.signer.max_connections,
            socket_group=config.signer.socket_group,
            clock=self.clock,
        )
        self.engine.more_waiting = self.server.backlog.waiting
        self.engine.sole_connection = self.server.sole_connection
        self._clock_saver: asyncio.Task[None] | None = None

    def _check_integrity(self, unlocked: Unlocked) -> int:
        """Refuse to start over state something without the master key wrote: record why, then raise.

        Refusing (rather than starting without the failing rows) is the one answer that is safe for
        every table: a policy, a kill-switch flag or a main account edited offline has no safe
        stand-in the daemon could pick on its own. Returns how many rows were checked."""
        conn = self.writer_conn
        findings = unlocked.check(conn, self.paths.anchor)
        if not findings:
            return sealed_row_count(conn)
        try:
            with write_transaction(conn):
                now = estimate(conn)
                audit = audit_store.AuditLog(
                    conn, self.paths.anchor, clock=lambda: now, keys=unlocked.audit_keys
                )
                audit.append(
                    "integrity.refused",
                    {"findings": [str(f) for f in findings[:200]], "count": len(findings)},
                )
                # Neither bound to the state (no `bind_state`: what was refused must not pass the next
                # start) nor anchored: the anchor keeps the epoch it holds, and may always lag the log.
            audit.close()
        except DatabaseError:
            log.exception("could not record the integrity refusal")
        finally:
            conn.close()
            self.master.zeroize()
        log.error("%s", IntegrityRefused(findings))
        raise IntegrityRefused(findings)

    def save_clock(self, conn: Connection) -> None:
        """A writer unit: the clock's state now, so that a restart resumes from it (signer.clock)."""
        save_state(conn, self.clock.state())

    async def _save_clock_forever(self) -> None:
        """Every SAVE_INTERVAL_SECONDS, one small commit (or a unit in a batch already under way): the
        time the signer has reached survives a crash, less at most this interval."""
        while True:
            await asyncio.sleep(SAVE_INTERVAL_SECONDS)
            try:
                await self.writer.run(self.save_clock)
            except WriterClosed:
                return
            except Exception:  # noqa: BLE001 - the next round tries again; the last saved state stands
                log.exception("could not save the signer's clock")

    async def start(self) -> None:
        def started(conn: Connection) -> None:
            self.save_clock(
                conn
            )  # where this run resumed from, at once: a crash before the first round loses nothing
            self.policies.record_start(conn, self.audit)
            self.audit.append(
                "signer.started",
                {
                    "policy_hash": self.policies.policy.policy_hash(),
                    "socket": str(self.paths.socket),
                    "session_keys": len(self.keys.active_ids()),
                },
            )

        await self.writer.run(started)
        self._clock_saver = asyncio.create_task(self._save_clock_forever())
        # Transactions still in flight within the windows: their spends stay held until proven (signer.receipts).
        self.engine.receipts.resume(self.chains, self.policies.ledger_since)
        if self.policies.proposal is not None:
            await self.policies.propose(self.policies.proposal)
        await self.server.start()
        log.info("signer listening on %s", self.paths.socket)

    async def stop(self) -> None:
        await self.server.close()
        await self.engine.close()
        if self._clock_saver is not None:
            self._clock_saver.cancel()
            await asyncio.gather(self._clock_saver, return_exceptions=True)

        def stopped(conn: Connection) -> None:
            self.save_clock(conn)  # the last reading: a clean restart loses none of the signer's time
            self.audit.append("signer.stopped", {})

        try:
            await self.writer.run(stopped)
        except Exception:  # noqa: BLE001 - shutting down anyway
            log.warning("could not record the shutdown in the audit log")
        self.writer.close()
        self.audit.close()
        for chain in self.chains.values():
            await chain.close()
        self.keys.close()
        self.master.zeroize()
        self.reader.close()
        self.writer_conn.close()


async def serve_forever(daemon: Daemon) -> None:
    await daemon.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    reloads: set[asyncio.Task[None]] = set()
    loop.add_signal_handler(signal.SIGHUP, lambda: _spawn(reloads, _reload_on_signal(daemon)))
    try:
        await stop.wait()
    finally:
        await daemon.stop()


def _spawn(tasks: set[asyncio.Task[None]], coro: Coroutine[Any, Any, None]) -> None:
    task = asyncio.create_task(coro)
    tasks.add(task)
    task.add_done_callback(tasks.discard)


async def _reload_on_signal(daemon: Daemon) -> None:
    """SIGHUP: read the policy file again; a bad file is logged and changes nothing."""
    try:
        result = await daemon.policies.reload()
    except PolicyError as exc:
        log.error("policy not reloaded: %s", exc)
        return
    log.info("policy reload: %s (in force %s)", result.status, result.policy_hash[:16])
