"""Tier 3 next to Tier 2: gas used on chain and signer time per transfer; prints one JSON object.

Run: .venv/bin/python bench/tier3_bench.py [--requests N]

Two real `owlia signer serve` processes on one anvil (prague) with the Delegation Framework deployed
from the npm bytecode: one plain Tier 2 (the session key sends the ETH itself), one Tier 3 (the
session key calls redeemDelegations; the main account, delegated by EIP-7702, pays). Each request is
a `sign.request` over the Unix socket with broadcasting on; "signer time" is the client's round trip
(decide, reserve, the on-chain reads Tier 3 adds, gas estimate, sign, durable commit, broadcast).
Gas is `gasUsed` from each receipt. The first transfer of each is reported apart (`gas_used_first`):
the first redeem of a grant writes every stateful enforcer's slots from zero (period, lifetime total,
nonce read cold), so it costs more than the ones after it. `revoke_all_gas` is the main key's one
`incrementNonce` that ends every grant.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import coincurve
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import results
from bot.devchain import DevChain, free_port, rpc
from bot.devcontracts import deploy_delegation_framework
from companion_bridge.companion import tier3 as companion
from policies.loader import parse_policy
from signer.wire.txcodec import address_of

FRIEND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
PASSPHRASE = b"benchmark passphrase"
VALUE = 10**12


def _wait(url: str, tx_hash: str) -> dict:
    for _ in range(2000):
        receipt = rpc(url, "eth_getTransactionReceipt", [tx_hash])
        if receipt:
            return receipt
        time.sleep(0.01)
    raise RuntimeError(f"no receipt for {tx_hash}")


def _policy_text() -> str:
    raw = parse_policy((ROOT / "policies/defaults/dev.yaml").read_text()).model_dump(mode="json")
    for asset in raw["assets"]:
        asset["per_tx"], asset["windows"] = "1", {"24h": "1000"}
    raw["rate_limits"] = {"tx_per_hour": 10**9, "new_recipients_per_day": 10**6}
    return yaml.safe_dump(raw)


class Signer:
    def __init__(self, work: Path, chain: DevChain, delegation: dict | None) -> None:
        from signer.daemon import init_home
        from signer.wire.settings import SignerPaths, load_signer_config

        self.home = work / "home"
        self.home.mkdir(mode=0o700)
        entry = {"id": 31337, "name": "anvil", "rpc_url": chain.url, "dev": True}
        if delegation is not None:
            entry["delegation"] = delegation
        (self.home / "config.yaml").write_text(
            yaml.safe_dump({"chains": [entry], "signer": {"socket": str(work / "s.sock")}})
        )
        policy = work / "policy.yaml"
        policy.write_text(_policy_text())
        self.paths = SignerPaths.from_config(self.home, load_signer_config(self.home))
        init_home(self.paths, bytearray(PASSPHRASE), policy_file=policy, scrypt_n=2**14)
        passfile = work / "pass"
        passfile.write_bytes(PASSPHRASE)
        passfile.chmod(0o600)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bot.cli",
                "--home",
                str(self.home),
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
        while not self.paths.socket.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the signer did not start")
            time.sleep(0.05)
        time.sleep(0.5)

    async def admin(self, method: str, params: dict) -> dict:
        from signer.wire.client import SignerClient
        from signer.wire.exchange import new_idempotency_key

        async with SignerClient(self.paths.socket, self.paths.admin_token.read_text().strip()) as client:
            return await client.call_json(method, {"idempotency_key": new_idempotency_key("b"), **params})

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


async def _transfers(signer: Signer, url: str, n: int) -> dict:
    from signer.admin import issue_client
    from signer.wire.client import SignerClient
    from signer.wire.exchange import new_idempotency_key
    from signer.wire.protocol import Scope

    token = issue_client(signer.paths, "bench", Scope.SIGN, passphrase=bytearray(PASSPHRASE))[1]
    latencies, gas, first = [], [], None
    async with SignerClient(signer.paths.socket, token) as client:
        for i in range(n + 3):
            start = time.perf_counter()
            result = await client.call(
                "sign.request",
                {
                    "idempotency_key": new_idempotency_key(),
                    "intent": {"chain_id": 31337, "to": FRIEND, "value": str(VALUE)},
                },
            )
            elapsed = time.perf_counter() - start
            if result.status != "signed":
                raise RuntimeError(f"not signed: {result.rule_id} {result.reason}")
            receipt = _wait(url, result.tx_hash)
            if i == 0:
                first = int(receipt["gasUsed"], 16)
            if i >= 3:  # the first few warm the RPC connection, nonce cache and code-hash check
                latencies.append(elapsed)
                gas.append(int(receipt["gasUsed"], 16))
    ordered = sorted(latencies)
    return {
        "requests": n,
        "gas_used_first": first,
        "gas_used_mean": round(statistics.fmean(gas)),
        "gas_used_max": max(gas),
        "signer_ms_p50": round(ordered[len(ordered) // 2] * 1e3, 2),
        "signer_ms_p90": round(ordered[int(len(ordered) * 0.9)] * 1e3, 2),
        "signer_ms_mean": round(statistics.fmean(ordered) * 1e3, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    results.add_arguments(parser)
    args = parser.parse_args()
    chain = DevChain(port=free_port()).start()
    signers: list[Signer] = []
    try:
        contracts = deploy_delegation_framework(chain.url)
        work = Path(tempfile.mkdtemp(prefix="owt3"))
        (work / "t2").mkdir()
        (work / "t3").mkdir()
        tier2 = Signer(work / "t2", chain, None)
        signers.append(tier2)
        tier3 = Signer(work / "t3", chain, contracts)
        signers.append(tier3)
        key2 = asyncio.run(tier2.admin("session_key.create", {"chain_id": 31337}))["session_key"]
        asyncio.run(tier2.admin("session_key.topup", {"key_id": key2["key_id"]}))
        key3 = asyncio.run(tier3.admin("session_key.create", {"chain_id": 31337}))["session_key"]
        asyncio.run(tier3.admin("session_key.topup", {"key_id": key3["key_id"]}))

        main_key = coincurve.PrivateKey(secrets.token_bytes(32))
        main = address_of(main_key)
        funder = rpc(chain.url, "eth_accounts")[0]
        _wait(
            chain.url,
            rpc(chain.url, "eth_sendTransaction", [{"from": funder, "to": main, "value": hex(10**20)}]),
        )
        nonce = int(rpc(chain.url, "eth_getTransactionCount", [main, "pending"]), 16)
        raw = companion.authorize(
            main_key,
            chain_id=31337,
            nonce=nonce,
            max_fee=20 * 10**9,
            max_priority_fee=10**9,
            implementation=contracts["stateless_delegator"],
        )
        _wait(chain.url, rpc(chain.url, "eth_sendRawTransaction", ["0x" + raw.hex()]))
        from signer.wire.grants import derive_lanes

        policy = parse_policy(_policy_text())
        now = int(rpc(chain.url, "eth_getBlockByNumber", ["latest", False])["timestamp"], 16)
        lanes = derive_lanes(
            policy, 31337, expires_at=min(now + 86400, int(key3["expires_at"])), nonce=0, start=now
        )
        delegations = companion.sign_grant(
            main_key,
            lanes,
            session_address=key3["address"],
            chain_id=31337,
            manager=contracts["manager"],
            enforcers=contracts["enforcers"],
            salt=1,
        )
        asyncio.run(
            tier3.admin("tier3.grant", {"chain_id": 31337, "delegations": [d.to_json() for d in delegations]})
        )
        result = {
            "tier2_transfer": asyncio.run(_transfers(tier2, chain.url, args.requests)),
            "tier3_transfer": asyncio.run(_transfers(tier3, chain.url, args.requests)),
            "anvil_hardfork": "prague",
            "tier3_native_lane_caveats": len(delegations[0].caveats),
        }
        nonce = int(rpc(chain.url, "eth_getTransactionCount", [main, "pending"]), 16)
        raw = companion.revoke_all(
            main_key,
            chain_id=31337,
            nonce=nonce,
            max_fee=20 * 10**9,
            max_priority_fee=10**9,
            manager=contracts["manager"],
            nonce_enforcer=contracts["enforcers"]["NonceEnforcer"],
        )
        receipt = _wait(chain.url, rpc(chain.url, "eth_sendRawTransaction", ["0x" + raw.hex()]))
        result["revoke_all_gas"] = int(receipt["gasUsed"], 16)
        results.emit("tier3", result, args)
    finally:
        for signer in signers:
            signer.stop()
        chain.stop()


if __name__ == "__main__":
    main()
