"""Recording a deployment under a chain of config.yaml keeps every comment and every other byte."""

from __future__ import annotations

import yaml

from bot.config_text import set_chain_key

INIT_STYLE = """# OwliaBot configuration. Secrets never go here.
chains:
  - {id: 31337, name: anvil, rpc_url: "http://127.0.0.1:8545", dev: true}   # the dev chain
  - {id: 8453, name: base, rpc_url: "https://base.example"}

signer: {}   # defaults
"""

BLOCK_STYLE = """chains:
  # my chains
  - id: 31337   # dev
    name: anvil
    swap_market:
      router: "0xold"
      tokens: [a, b]
    # a note the owner wrote
  - id: 1
    name: main   # keep
bot:
  agent: {max_rounds: 20}   # tool rounds
"""

MARKET = {"router": "0x" + "ab" * 20, "tokens": {"USDC": "0x" + "cd" * 20}}


def test_a_flow_entry_becomes_a_block_and_nothing_else_changes() -> None:
    edited = set_chain_key(INIT_STYLE, 31337, "swap_market", MARKET)
    assert edited is not None
    data = yaml.safe_load(edited)
    assert (
        data["chains"][0]["swap_market"] == MARKET and data["chains"][0]["rpc_url"] == "http://127.0.0.1:8545"
    )
    assert data["chains"][1] == {"id": 8453, "name": "base", "rpc_url": "https://base.example"}
    for line in (
        "# OwliaBot configuration. Secrets never go here.",
        "   # the dev chain",
        "signer: {}   # defaults",
    ):
        assert line in edited
    assert edited.endswith(
        '  - {id: 8453, name: base, rpc_url: "https://base.example"}\n\nsigner: {}   # defaults\n'
    )


def test_an_existing_key_is_replaced_in_place_with_the_comments_around_it() -> None:
    edited = set_chain_key(BLOCK_STYLE, 31337, "swap_market", MARKET)
    assert edited is not None
    assert yaml.safe_load(edited)["chains"][0]["swap_market"] == MARKET
    assert "0xold" not in edited
    for line in (
        "  # my chains",
        "  - id: 31337   # dev",
        "    # a note the owner wrote",
        "name: main   # keep",
    ):
        assert line in edited


def test_a_new_key_goes_at_the_end_of_a_block_entry() -> None:
    edited = set_chain_key(BLOCK_STYLE, 1, "delegation", {"manager": "0x" + "11" * 20})
    assert edited is not None
    assert yaml.safe_load(edited)["chains"][1] == {
        "id": 1,
        "name": "main",
        "delegation": {"manager": "0x" + "11" * 20},
    }
    assert "    name: main   # keep\n    delegation:\n      manager:" in edited
    assert edited.startswith(BLOCK_STYLE.split("  - id: 1")[0])


def test_a_missing_chain_or_an_odd_file_gives_none() -> None:
    assert set_chain_key(INIT_STYLE, 5, "delegation", {}) is None
    assert set_chain_key("chains: 3\n", 31337, "delegation", {}) is None
    assert set_chain_key("- 1\n", 31337, "delegation", {}) is None


def test_a_new_dev_port_is_recorded_in_place_even_when_its_url_is_written_twice(tmp_path) -> None:
    """`owlia up --port` records the dev chain's new rpc_url: that one scalar changes, every comment
    stays (the old URL also written in a comment was once a reason to dump the whole file again),
    and the mode stays 0600. A chain that is not a local dev chain is never rewritten."""
    import stat

    import pytest

    from bot.devchain import DevChainError, record_dev_rpc_url
    from policies.kernel.files import write_private_file

    path = tmp_path / "config.yaml"
    text = INIT_STYLE.replace(
        "# OwliaBot configuration.", "# OwliaBot configuration (anvil at http://127.0.0.1:8545)."
    )
    write_private_file(path, text.encode())
    assert record_dev_rpc_url(path, 31337, "http://127.0.0.1:9545") == "http://127.0.0.1:8545"
    edited = path.read_text()
    assert edited == text.replace('rpc_url: "http://127.0.0.1:8545"', "rpc_url: http://127.0.0.1:9545")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert record_dev_rpc_url(path, 31337, "http://127.0.0.1:9545") is None  # already there
    with pytest.raises(DevChainError, match="not a dev chain on this machine"):
        record_dev_rpc_url(path, 8453, "http://127.0.0.1:1")
    assert path.read_text() == edited
