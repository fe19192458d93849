from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from bot.llm.models import ALIASES, PROVIDERS, ModelRef, UnknownModel, resolve_model


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sonnet", ModelRef("anthropic", "claude-sonnet-5-5")),
        ("Opus", ModelRef("anthropic", "claude-opus-5-5")),
        ("haiku", ModelRef("anthropic", "claude-haiku-5-5")),
        ("gpt", ModelRef("openai", "gpt-5.4")),
        ("gpt-mini", ModelRef("openai", "gpt-5.4-mini")),
        ("anthropic/claude-sonnet-4-5", ModelRef("anthropic", "claude-sonnet-4-5")),
        ("openai/gpt-4.1", ModelRef("openai", "gpt-4.1")),
        ("openrouter/meta-llama/llama-3.1-70b", ModelRef("openrouter", "meta-llama/llama-3.1-70b")),
        (" OpenAI/gpt-4o ", ModelRef("openai", "gpt-4o")),
    ],
)
def test_resolves_ids_and_aliases(text, expected):
    assert resolve_model(text) == expected


def test_every_alias_points_at_a_known_provider():
    for alias, target in ALIASES.items():
        assert resolve_model(alias) == resolve_model(target)
        assert resolve_model(alias).provider in PROVIDERS


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("sonet", "unknown model alias 'sonet'"),
        ("mistral/large", "unknown provider 'mistral'"),
        ("anthropic/", "no model"),
        ("", "no model given"),
    ],
)
def test_unknown_models_fail_loudly(text, fragment):
    with pytest.raises(UnknownModel, match=fragment):
        resolve_model(text)


@given(
    st.text(alphabet=st.characters(blacklist_characters="/"), min_size=1).filter(
        lambda s: s.strip() and s.strip().lower() not in ALIASES
    )
)
def test_no_silent_default_for_any_unknown_alias(text):
    with pytest.raises(UnknownModel):
        resolve_model(text)
