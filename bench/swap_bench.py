"""A swap next to a transfer: the signer's decision time and the gas of a Tier 2 and a Tier 3 swap; one JSON object.

Run: .venv/bin/python bench/swap_bench.py [--requests N]

One real `owlia signer serve` on anvil with the dev Uniswap v3 market (bot.devmarket, bytecode from
npm) and a policy that lists it. Each request is a `sign.request` over the Unix socket with
broadcasting on, transfers and swaps interleaved; "signer time" is the client's round trip. A swap
costs the signer two more node round trips than a transfer (its own QuoterV2 quote, and the
`eth_simulateV1` of the exact transaction) on top of the gas estimate every call has. Also measured
in process: decode + evaluate alone for each (the quote and simulation given), and `gasUsed` of
each kind from the receipts.

Then Tier 3 on the same signer and chain (the Delegation Framework deployed from npm bytecode, a fresh
main account authorized by EIP-7702 and granted the policy's lanes, the swap lane among them): the same
swap, paid by the main account and redeemed through the swap lane by the session key (`tier3_swap`:
its round trip, the gas of the grant's first redeem and the mean of the later ones).
"""

from __future__ import annotations

import argparse
import asyncio
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
from bot.devchain import DevChain, free_port, rpc
from bot.devcontracts import deploy_delegation_framework
from bot.devmarket import deploy_swap_market
from policies.context import AssetChange, EvalContext, Simulated
from policies.decode import decode
from policies.defi import quote_key
from policies.evaluate import evaluate
from policies.intent import NATIVE, Call
from policies.loader import parse_policy

FRIEND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
PASSPHRASE = b"benchmark passphrase"
SWAP_IN = 10**15  # 0.001 ETH per swap
TRANSFER = 10**14


def swap_data(market: dict, token_out: str, recipient: str, amount: int, min_out: int) -> bytes:
    def word(v: int) -> bytes:
        return v.to_bytes(32, "big")

    def addr(a: str) -> bytes:
        return bytes(12) + bytes.fromhex(a[2:])

    return (
        bytes.fromhex("414bf389")
        + addr(market["weth"])
        + addr(token_out)
        + word(3000)
        + addr(recipient)
        + word(int(time.time()) + 300)
        + word(amount)
        + word(min_out)
        + word(0)
    )


def policy_for(market: dict) -> dict:
    raw = parse_policy((ROOT / "policies/defaults/dev.yaml").read_text()).model_dump(mode="json")
    tusd = market["tokens"][0]["address"]
    for asset in raw["assets"]:
        asset.update(per_tx="1", windows={"24h": "1000000"}, price_usd="3000")
    raw["assets"].append(
        {
            "chain": 31337,
            "asset": tusd,
            "symbol": "TUSD",
            "decimals": 18,
            "per_tx": "1000000",
            "price_usd": "1",
        }
    )
    raw["swaps"] = {
        "routers": [
            {
                "chain": 31337,
                "address": market["router"],
                "quoter": market["quoter"],
                "weth": market["weth"],
                "name": "uniswap-v3",
            }
        ],
        "tokens_in": [{"chain": 31337, "asset": "native"}],
        "tokens_out": [{"chain": 31337, "asset": tusd}],
        "max_slippage_bps": 100,
        "max_price_impact_bps": 300,
        "max_deadline_seconds": 600,
    }
    raw["rate_limits"] = {"tx_per_hour": 10**9, "new_recipients_per_day": 10**6}
    raw["recipients"]["unknown"] = "allow"
    return {k: v for k, v in raw.items() if v is not None}


def quote(url: str, market: dict, token_out: str, amount: int) -> int:
    data = (
        bytes.fromhex("c6a5026a")
        + bytes(12)
        + bytes.fromhex(market["weth"][2:])
        + bytes(12)
        + bytes.fromhex(token_out[2:])
        + amount.to_bytes(32, "big")
        + (3000).to_bytes(32, "big")
        + bytes(32)
    )
    return int(
        rpc(url, "eth_call", [{"to": market["quoter"], "data": "0x" + data.hex()}, "latest"])[2:66], 16
    )


