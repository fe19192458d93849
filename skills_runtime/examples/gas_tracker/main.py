"""Gas tracker: the current gas price and a cost estimate, in exact integer arithmetic."""

from owlia_skill import ToolError, chain, tool

GWEI = 10**9
ETHER = 10**18


def _decimal(value: int, unit: int, places: int) -> str:
    whole, rest = divmod(value, unit)
    fraction = str(rest * 10**places // unit).rjust(places, "0").rstrip("0")
    return f"{whole}.{fraction}" if fraction else str(whole)


@tool("gas_price")
def gas_price(args: dict) -> dict:
    gas_units = int(args.get("gas_units", 21000))
    try:
        wei_per_gas = int(chain("eth_gasPrice"), 16)
        block = int(chain("eth_blockNumber"), 16)
    except (TypeError, ValueError):
        raise ToolError("the chain returned something that is not a hex quantity") from None
    cost = wei_per_gas * gas_units
    return {
        "block": block,
        "gas_price_wei": str(wei_per_gas),
        "gas_price_gwei": _decimal(wei_per_gas, GWEI, 9),
        "gas_units": gas_units,
        "cost_wei": str(cost),
        "cost_eth": _decimal(cost, ETHER, 18),
    }
