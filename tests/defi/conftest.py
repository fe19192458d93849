"""A real Uniswap v3 market on anvil (bot.devmarket, bytecode from npm) and a signer policy that lists it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from eth_abi import decode as abi_decode, encode

from bot.devchain import DevChain, free_port, rpc
from bot.devmarket import (
    approve,
    create_pool_with_liquidity,
    deploy_swap_market,
    deploy_token,
    dev_policy_with_market,
    selector,
    send,
)
from tests.conftest import DEV_POLICY, wait_receipt

CHAIN_ID = 31337
FEE = 3000
SWAP_TYPES = "(address,address,uint24,address,uint256,uint256,uint256,uint160)"
EXACT_INPUT_SINGLE = selector(f"exactInputSingle({SWAP_TYPES})")
MULTICALL = selector("multicall(bytes[])")
MILLI = 10**15  # 0.001 ETH


@pytest.fixture(scope="module")
def chain():
    """Its own anvil: the sandwich test turns automining off, and pools move with every swap."""
    dev = DevChain(port=free_port()).start()
    yield dev
    dev.stop()


@pytest.fixture(scope="module")
def market(chain) -> dict:
    return deploy_swap_market(chain.url)


def swap_policy(
    market: dict, tmp_path: Path, *, slippage_bps: int = 100, impact_bps: int = 300, per_tx_eth: str = "0.01"
) -> Path:
    """The dev policy with the market listed, as `owlia up` writes it (bot.devmarket)."""
    path = tmp_path / "swap-policy.yaml"
    path.write_text(
        dev_policy_with_market(
            DEV_POLICY.read_text(),
            market,
            slippage_bps=slippage_bps,
            impact_bps=impact_bps,
            per_tx_eth=per_tx_eth,
        )
    )
    return path


def quote(url: str, market: dict, token_in: str, token_out: str, amount_in: int) -> int:
    data = selector("quoteExactInputSingle((address,address,uint256,uint24,uint160))") + encode(
        ["(address,address,uint256,uint24,uint160)"], [(token_in, token_out, amount_in, FEE, 0)]
    )
    out = rpc(url, "eth_call", [{"to": market["quoter"], "data": "0x" + data.hex()}, "latest"])
    return abi_decode(["uint256", "uint160", "uint32", "uint256"], bytes.fromhex(out[2:]))[0]


def swap_data(
    token_in: str,
    token_out: str,
    recipient: str,
    amount_in: int,
    min_out: int,
    deadline: int | None = None,
    price_limit: int = 0,
) -> bytes:
    deadline = int(time.time()) + 120 if deadline is None else deadline
    return EXACT_INPUT_SINGLE + encode(
        [SWAP_TYPES], [(token_in, token_out, FEE, recipient, deadline, amount_in, min_out, price_limit)]
    )


def multicall_data(*calls: bytes) -> bytes:
    return MULTICALL + encode(["bytes[]"], [list(calls)])


def token_balance(url: str, token: str, who: str) -> int:
    data = "0x70a08231" + "00" * 12 + who.lower()[2:]
    return int(rpc(url, "eth_call", [{"to": token, "data": data}, "latest"]), 16)


def nonce(url: str, who: str) -> int:
    return int(rpc(url, "eth_getTransactionCount", [who, "latest"]), 16)


def fake_token_with_pool(url: str, market: dict) -> str:
    """Another real ERC-20 with a real pool: a token the attacker calls TUSD, at another address."""
    sender = rpc(url, "eth_accounts")[0].lower()
    token = deploy_token(url, sender)
    send(url, sender, market["weth"], selector("deposit()"), value=10**18, what="wrapping ETH")
    approve(url, sender, token, market["position_manager"], 2**256 - 1)
    create_pool_with_liquidity(url, sender, market["position_manager"], market["weth"], token, 3000, 10**18)
    return token


def lookalike_router(url: str, market: dict) -> str:
    """SwapRouter's own runtime code at an address that shares its first and last four hex digits."""
    router = market["router"]
    twin = router[:6] + ("1" if router[6] != "1" else "2") * 32 + router[-4:]
    code = rpc(url, "eth_getCode", [router, "latest"])
    rpc(url, "anvil_setCode", [twin, code])
    return twin


def send_and_wait(url: str, tx: dict) -> dict:
    class _Chain:  # wait_receipt takes anything with a url
        pass

    chain = _Chain()
    chain.url = url  # type: ignore[attr-defined]
    return wait_receipt(chain, rpc(url, "eth_sendTransaction", [tx]))  # type: ignore[arg-type]