def stats(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(ordered[len(ordered) // 2] * 1e3, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3, 2),
        "mean_ms": round(statistics.fmean(ordered) * 1e3, 2),
    }


def bench_evaluation(policy_raw: dict, market: dict, n: int) -> dict:
    """decode + evaluate alone, in process: a transfer, and a swap with its quote and simulation given."""
    policy = parse_policy(yaml.safe_dump(policy_raw))
    payer = "0x" + "ab" * 20
    tusd = market["tokens"][0]["address"]
    transfer = Call(31337, FRIEND, TRANSFER)
    swap = Call(31337, market["router"], SWAP_IN, swap_data(market, tusd, payer, SWAP_IN, 2_970 * SWAP_IN))
    now = time.time()
    plain = EvalContext(now=now, session_key_expires_at=now + 3600)
    decoded = decode(swap)
    quotes = {quote_key(31337, market["quoter"], s): 2_990 * SWAP_IN for s in decoded.swaps()}
    rich = EvalContext(
        now=now,
        session_key_expires_at=now + 3600,
        payer=payer,
        swap_quotes=quotes,
        simulation=Simulated(
            (AssetChange(payer, NATIVE, -SWAP_IN),), outflows=(AssetChange(payer, NATIVE, -SWAP_IN),)
        ),
    )
    out = {}
    for name, call, ctx in (("transfer", transfer, plain), ("swap", swap, rich)):
        assert evaluate(policy, decode(call), ctx).outcome.value == "allow", name
        t0 = time.perf_counter()
        for _ in range(n):
            evaluate(policy, decode(call), ctx)
        out[f"{name}_us"] = round((time.perf_counter() - t0) / n * 1e6, 1)
    return out


def _receipt(url: str, tx_hash: str) -> dict:
    for _ in range(400):
        receipt = rpc(url, "eth_getTransactionReceipt", [tx_hash])
        if receipt:
            assert receipt["status"] == "0x1", tx_hash
            return receipt
        time.sleep(0.025)
    raise RuntimeError(f"no receipt for {tx_hash}")


async def tier3_swaps(chain, market, contracts, paths, token, key, raw_policy, n) -> dict:
    """Authorize a fresh main account, grant the policy's lanes (the swap lane among them), then swap
    through it n + 1 times: the round trip and the gas of each redeem, the first one apart."""
    import secrets

    import coincurve

    from companion_bridge.companion import tier3 as companion
    from signer.wire.client import SignerClient
    from signer.wire.exchange import new_idempotency_key
    from signer.wire.grants import derive_lanes
    from signer.wire.txcodec import address_of

    main_key = coincurve.PrivateKey(secrets.token_bytes(32))
    main = address_of(main_key)
    funder = rpc(chain.url, "eth_accounts")[0]
    _receipt(
        chain.url, rpc(chain.url, "eth_sendTransaction", [{"from": funder, "to": main, "value": hex(10**18)}])
    )
    raw = companion.authorize(
        main_key,
        chain_id=31337,
        nonce=int(rpc(chain.url, "eth_getTransactionCount", [main, "pending"]), 16),
        implementation=contracts["stateless_delegator"],
        max_fee=20 * 10**9,
        max_priority_fee=10**9,
    )
    _receipt(chain.url, rpc(chain.url, "eth_sendRawTransaction", ["0x" + raw.hex()]))
    now = int(rpc(chain.url, "eth_getBlockByNumber", ["latest", False])["timestamp"], 16)
    policy = parse_policy(yaml.safe_dump(raw_policy))
    lanes = derive_lanes(
        policy, 31337, expires_at=min(now + 86400, int(key["expires_at"])), nonce=0, start=now, delegator=main
    )
    delegations = companion.sign_grant(
        main_key,
        lanes,
        session_address=key["address"],
        chain_id=31337,
        manager=contracts["manager"],
        enforcers=contracts["enforcers"],
        salt=1,
    )
    async with SignerClient(paths.socket, paths.admin_token.read_text().strip()) as admin:
        await admin.call_json(
            "tier3.grant",
            {
                "idempotency_key": new_idempotency_key(),
                "chain_id": 31337,
                "delegations": [d.to_json() for d in delegations],
            },
        )
    tusd = market["tokens"][0]["address"]
    times, used = [], []
    async with SignerClient(paths.socket, token) as client:
        for _ in range(n + 1):
            q = quote(chain.url, market, tusd, SWAP_IN)
            intent = {
                "chain_id": 31337,
                "to": market["router"],
                "value": str(SWAP_IN),
                "data": "0x" + swap_data(market, tusd, main, SWAP_IN, q - q // 200).hex(),
            }
            t0 = time.perf_counter()
            reply = await client.sign(intent, idempotency_key=new_idempotency_key("b3"))
            times.append(time.perf_counter() - t0)
            if reply.status.value != "signed":
                raise RuntimeError(
                    f"the Tier 3 swap was {reply.status.value}: {reply.rule_id} {reply.reason}"
                )
            receipt = _receipt(chain.url, str(reply.tx_hash))
            assert receipt["to"].lower() == contracts["manager"].lower()
            used.append(int(receipt["gasUsed"], 16))
    return {
        "signer_round_trip": stats(times[1:]),
        "gas_used_first": used[0],
        "gas_used_mean": round(statistics.fmean(used[1:])),
        "lanes": len(lanes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--requests", type=int, default=40, help="requests of each kind (swaps and transfers)"
    )
    parser.add_argument("--evaluations", type=int, default=5000)
    results.add_arguments(parser)
    args = parser.parse_args()

    from signer.admin import issue_client
    from signer.daemon import init_home
    from signer.wire.client import SignerClient
    from signer.wire.exchange import new_idempotency_key
    from signer.wire.protocol import Scope
    from signer.wire.settings import SignerPaths, load_signer_config

    chain = DevChain(port=free_port()).start()
    work = Path(tempfile.mkdtemp(prefix="owsw"))
    proc = None
    try:
        market = deploy_swap_market(chain.url)
        contracts = deploy_delegation_framework(chain.url)
        tusd = market["tokens"][0]["address"]
        raw_policy = policy_for(market)
        home = work / "home"
        home.mkdir(mode=0o700)
        (home / "config.yaml").write_text(
            yaml.safe_dump(
                {
                    "chains": [
                        {
                            "id": 31337,
                            "name": "anvil",
                            "rpc_url": chain.url,
                            "dev": True,
                            "delegation": contracts,
                        }
                    ],
                    "signer": {"socket": str(work / "s.sock"), "session_key_balance_cap": 10**18},
                }
            )
        )
        policy_file = work / "policy.yaml"
        policy_file.write_text(yaml.safe_dump(raw_policy))
        paths = SignerPaths.from_config(home, load_signer_config(home))
        init_home(paths, bytearray(PASSPHRASE), policy_file=policy_file, scrypt_n=2**14)
        passfile = work / "pass"
        passfile.write_bytes(PASSPHRASE)
        passfile.chmod(0o600)
        token = issue_client(paths, "bench", Scope.SIGN, passphrase=bytearray(PASSPHRASE))[1]
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bot.cli",
                "--home",
                str(home),
                "signer",
                "serve",
                "--passphrase-file",
                str(passfile),
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not paths.socket.exists():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the signer did not start")
            time.sleep(0.05)

        async def run() -> dict:
            async with SignerClient(paths.socket, paths.admin_token.read_text().strip()) as admin:
                created = await admin.call_json(
                    "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
                )
                key = created["session_key"]
                await admin.call(
                    "session_key.topup", {"idempotency_key": new_idempotency_key(), "key_id": key["key_id"]}
                )
            payer = key["address"].lower()
            times: dict[str, list[float]] = {"transfer": [], "swap": []}
            hashes: dict[str, list[str]] = {"transfer": [], "swap": []}
            async with SignerClient(paths.socket, token) as client:
                for i in range(args.requests + 2):  # the first two of each warm the caches
                    q = quote(chain.url, market, tusd, SWAP_IN)
                    swap = {
                        "chain_id": 31337,
                        "to": market["router"],
                        "value": str(SWAP_IN),
                        "data": "0x" + swap_data(market, tusd, payer, SWAP_IN, q - q // 200).hex(),
                    }
                    transfer = {"chain_id": 31337, "to": FRIEND, "value": str(TRANSFER)}
                    for kind, intent in (("transfer", transfer), ("swap", swap)):
                        t0 = time.perf_counter()
                        reply = await client.sign(intent, idempotency_key=new_idempotency_key("b"))
                        elapsed = time.perf_counter() - t0
                        if reply.status.value != "signed":
                            raise RuntimeError(
                                f"{kind} was {reply.status.value}: {reply.rule_id} {reply.reason}"
                            )
                        if i >= 2:
                            times[kind].append(elapsed)
                            hashes[kind].append(str(reply.tx_hash))
            gas = {}
            for kind, tx_hashes in hashes.items():
                used = []
                for h in tx_hashes:
                    for _ in range(200):
                        receipt = rpc(chain.url, "eth_getTransactionReceipt", [h])
                        if receipt:
                            break
                        time.sleep(0.02)
                    assert receipt and receipt["status"] == "0x1", (kind, h)
                    used.append(int(receipt["gasUsed"], 16))
                gas[kind] = round(statistics.fmean(used))
            tier3 = await tier3_swaps(chain, market, contracts, paths, token, key, raw_policy, args.requests)
            return {
                "signer_round_trip": {k: stats(v) for k, v in times.items()},
                "gas_used_mean": gas,
                "tier3_swap": tier3,
            }

        report = asyncio.run(run())
        report["decode_and_evaluate"] = bench_evaluation(raw_policy, market, args.evaluations)
        report["requests"] = args.requests
        results.emit("swap", report, args)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)
        chain.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
