"""Deploy a small Uniswap v3 market on a local anvil chain: WETH9, two test tokens, pools and liquidity.

Every contract is the real one, from its npm package (package.json, installed by .ci/setup and never
committed: Uniswap v3 core is BUSL-1.1, the periphery and WETH9 are GPL): `@uniswap/v3-core`
(factory, whose pools it creates), `@uniswap/v3-periphery` (SwapRouter, QuoterV2 and the
NonfungiblePositionManager that seeds full-range liquidity) and `@uniswap/v2-periphery` (WETH9 and
its test ERC-20, which mints its whole supply to the deployer). Prices are seeded to match the
`price_usd` the dev policy gives each token, so the signer's price check passes on an honest pool.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from eth_abi import encode

from bot.devchain import PROJECT_ROOT, DevChainError, rpc
from policies.kernel.keccak import keccak256

UNISWAP = PROJECT_ROOT / "node_modules" / "@uniswap"
V3_CORE = UNISWAP / "v3-core" / "artifacts" / "contracts"
V3_PERIPHERY = UNISWAP / "v3-periphery" / "artifacts" / "contracts"
V2_BUILD = UNISWAP / "v2-periphery" / "build"

POOL_FEE = 3000  # 0.3 %, tick spacing 60
FULL_RANGE = (-887220, 887220)  # the widest ticks that are multiples of 60
ETH_PRICE_USD = 3000
WETH_LIQUIDITY = 100 * 10**18  # per pool, from anvil's first account
TOKEN_SUPPLY = 10**9 * 10**18


@dataclass(frozen=True)
class TestToken:
    symbol: str
    price_usd: int  # whole dollars per token: the pool is seeded at this price against ETH_PRICE_USD
    decimals: int = 18


TOKENS = (TestToken("TUSD", 1), TestToken("TOWL", 2))


def artifact(path: Path) -> dict:
    if not path.is_file():
        raise DevChainError(f"{path} is missing: run `bash .ci/setup` (npm install of the @uniswap packages)")
    return json.loads(path.read_text())


def creation_code(path: Path) -> bytes:
    code = artifact(path)["bytecode"]
    return bytes.fromhex(code[2:] if code.startswith("0x") else code)


def selector(signature: str) -> bytes:
    return keccak256(signature.encode())[:4]


def _wait(url: str, tx_hash: str, what: str) -> dict:
    for _ in range(400):
        receipt = rpc(url, "eth_getTransactionReceipt", [tx_hash])
        if receipt:
            if int(receipt["status"], 16) != 1:
                raise DevChainError(f"{what} failed (tx {tx_hash})")
            return receipt
        time.sleep(0.025)
    raise DevChainError(f"{what}: no receipt for {tx_hash}")


def send(
    url: str, sender: str, to: str | None, data: bytes, value: int = 0, what: str = "a transaction"
) -> dict:
    tx = {"from": sender, "data": "0x" + data.hex(), "value": hex(value), "gas": hex(12_000_000)}
    if to is not None:
        tx["to"] = to
    return _wait(url, rpc(url, "eth_sendTransaction", [tx]), what)


def deploy(url: str, sender: str, code: bytes, what: str) -> str:
    return send(url, sender, None, code, what=f"deploying {what}")["contractAddress"].lower()


def sqrt_price_x96(token0_per_token1_raw: tuple[int, int]) -> int:
    """sqrt(price of token0 in token1, raw units) * 2**96, as the pool stores it: (numerator, denominator)."""
    num, den = token0_per_token1_raw
    return math.isqrt(num * 2**192 // den)


def create_pool_with_liquidity(
    url: str,
    sender: str,
    manager: str,
    weth: str,
    token: str,
    token_per_eth: int,
    eth_amount: int = WETH_LIQUIDITY,
) -> None:
    """A WETH/token pool at `token_per_eth` whole tokens per ETH (both 18 decimals), full range."""
    token0, token1 = sorted((weth, token))
    if token0 == weth:  # price = token1 per token0
        price, amount0, amount1 = (token_per_eth, 1), eth_amount, eth_amount * token_per_eth
    else:
        price, amount0, amount1 = (1, token_per_eth), eth_amount * token_per_eth, eth_amount
    init = selector("createAndInitializePoolIfNecessary(address,address,uint24,uint160)")
    send(
        url,
        sender,
        manager,
        init
        + encode(
            ["address", "address", "uint24", "uint160"], [token0, token1, POOL_FEE, sqrt_price_x96(price)]
        ),
        what="creating a pool",
    )
    mint = selector(
        "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))"
    )
    params = (
        token0,
        token1,
        POOL_FEE,
        FULL_RANGE[0],
        FULL_RANGE[1],
        amount0,
        amount1,
        0,
        0,
        sender,
        int(time.time()) + 3600,
    )
    send(
        url,
        sender,
        manager,
        mint
        + encode(
            ["(address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256)"], [params]
        ),
        what="adding liquidity",
    )


def approve(url: str, sender: str, token: str, spender: str, amount: int) -> None:
    send(
        url,
        sender,
        token,
        selector("approve(address,uint256)") + encode(["address", "uint256"], [spender, amount]),
        what="an approval",
    )


def deploy_token(url: str, sender: str, supply: int = TOKEN_SUPPLY, fee_on_transfer: bool = False) -> str:
    """Uniswap v2-periphery's test ERC-20 (or its deflating variant, which burns 1 % of every transfer)."""
    name = "DeflatingERC20.json" if fee_on_transfer else "ERC20.json"
    return deploy(url, sender, creation_code(V2_BUILD / name) + encode(["uint256"], [supply]), name)


