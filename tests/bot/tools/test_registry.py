"""Config that names tools: typos are errors, skills that come and go are not."""

from __future__ import annotations

import pytest

from bot.config import ToolSettings
from bot.tools.catalog import standard_tools
from bot.tools.registry import ToolRegistry


def test_a_misspelled_tool_in_the_deny_list_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown tools: trasnfer"):
        ToolRegistry(standard_tools(), ToolSettings(deny=("trasnfer",)))


def test_a_skill_tool_that_is_not_loaded_may_be_named() -> None:
    settings = ToolSettings(
        deny=("skill_gas_tracker_gas_price",), channels={"telegram": {"allow": ("skill_x_y",)}}
    )
    registry = ToolRegistry(standard_tools(), settings)
    assert "wallet_balance" in registry and "skill_gas_tracker_gas_price" not in registry
