"""Signer benchmarks; prints one JSON object. Run: .venv/bin/python bench/signer_bench.py [--help]

- policy evaluation alone (decode + evaluate of a plain ETH transfer to an address-book entry);
- raw secp256k1 signing (coincurve) and eth-account's sign_transaction, the peer we replaced;
- full Tier 2 requests over the Unix socket to a real `owlia signer serve` process (decide,
  reserve, audit, build, sign; broadcasting off) with 1 and 16 concurrent clients, each run
  `--runs` times with fresh idempotency keys (a reused key would measure the replay path);
- the round trip of a trivial call (`status`) over the same socket: what framing, the token
  re-check, the event loops and the bot's client cost without any signing or fsync;
- the state head's binding at each commit, in process (signer.store.state_head);
- the signer's idle resident memory;
- yardsticks of the machine itself (a Python loop, an fdatasync, a durable SQLite commit, an epoll
  round trip between two processes), so that latencies measured on different machines can be read
  side by side, and the floor under a request (its commit and its round trip) is measured, not assumed;
  and a minimal signer (parse, one signature, a one-row durable commit, reply; nothing else), the
  least any Python signer that commits before replying can do per request here.

`--profile FILE` runs the daemon under cProfile and writes its stats to FILE on shutdown.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import results
from bot.devchain import DevChain, free_port
from policies.context import EvalContext
from policies.decode import decode
from policies.evaluate import evaluate
from policies.intent import Call
from policies.kernel.aio import (
    loop_name,
    run as run_loop,
)
from policies.loader import parse_policy
from signer.serve import DAEMON_LOOP

FRIEND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
BENCH_POLICY = (ROOT / "policies/defaults/dev.yaml").read_text()
PASSPHRASE = b"benchmark passphrase"


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_us": round(ordered[len(ordered) // 2] * 1e6, 1),
        "p99_us": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e6, 1),
        "mean_us": round(statistics.fmean(ordered) * 1e6, 1),
    }


def _timeit(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_evaluation(n: int = 20000) -> dict:
    policy = parse_policy(BENCH_POLICY)
    call = Call(chain_id=31337, to=FRIEND, value=10**15)
    ctx = EvalContext(
        now=time.time(),
        spent={(31337, "native", 86400): 10**16, (31337, "native", 604800): 10**16},
        tx_count={3600: 3},
        new_recipients={86400: 0},
        seen_recipients=frozenset({FRIEND}),
        session_key_expires_at=time.time() + 3600,
        session_key_balance_cap=10**17,
    )
    assert evaluate(policy, decode(call), ctx).outcome.value == "allow"
    decoded = decode(call)
    _timeit(lambda: evaluate(policy, decoded, ctx), 2000)
    return {
        "evaluate": _percentiles(_timeit(lambda: evaluate(policy, decoded, ctx), n)),
        "decode_and_evaluate": _percentiles(_timeit(lambda: evaluate(policy, decode(call), ctx), n)),
    }


def bench_raw_signing(n: int = 5000) -> dict:
    import coincurve
    from eth_account import Account

    from signer.wire.txcodec import Eip1559Tx, sign_eip1559

    key = coincurve.PrivateKey()
    digest = os.urandom(32)
    raw = _percentiles(_timeit(lambda: key.sign_recoverable(digest, hasher=None), n))
    tx = Eip1559Tx(31337, 7, 10**9, 2 * 10**9, 21000, FRIEND, 10**15, b"")
    ours = _percentiles(_timeit(lambda: sign_eip1559(tx, key), n))
    account = Account.from_key(key.secret)
    body = {
        "chainId": 31337,
        "nonce": 7,
        "maxPriorityFeePerGas": 10**9,
        "maxFeePerGas": 2 * 10**9,
        "gas": 21000,
        "to": account.address,
        "value": 10**15,
        "data": b"",
        "type": 2,
    }
    peer = _percentiles(_timeit(lambda: account.sign_transaction(body), max(500, n // 10)))
    return {
        "secp256k1_sign_recoverable": raw,
        "owlia_sign_eip1559": ours,
        "eth_account_sign_transaction": peer,
        "eth_account_over_owlia_p50": round(peer["p50_us"] / ours["p50_us"], 1),
    }


def bench_state_head(n: int = 5000) -> dict:
    """What binding the state head adds to each commit (signer.store.state_head): the digests read,
    one HMAC, the row written, in a transaction on a real signer store (fsync off: the disk is the
    commit's cost, measured separately), with and without the epoch already known."""
    from signer.keystore import MasterKey
    from signer.store.audit import AuditKeys
    from signer.store.guard import Unlocked
    from signer.store.integrity import RowSealer
    from signer.store.state_head import StateBinder

    master = MasterKey(bytearray(os.urandom(32)))
    unlocked = Unlocked(RowSealer(master), AuditKeys.derive(master), StateBinder.from_master(master))
    with tempfile.TemporaryDirectory() as directory:
        conn = unlocked.connect(Path(directory) / "signer.db")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN IMMEDIATE")
        unlocked.sealer.seal(conn)
        conn.execute("COMMIT")
        binder, head = unlocked.binder, "ab" * 32

        def known() -> None:
            binder.bind(conn, 7, head, 0, 1)

        def unknown() -> None:
            binder.bind(conn, 7, head)

        conn.execute("BEGIN IMMEDIATE")
        try:
            _timeit(known, 500)
            result = {
                "bind_epoch_known": _percentiles(_timeit(known, n)),
                "bind_epoch_read": _percentiles(_timeit(unknown, n)),
            }
        finally:
            conn.execute("ROLLBACK")
            conn.close()
    return result


_ECHO = """
import selectors, socket, sys
sock = socket.socket(fileno=int(sys.argv[1]))
sel = selectors.DefaultSelector()
sel.register(sock, selectors.EVENT_READ)
while True:
    sel.select()
    data = sock.recv(65536)
    if not data:
        break
    sock.sendall(data)
"""


def epoll_round_trip(n: int = 3000) -> dict[str, float]:
    """A 200-byte message to another process and back over a Unix socket, each side waiting in
    epoll as the daemon and the bot's client do, with no work in between: what the two wake-ups of
    every request cost on this machine before either side runs a line of its own code."""
    import selectors
    import socket

    mine, theirs = socket.socketpair()
    echo = subprocess.Popen([sys.executable, "-c", _ECHO, str(theirs.fileno())], pass_fds=(theirs.fileno(),))
    theirs.close()
    sel = selectors.DefaultSelector()
    sel.register(mine, selectors.EVENT_READ)
    message = b"x" * 199 + b"\n"

    def once() -> None:
        mine.sendall(message)
        sel.select()
        mine.recv(65536)

    try:
        _timeit(once, 300)
        return _percentiles(_timeit(once, n))
    finally:
        mine.close()
        echo.wait(timeout=10)


_MINIMAL_SIGNER = """
import asyncio, hashlib, json, sqlite3, sys
import coincurve
socket_path, database = sys.argv[1], sys.argv[2]
key = coincurve.PrivateKey()
db = sqlite3.connect(database, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE audit(id INTEGER PRIMARY KEY, request TEXT, signature BLOB)")
async def serve(reader, writer):
    while line := await reader.readline():
        request = json.loads(line)
        signature = key.sign_recoverable(hashlib.sha3_256(line).digest(), hasher=None)
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO audit(request, signature) VALUES(?, ?)", (line.decode(), signature))
        db.execute("COMMIT")
        writer.write(json.dumps({"id": request["id"], "signature": signature.hex()}).encode() + b"\\n")
async def main():
    server = await asyncio.start_unix_server(serve, socket_path)
    print("ready", flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


def minimal_signer(directory: Path, n: int = 2000) -> dict:
    """The least any Python signer that commits before it replies can do per request, on this
    machine: an asyncio server (the daemon's loop) that reads a JSON line, makes one secp256k1
    signature, commits one row with `synchronous=FULL` and writes a JSON reply, driven by one client
    on the bench's loop. No policy, no ledger, no audit chain, no MACs, no token check: a latency
    below this one is out of reach for the real daemon here, however lean its Python."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _MINIMAL_SIGNER,
            str(directory / "minimal.sock"),
            str(directory / "minimal.db"),
        ],
        stdout=subprocess.PIPE,
    )
    body = {"chain_id": 31337, "to": FRIEND, "value": "1000"}

    async def drive() -> tuple[list[float], float]:
        reader, writer = await asyncio.open_unix_connection(str(directory / "minimal.sock"))
        samples = []
        for i in range(-200, n):  # the first 200 grow the WAL file
            if i == 0:
                began = time.perf_counter()
            t0 = time.perf_counter()
            writer.write(json.dumps({"id": i, "method": "sign", "params": body}).encode() + b"\n")
            json.loads(await reader.readline())
            samples.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - began
        writer.close()
        await writer.wait_closed()
        return samples[200:], elapsed

    try:
        if server.stdout is None or server.stdout.readline() != b"ready\n":
            raise RuntimeError("the minimal signer did not start")
        samples, elapsed = run_loop(drive())
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {**_percentiles(samples), "per_second": round(n / elapsed)}