def deploy_swap_market(url: str) -> dict:
    """Deploy the market from anvil's first unlocked account; return the config section for the chain
    (`chains[].swap_market`): addresses of WETH9, the factory, SwapRouter, QuoterV2, the position
    manager, and each test token with the dollar price its pool was seeded at."""
    sender = rpc(url, "eth_accounts")[0].lower()
    weth = deploy(url, sender, creation_code(V2_BUILD / "WETH9.json"), "WETH9")
    factory = deploy(
        url,
        sender,
        creation_code(V3_CORE / "UniswapV3Factory.sol" / "UniswapV3Factory.json"),
        "UniswapV3Factory",
    )
    pair = encode(["address", "address"], [factory, weth])
    router = deploy(
        url, sender, creation_code(V3_PERIPHERY / "SwapRouter.sol" / "SwapRouter.json") + pair, "SwapRouter"
    )
    quoter = deploy(
        url,
        sender,
        creation_code(V3_PERIPHERY / "lens" / "QuoterV2.sol" / "QuoterV2.json") + pair,
        "QuoterV2",
    )
    manager = deploy(
        url,
        sender,
        creation_code(V3_PERIPHERY / "NonfungiblePositionManager.sol" / "NonfungiblePositionManager.json")
        + encode(["address", "address", "address"], [factory, weth, "0x" + "00" * 20]),
        "NonfungiblePositionManager",
    )
    send(url, sender, weth, selector("deposit()"), value=WETH_LIQUIDITY * len(TOKENS), what="wrapping ETH")
    approve(url, sender, weth, manager, 2**256 - 1)
    tokens = []
    for t in TOKENS:
        address = deploy_token(url, sender)
        approve(url, sender, address, manager, 2**256 - 1)
        create_pool_with_liquidity(url, sender, manager, weth, address, ETH_PRICE_USD // t.price_usd)
        tokens.append(
            {"symbol": t.symbol, "address": address, "decimals": t.decimals, "price_usd": str(t.price_usd)}
        )
    return {
        "weth": weth,
        "factory": factory,
        "router": router,
        "quoter": quoter,
        "position_manager": manager,
        "fee": POOL_FEE,
        "eth_price_usd": str(ETH_PRICE_USD),
        "tokens": tokens,
    }


def dev_policy_with_market(
    policy_text: str,
    market: dict,
    *,
    slippage_bps: int = 100,
    impact_bps: int = 300,
    per_tx_eth: str = "0.01",
) -> str:
    """The dev policy (policies/defaults/dev.yaml, comments kept) with the market listed: ETH priced,
    WETH and the test tokens under `assets`, and a `swaps:` section for the router (docs/defi.md)."""
    native = '    per_tx: "0.01"         # at most 0.01 ETH in one request'
    if native not in policy_text or "\n# People and addresses you pay." not in policy_text:
        raise DevChainError("the dev policy's text changed: list the market in it by hand (docs/defi.md)")
    text = policy_text.replace(
        native, f'    per_tx: "{per_tx_eth}"\n    price_usd: "{market["eth_price_usd"]}"'
    )
    chain = 31337
    assets = [
        f'  - {{chain: {chain}, asset: "{market["weth"]}", symbol: WETH, decimals: 18, per_tx: "0.01", '
        f'price_usd: "{market["eth_price_usd"]}"}}'
    ]
    for t in market["tokens"]:
        per_tx = 50 // int(t["price_usd"])  # about $50 of each
        assets.append(
            f'  - {{chain: {chain}, asset: "{t["address"]}", symbol: {t["symbol"]}, decimals: {t["decimals"]}, '
            f'per_tx: "{per_tx}", price_usd: "{t["price_usd"]}"}}'
        )
    listed = ", ".join(
        [
            f"{{chain: {chain}, asset: native}}",
            f'{{chain: {chain}, asset: "{market["weth"]}"}}',
            *(f'{{chain: {chain}, asset: "{t["address"]}"}}' for t in market["tokens"]),
        ]
    )
    section = f"""
# Swaps the signer checks itself (docs/defi.md): the dev market `owlia chain dev` / `owlia up` deployed.
swaps:
  routers:
    - {{chain: {chain}, address: "{market["router"]}", quoter: "{market["quoter"]}", weth: "{market["weth"]}", name: uniswap-v3}}
  tokens_in: [{listed}]
  tokens_out: [{listed}]
  max_slippage_bps: {slippage_bps}       # the minimum out may be this far below the signer's own quote
  max_price_impact_bps: {impact_bps}    # ...and this far below the input's worth at the prices above
  max_deadline_seconds: 600
"""
    return text.replace(
        "\n# People and addresses you pay.",
        "\n" + "\n".join(assets) + "\n" + section + "\n# People and addresses you pay.",
        1,
    )
