"""`owlia chain`: the local development chain."""

from __future__ import annotations

import typer

app = typer.Typer(help="Local development chain (anvil).", no_args_is_help=True)


@app.command("dev")
def dev(
    port: int = typer.Option(8545, help="Port on 127.0.0.1."),
    chain_id: int = typer.Option(31337, help="Chain id."),
) -> None:
    """Start anvil on 127.0.0.1, print its RPC URL and funded dev accounts, run until Ctrl-C."""
    import signal

    from bot.devchain import DevChain, DevChainError

    chain = DevChain(port=port, chain_id=chain_id)
    try:
        chain.start()
    except DevChainError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    typer.echo(f"dev chain {chain_id} at {chain.url}")
    typer.echo("funded dev accounts (unlocked on anvil; never use these keys on a real chain):")
    for address, balance in chain.accounts():
        typer.echo(f"  {address}  {balance // 10**18} ETH")
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except KeyboardInterrupt:
        pass
    finally:
        chain.stop()
