import time
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from policies.kernel.addresses import checksum_ok
from policies.loader import PolicyError, load_policy, parse_policy
from policies.model import Policy

FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
BAD_CHECKSUM = "0x70997970c51812dc3A010C7d01b50e0d17dc79C8"  # one letter's case flipped
TOKEN = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48"

BASE = """\
version: 1
chains:
  - {id: 31337, name: anvil}
assets:
  - chain: 31337
    asset: native
    symbol: ETH
    decimals: 18
    per_tx: "0.01"
    windows: {24h: "0.05", 7d: "0.2"}
"""

FULL = (
    BASE
    + f"""\
  - {{chain: 31337, asset: "{TOKEN}", symbol: USDC, decimals: 6, per_tx: "100", price_usd: "1"}}
address_book:
  - {{chain: 31337, address: "{FRIEND}", name: dev-friend}}
spenders:
  - {{chain: 31337, address: "0x000000000022d473030f116ddee9f6b43ac78ba3", name: permit2}}
contracts:
  - {{chain: 31337, address: "0x3fc91a3afd70395cd496c647d5a6cc9d4b2b7fad", name: router, selectors: ["0x3593564C"]}}
usd: {{per_tx: "100", windows: {{24h: "500"}}}}
recipients: {{unknown: allow, untrusted_provenance: deny}}
sources: {{skill: policy, heartbeat: escalate}}
over_limit: deny
rate_limits: {{tx_per_hour: 10, new_recipients_per_day: 2}}
"""
)


def error_of(text: str) -> str:
    with pytest.raises(PolicyError) as info:
        parse_policy(text)
    return str(info.value)


def test_full_policy_parses_and_normalizes():
    policy = parse_policy(FULL)
    assert policy.address_book[0].address == FRIEND.lower()
    assert policy.contracts[0].selectors == ("0x3593564c",)
    assert policy.index.asset_info(31337, "native") == ("ETH", 18)
    assert policy.index.asset_info(31337, TOKEN) == ("USDC", 6)
    assert policy.index.asset_info(1, "native") is None
    assert policy.index.asset_rule(31337, "native").per_tx == 10**16
    assert policy.index.address_name(31337, FRIEND.lower()) == "dev-friend"
    assert policy.index.address_name(31337, "0x000000000022d473030f116ddee9f6b43ac78ba3") == "permit2"
    assert policy.index.address_name(31337, "0x3fc91a3afd70395cd496c647d5a6cc9d4b2b7fad") == "router"
    assert policy.index.address_name(31337, "0x" + "1" * 40) is None
    assert policy.index.chain_name(31337) == "anvil" and policy.index.chain_name(1) is None
    assert policy.window_seconds() == {86400, 604800}
    assert policy.index.usd.per_tx == 100 * 10**6


def test_round_trip_and_hash_stability():
    policy = parse_policy(FULL)
    dumped = policy.model_dump(mode="json")
    again = Policy.model_validate(dumped)
    assert again == policy
    assert again.policy_hash() == policy.policy_hash() == parse_policy(FULL).policy_hash()
    assert len(policy.policy_hash()) == 64
    assert {"chain", "asset", "symbol", "decimals"} <= set(dumped["assets"][0])
    assert parse_policy(FULL.replace('per_tx: "100"', 'per_tx: "101"')).policy_hash() != policy.policy_hash()


def test_unquoted_yaml_float_is_read_exactly():
    policy = parse_policy(BASE.replace('per_tx: "0.01"', "per_tx: 0.1"))
    assert policy.index.asset_rule(31337, "native").per_tx == 10**17
    assert policy.assets[0].per_tx == "0.1"


def test_python_float_is_rejected_with_advice():
    data = parse_policy(BASE).model_dump(mode="json")
    data["assets"][0]["per_tx"] = 0.01
    with pytest.raises(Exception, match="write amounts as quoted strings"):
        Policy.model_validate(data)


def test_int_amount_means_whole_units():
    policy = parse_policy(BASE.replace('per_tx: "0.01"', "per_tx: 2"))
    assert policy.index.asset_rule(31337, "native").per_tx == 2 * 10**18


def test_unquoted_address_stays_text():
    text = BASE + f"address_book:\n  - {{chain: 31337, address: {FRIEND}, name: friend}}\n"
    assert parse_policy(text).address_book[0].address == FRIEND.lower()


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (('per_tx: "0.01"', 'per_tx: "0.0000000000000000001"'), "assets.0.per_tx"),
        (('per_tx: "0.01"', 'per_tx: "-1"'), "assets.0.per_tx"),
        (('per_tx: "0.01"', 'per_tx: "1e5"'), "assets.0.per_tx"),
        (('24h: "0.05"', '24x: "0.05"'), "assets.0.windows"),
        (('7d: "0.2"', '1440m: "0.2"'), "assets.0.windows"),
        (("decimals: 18", "decimals: 18.0"), "assets.0.decimals"),
        (("symbol: ETH", "symbol: ETH\n    colour: blue"), "assets.0.colour"),
        (("asset: native", "asset: nativ"), "assets.0.asset"),
        (("version: 1", "version: 2"), "version"),
        (("{id: 31337, name: anvil}", '{id: 31337, name: "anvil\\e[1A"}'), "chains.0.name"),  # ESC: cursor up
        (("symbol: ETH", 'symbol: "ETH\\u202e"'), "assets.0.symbol"),  # right-to-left override
        (
            ("{id: 31337, name: anvil}", "{id: 31337, name: anvil}\n  - {id: 31337, name: again}"),
            "chains.1.id",
        ),
    ],
)
def test_errors_name_the_field(change, path):
    message = error_of(BASE.replace(*change))
    assert message.split(":")[0].startswith(path), message