def machine_yardsticks(directory: Path, n: int = 300) -> dict:
    """How fast this machine is at what a request's floor is made of, measured where the signer
    keeps its database: a pure-Python loop, one `fdatasync` of a 4 KB overwrite, an SQLite WAL
    commit of one small row with `synchronous=FULL` (the signer's setting), and an epoll round trip
    between two processes. Latencies from two machines compare only next to these."""
    import sqlite3

    loop_ms = min(_timeit(lambda: sum(range(10**6)), 5)) * 1e3
    path = directory / "yardstick"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"\0" * 8192)
        os.fsync(fd)
        block = b"y" * 4096
        fsync = _percentiles(_timeit(lambda: (os.pwrite(fd, block, 0), os.fdatasync(fd)), n))
    finally:
        os.close(fd)
        path.unlink()
    db = sqlite3.connect(directory / "yardstick.db", isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")

        def commit() -> None:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t(body) VALUES(?)", ("x" * 200,))
            db.execute("COMMIT")

        _timeit(commit, 50)
        wal = _percentiles(_timeit(commit, n))
    finally:
        db.close()
    wake = epoll_round_trip()
    least = minimal_signer(directory, n=max(n, 10) * 5)
    return {
        "python_sum_range_1e6_ms": round(loop_ms, 1),
        "fdatasync_4k_p50_us": fsync["p50_us"],
        "sqlite_wal_full_commit_p50_us": wal["p50_us"],
        "epoll_round_trip_p50_us": wake["p50_us"],
        # no request can be faster than its commit and its two wake-ups
        "floor_commit_plus_round_trip_us": round(wal["p50_us"] + wake["p50_us"], 1),
        # nor than a signer that does nothing else but parse, sign, commit and reply
        "minimal_signer_p50_us": least["p50_us"],
        "minimal_signer_per_second": least["per_second"],
    }


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU the process has used: per request, a measure the other jobs on a shared
    machine disturb far less than latency."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


_RUN_IDS = itertools.count()


async def _requests(socket: Path, token: str, clients: int, total: int, daemon_pid: int) -> dict:
    from signer.wire.client import SignerClient

    conns = [SignerClient(socket, token) for _ in range(clients)]
    for c in conns:
        await c.connect()
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    counter = iter(range(total))
    run = next(_RUN_IDS)

    async def worker(client: SignerClient) -> None:
        for i in counter:
            t0 = time.perf_counter()
            result = await client.sign(
                {"chain_id": 31337, "to": FRIEND, "value": "1000"},
                idempotency_key=f"bench-{os.getpid()}-{run}-{i:07d}",
            )
            latencies.append(time.perf_counter() - t0)
            statuses[result.status] = statuses.get(result.status, 0) + 1

    cpu0, mine0, t0 = _cpu_seconds(daemon_pid), _cpu_seconds(os.getpid()), time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed, cpu1, mine1 = time.perf_counter() - t0, _cpu_seconds(daemon_pid), _cpu_seconds(os.getpid())
    for c in conns:
        await c.close()
    return {
        "clients": clients,
        "requests": total,
        "statuses": statuses,
        **_percentiles(latencies),
        "signs_per_second": round(total / elapsed),
        "signer_cpu_us_per_request": _per_request(cpu0, cpu1, total),
        "client_cpu_us_per_request": _per_request(mine0, mine1, total),
    }


def _per_request(before: tuple[float, float], after: tuple[float, float], n: int) -> dict[str, int]:
    return {
        "user": round((after[0] - before[0]) / n * 1e6),
        "system": round((after[1] - before[1]) / n * 1e6),
    }


def bench_full_requests(
    total: int = 3000, runs: int = 1, profile: Path | None = None, client_counts: tuple[int, ...] = (1, 16)
) -> dict:
    from signer.admin import issue_client
    from signer.daemon import init_home
    from signer.wire.client import SignerClient
    from signer.wire.exchange import new_idempotency_key
    from signer.wire.protocol import Scope
    from signer.wire.settings import SignerPaths, load_signer_config

    policy = parse_policy(BENCH_POLICY)
    raw = policy.model_dump(mode="json")
    for asset in raw["assets"]:
        asset["per_tx"], asset["windows"] = "1", {"24h": "1000000", "7d": "1000000"}
    raw["rate_limits"] = {"tx_per_hour": 10**9, "new_recipients_per_day": 10**6}
    chain = DevChain(port=free_port()).start()
    work = Path(tempfile.mkdtemp(prefix="owb"))
    proc = None
    try:
        home = work / "home"
        home.mkdir(mode=0o700)
        (home / "config.yaml").write_text(
            yaml.safe_dump(
                {
                    "chains": [{"id": 31337, "name": "anvil", "rpc_url": chain.url, "dev": True}],
                    "signer": {"socket": str(work / "s.sock"), "broadcast": False},
                }
            )
        )
        policy_file = work / "policy.yaml"
        policy_file.write_text(yaml.safe_dump(raw))
        paths = SignerPaths.from_config(home, load_signer_config(home))
        init_home(paths, bytearray(PASSPHRASE), policy_file=policy_file, scrypt_n=2**14)
        passfile = work / "pass"
        passfile.write_bytes(PASSPHRASE)
        passfile.chmod(0o600)
        token = issue_client(paths, "bench", Scope.SIGN, passphrase=bytearray(PASSPHRASE))[1]
        # `owlia signer serve` execs `python -m signer.serve`, which would leave cProfile behind: profile that.
        command = (
            ["-m", "cProfile", "-o", str(profile), "-m", "signer.serve", "--home", str(home)]
            if profile
            else ["-m", "bot.cli", "--home", str(home), "signer", "serve"]
        )
        proc = subprocess.Popen(
            [sys.executable, *command, "--passphrase-file", str(passfile)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not paths.socket.exists():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the signer did not start")
            time.sleep(0.05)
        time.sleep(1.0)
        idle_rss = _rss_kb(proc.pid)

        async def run() -> list[dict]:
            async with SignerClient(paths.socket, paths.admin_token.read_text().strip()) as admin:
                await admin.call(
                    "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
                )
            await _requests(
                paths.socket, token, 1, 200, proc.pid
            )  # warm-up: RPC caches, nonce, WAL file size
            results = []
            for clients in client_counts:
                for _ in range(runs):
                    results.append(await _requests(paths.socket, token, clients, total, proc.pid))
            return results

        async def round_trips(n: int = 2000) -> dict:
            async with SignerClient(paths.socket, token) as client:
                for _ in range(200):
                    await client.status()
                samples = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    await client.status()
                    samples.append(time.perf_counter() - t0)
            return _percentiles(samples)

        yardsticks = machine_yardsticks(work)
        results = run_loop(run())
        status_rtt = run_loop(round_trips())
        return {
            "signer_idle_rss_mb": round(idle_rss / 1024, 1),
            "signer_rss_after_mb": round(_rss_kb(proc.pid) / 1024, 1),
            "machine_yardsticks": yardsticks,
            "full_request": results,
            "status_round_trip": status_rtt,
        }
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)
        chain.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per full-request run")
    parser.add_argument(
        "--runs", type=int, default=1, help="runs per client count (the machine may be shared)"
    )
    parser.add_argument("--full-only", action="store_true", help="skip the in-process micro-benchmarks")
    parser.add_argument("--profile", type=Path, help="run the daemon under cProfile, stats to this file")
    parser.add_argument("--clients", default="1,16", help="comma-separated concurrent client counts")
    results.add_arguments(parser)
    args = parser.parse_args()
    report: dict = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "event_loop": loop_name(),
            "signer_event_loop": loop_name(prefer=DAEMON_LOOP),
        },
        "date": time.strftime("%Y-%m-%d"),
    }
    if not args.full_only:
        report["policy_evaluation"] = bench_evaluation()
        report["signing"] = bench_raw_signing()
        report["state_head"] = bench_state_head()
    clients = tuple(int(c) for c in args.clients.split(","))
    report.update(
        bench_full_requests(args.requests, args.runs, args.profile and args.profile.resolve(), clients)
    )
    results.emit("signer", report, args)


if __name__ == "__main__":
    main()
