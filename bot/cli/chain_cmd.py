"""`owlia chain`: the local development chain."""

from __future__ import annotations

import typer

app = typer.Typer(help="Local development chain (anvil).", no_args_is_help=True)


@app.command("dev")
def dev(
    ctx: typer.Context,
    port: int = typer.Option(8545, min=1, max=65535, help="Port on 127.0.0.1."),
    chain_id: int = typer.Option(31337, help="Chain id."),
    tier3: bool = typer.Option(True, help="Deploy the Tier 3 contracts (Delegation Framework) and record them."),
    market: bool = typer.Option(True, help="Deploy a small Uniswap v3 market (WETH, two test tokens) and record it."),
) -> None:
    """Start anvil on 127.0.0.1 (prague), deploy the Tier 3 contracts and a small swap market, print the RPC
    URL and funded dev accounts, run until Ctrl-C."""
    import signal

    import yaml

    from policies.kernel.cli import fail, home_of
    from bot.devchain import DevChain, DevChainError
    from bot.devcontracts import deploy_delegation_framework, record_in_config

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
        if tier3:
            try:
                section = deploy_delegation_framework(chain.url)
            except DevChainError as exc:
                fail(str(exc))
            config_path = home_of(ctx) / "config.yaml"
            if record_in_config(config_path, chain_id, section):
                typer.echo(f"Tier 3 contracts deployed; recorded under chains[{chain_id}].delegation in {config_path}")
            else:
                typer.echo(f"Tier 3 contracts deployed; {config_path} has no chain {chain_id}: add this under it:")
                typer.echo(yaml.safe_dump({"delegation": section}, sort_keys=False))
        if market:
            from bot.devmarket import deploy_swap_market

            try:
                deployed = deploy_swap_market(chain.url)
            except DevChainError as exc:
                fail(str(exc))
            config_path = home_of(ctx) / "config.yaml"
            tokens = ", ".join(f"{t['symbol']} {t['address']}" for t in deployed["tokens"])
            typer.echo(f"swap market deployed: WETH {deployed['weth']}, SwapRouter {deployed['router']}, "
                       f"QuoterV2 {deployed['quoter']}; tokens {tokens}")
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


# `owlia wallet pin`, mounted by bot.cli.app: it configures the signer (no key is involved), so it lives
# with the operator's commands, not the companion's.
def pin_contracts(ctx: typer.Context,
                  chain_id: int = typer.Option(..., "--chain", help="The chain to pin the contracts of."),
                  yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Real chains: record the canonical Delegation Framework v1.3.0 addresses and their current code hashes
    in config.yaml; the signer then refuses any contract whose code differs (docs/tier3.md)."""
    from bot.devchain import DevChainError
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
    lines = [f"Pin these contracts for chain {chain_id} ({chain.name}); compare each code hash with a second, "
             "independent node or a block explorer before you confirm:"]
    lines += [f"  {address}  code keccak {digest}" for address, digest in section["code_hashes"].items()]
    for line in lines:
        typer.echo(line)
    if not yes and not typer.confirm("Record these in config.yaml?", default=False):
        fail("nothing was recorded")
    if not record_in_config(home_of(ctx) / "config.yaml", chain_id, section):
        fail("could not write config.yaml")
    typer.echo(f"pinned under chains[{chain_id}].delegation")