def test_bad_checksum_rejected_naming_field():
    assert checksum_ok(FRIEND) and not checksum_ok(BAD_CHECKSUM)
    message = error_of(BASE + f'address_book:\n  - {{chain: 31337, address: "{BAD_CHECKSUM}", name: x}}\n')
    assert message.startswith("address_book.0.address:") and "checksum" in message


def test_all_uppercase_address_accepted():
    text = BASE + f'address_book:\n  - {{chain: 31337, address: "0x{FRIEND[2:].upper()}", name: x}}\n'
    assert parse_policy(text).address_book[0].address == FRIEND.lower()


def test_duplicate_entries_rejected():
    book = (
        f'address_book:\n  - {{chain: 31337, address: "{FRIEND}", name: a}}\n'
        f'  - {{chain: 31337, address: "{FRIEND.lower()}", name: b}}\n'
    )
    assert "address_book.1" in error_of(BASE + book)
    asset = "  - {chain: 31337, asset: native, symbol: ETH2, decimals: 18}\n"
    assert "assets.1" in error_of(BASE + asset)


def test_unlisted_chain_rejected():
    assert "address_book.0.chain" in error_of(
        BASE + f'address_book:\n  - {{chain: 1, address: "{FRIEND}", name: a}}\n'
    )


def test_bad_selector_rejected():
    text = (
        BASE
        + 'contracts:\n  - {chain: 31337, address: "0x'
        + "1" * 40
        + '", name: c, selectors: ["0x1234"]}\n'
    )
    assert error_of(text).startswith("contracts.0.selectors.0:")


def test_duplicate_yaml_key_rejected_with_line():
    message = error_of(BASE + "over_limit: deny\nover_limit: escalate\n")
    assert "duplicate key" in message and "line 12" in message


@pytest.mark.parametrize(
    "text",
    [
        "[" * 30_000
        + "]" * 30_000,  # flow nesting: PyYAML's scanner is quadratic in it, its composer recurses
        "version: 1\nchains: " + "[a, " * 20_000,
        "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 60)),  # block nesting
    ],
)
def test_deep_nesting_is_refused_quickly_and_cleanly(text):
    started = time.perf_counter()
    assert "nest" in error_of(text)
    assert time.perf_counter() - started < 1.0


def test_bad_yaml_and_non_mapping():
    assert "line" in error_of("version: 1\nchains: [\n")
    assert "mapping" in error_of("- 1\n- 2\n")
    assert "mapping" in error_of("")


def test_load_policy_names_missing_file(tmp_path: Path):
    with pytest.raises(PolicyError, match="nope.yaml"):
        load_policy(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE.replace("decimals: 18", "decimals: x"))
    with pytest.raises(PolicyError, match=r"bad\.yaml: assets\.0\.decimals"):
        load_policy(bad)


@pytest.mark.parametrize("name", ["default.yaml", "dev.yaml"])
def test_shipped_defaults_load(name):
    text = resources.files("policies").joinpath(f"defaults/{name}").read_text()
    policy = parse_policy(text)
    assert policy.index.chain_name(31337) is not None
    rule = policy.index.asset_rule(31337, "native")
    assert (rule.per_tx, [(w.label, w.limit) for w in rule.windows]) == (
        10**16,
        [("24h", 5 * 10**16), ("7d", 2 * 10**17)],
    )
    assert policy.usd is None and policy.recipients.unknown == "escalate"
    assert (policy.rate_limits.tx_per_hour, policy.rate_limits.new_recipients_per_day) == (30, 5)
    assert Policy.model_validate(policy.model_dump(mode="json")).policy_hash() == policy.policy_hash()
    expected_book = [] if name == "default.yaml" else [(31337, FRIEND.lower(), "dev-friend")]
    assert [(e.chain, e.address, e.name) for e in policy.address_book] == expected_book


@given(st.decimals(min_value=0, max_value=10**9, places=6, allow_nan=False, allow_infinity=False))
def test_any_exact_decimal_limit_round_trips(amount):
    text = BASE.replace('per_tx: "0.01"', f'per_tx: "{amount:f}"')
    policy = parse_policy(text)
    assert Policy.model_validate(policy.model_dump(mode="json")) == policy
