"""`owlia chain`: the local development chain."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(help="Local development chain (anvil).", no_args_is_help=True)


@app.command("dev")
def dev(
    ctx: typer.Context,
    port: int = typer.Option(8545, min=1, max=65535, help="Port on 127.0.0.1."),
    chain_id: int = typer.Option(31337, help="Chain id."),
    tier3: bool = typer.Option(
        True, help="Deploy the Tier 3 contracts (Delegation Framework) and record them."
    ),
    market: bool = typer.Option(
        True, help="Deploy a small Uniswap v3 market (WETH, two test tokens) and record it."
    ),
) -> None:
    """Start anvil on 127.0.0.1 (prague), deploy the Tier 3 contracts and a small swap market, print the RPC
    URL and funded dev accounts, run until Ctrl-C."""
    import signal  # lazy: 126 ms, 20496 KiB (5 imports)

    import yaml

    from bot.devchain import DevChain, DevChainError, record_dev_rpc_url
    from bot.devcontracts import deploy_delegation_framework, record_in_config
    from policies.kernel.cli import fail, home_of

    config_path = home_of(ctx) / "config.yaml"
    if not config_path.exists():  # nowhere to record the chain: the signer and the bot would never find it
        fail(
            f"no {config_path}: run `owlia init` first (it writes a dev chain for this command to record into)"
        )
    chain = DevChain(port=port, chain_id=chain_id)
    try:
        chain.start()
    except DevChainError as exc:  # anvil is stopped when it does not start (Ctrl-C included: DevChain.start)
        fail(str(exc))
    # Ctrl-C and SIGTERM wait (blocked) until sigwait below takes them, so every way out stops anvil:
    # unblocked, SIGTERM would end this process at once and leave anvil (its own session) running.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        typer.echo(f"dev chain {chain_id} at {chain.url}")
        try:  # the port given is the one the signer and the bot must reach: recorded, never left behind
            old = record_dev_rpc_url(config_path, chain_id, chain.url)
        except DevChainError as exc:
            typer.echo(f"not recorded in config.yaml: {exc}", err=True)
        else:
            if old is not None:
                typer.echo(
                    f"recorded in {config_path}: chain {chain_id}'s rpc_url is now {chain.url} (was {old})"
                )
        if tier3:
            try:
                section = deploy_delegation_framework(chain.url)
            except DevChainError as exc:
                fail(str(exc))
            if record_in_config(config_path, chain_id, section):
                typer.echo(
                    f"Tier 3 contracts deployed; recorded under chains[{chain_id}].delegation in {config_path}"
                )
            else:
                typer.echo(
                    f"Tier 3 contracts deployed; {config_path} has no chain {chain_id}: add this under it:"
                )
                typer.echo(yaml.safe_dump({"delegation": section}, sort_keys=False))
        if market:
            from bot.devmarket import deploy_swap_market  # lazy: 140 ms, 25248 KiB

            try:
                deployed = deploy_swap_market(chain.url)
            except DevChainError as exc:
                fail(str(exc))
            config_path = home_of(ctx) / "config.yaml"
            tokens = ", ".join(f"{t['symbol']} {t['address']}" for t in deployed["tokens"])
            typer.echo(
                f"swap market deployed: WETH {deployed['weth']}, SwapRouter {deployed['router']}, "
                f"QuoterV2 {deployed['quoter']}; tokens {tokens}"
            )
            if record_in_config(config_path, chain_id, deployed, key="swap_market"):
                typer.echo(f"recorded under chains[{chain_id}].swap_market in {config_path}")
            else:
                typer.echo(f"{config_path} has no chain {chain_id}: add this under it:")
                typer.echo(yaml.safe_dump({"swap_market": deployed}, sort_keys=False))
        typer.echo("funded dev accounts (unlocked on anvil; never use these keys on a real chain):")
        for address, balance in chain.accounts():
            typer.echo(f"  {address}  {balance // 10**18} ETH")
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except KeyboardInterrupt:
        pass
    finally:
        chain.stop()


@app.command("fund")
def fund(
    ctx: typer.Context,
    to: str = typer.Argument(..., help="An address, or `main`: the main account of the companion at --dir."),
    amount: str = typer.Argument(..., help="With its unit, e.g. 1eth or 5000000gwei."),
    chain_id: int = typer.Option(31337, "--chain", help="The dev chain (config.yaml, `dev: true`)."),
    directory: Optional[Path] = typer.Option(
        None, "--dir", help="Companion directory for `main` (default: <home>/companion)."
    ),
) -> None:
    """Dev chains only: send play ETH from the node's first unlocked account (anvil's) and wait for it
    to be mined. On a real chain, fund accounts from a wallet of yours."""
    import json  # lazy: 32 ms, 9984 KiB (6 imports)

    from bot.devchain import DevChainError, rpc, wait_receipt_dev
    from policies.kernel.addresses import is_address, to_checksum
    from policies.kernel.cli import fail, home_of
    from policies.units import read_amount
    from signer.wire.cli import signer_config

    chain = signer_config(ctx).chain(chain_id)
    if chain is None or not chain.dev:
        fail(
            f"chain {chain_id} is not a dev chain in config.yaml: `owlia chain fund` only moves a dev chain's "
            "play ETH (on a real chain, send from a wallet of yours)"
        )
    if to == "main":
        state = (directory or home_of(ctx) / "companion") / "companion.json"
        try:
            to = json.loads(state.read_text())["main_address"]
        except (OSError, ValueError, KeyError, TypeError):
            fail(f"no companion at {state.parent}: run `owlia companion init` first, or give an address")
    try:
        if not is_address(to):
            raise ValueError(f"{to!r} is not an address (0x and 40 hex digits) nor `main`")
        address = to_checksum(to)
        parsed = read_amount(amount)
        if not parsed.native:
            raise ValueError(f"{amount}: only the chain's own coin can be funded this way (e.g. 1eth)")
        wei = parsed.native_wei()
    except ValueError as exc:
        fail(str(exc))
    try:
        sender = rpc(chain.rpc_url, "eth_accounts")[0]
        tx_hash = rpc(
            chain.rpc_url, "eth_sendTransaction", [{"from": sender, "to": address, "value": hex(wei)}]
        )
        wait_receipt_dev(chain.rpc_url, tx_hash)
    except (OSError, DevChainError, IndexError, TypeError) as exc:
        fail(
            f"the dev chain at {chain.rpc_url} did not fund it ({type(exc).__name__}: {exc}); "
            "is `owlia up` or `owlia chain dev` running?"
        )
    typer.echo(f"sent {amount} to {address} on chain {chain_id} (tx {tx_hash})")


# `owlia wallet pin`, mounted by bot.cli.app: it configures the signer (no key is involved), so it lives
# with the operator's commands, not the companion's.
def pin_contracts(
    ctx: typer.Context,
    chain_id: int = typer.Option(..., "--chain", help="The chain to pin the contracts of."),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
) -> None:
    """Real chains: record the canonical Delegation Framework v1.3.0 addresses and their current code hashes
    in config.yaml; the signer then refuses any contract whose code differs (docs/tier3.md)."""
    from bot.devchain import DevChainError  # lazy: 112 ms, 20396 KiB (4 imports)
    from bot.devcontracts import pin_canonical, record_in_config
    from policies.kernel.cli import fail, home_of
    from signer.wire.cli import signer_config

    chain = signer_config(ctx).chain(chain_id)
    if chain is None:
        fail(f"chain {chain_id} is not in config.yaml")
    try:
        section = pin_canonical(chain.rpc_url)
    except (DevChainError, OSError) as exc:
        fail(str(exc))
    lines = [
        f"Pin these contracts for chain {chain_id} ({chain.name}); compare each code hash with a second, "
        "independent node or a block explorer before you confirm:"
    ]
    lines += [f"  {address}  code keccak {digest}" for address, digest in section["code_hashes"].items()]
    for line in lines:
        typer.echo(line)
    if not yes and not typer.confirm("Record these in config.yaml?", default=False):
        fail("nothing was recorded")
    if not record_in_config(home_of(ctx) / "config.yaml", chain_id, section):
        fail("could not write config.yaml")
    typer.echo(f"pinned under chains[{chain_id}].delegation")
