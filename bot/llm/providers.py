"""Build a provider adapter from a resolved model id and its credential.

The one place that knows which wire protocol each provider name speaks (see models.PROVIDERS).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.llm.models import ModelRef, resolve_model

if TYPE_CHECKING:
    from bot.llm.anthropic_provider import AnthropicProvider
    from bot.llm.failover import Profile
    from bot.llm.openai_provider import OpenAIProvider


def provider_module(ref: ModelRef) -> str:
    """The module `make_provider` imports for this model (our wire-format adapter and httpx under
    it): the bot imports it ahead, off the event loop, once it is ready (see LLMPool.warm)."""
    return "bot.llm.anthropic_provider" if ref.info.api == "anthropic" else "bot.llm.openai_provider"


def make_provider(
    ref: ModelRef,
    *,
    api_key: str | None = None,
    auth_token: str | None = None,
    base_url: str | None = None,
    timeout: float = 120.0,
) -> AnthropicProvider | OpenAIProvider:
    info = ref.info
    base_url = base_url or info.default_base_url
    if info.needs_base_url and not base_url:
        raise ValueError(f"provider {ref.provider!r} needs a base_url")
    if info.api == "anthropic":
        from bot.llm.anthropic_provider import (  # lazy: 101 ms, 18212 KiB
            AnthropicProvider,  # imports httpx: only when used
        )

        return AnthropicProvider(api_key=api_key, auth_token=auth_token, base_url=base_url, timeout=timeout)
    if auth_token is not None:
        raise ValueError(f"provider {ref.provider!r} takes an API key, not an OAuth token")
    if api_key is None:
        raise ValueError(f"provider {ref.provider!r} needs an API key")
    from bot.llm.openai_provider import OpenAIProvider  # lazy: 104 ms, 18184 KiB

    field = "max_completion_tokens" if ref.provider == "openai" else "max_tokens"
    return OpenAIProvider(api_key=api_key, base_url=base_url, timeout=timeout, max_tokens_field=field)


def make_profile(
    name: str,
    model: str,
    *,
    api_key: str | None = None,
    auth_token: str | None = None,
    base_url: str | None = None,
    timeout: float = 120.0,
) -> Profile:
    """A failover profile from a user-facing model id such as `sonnet` or `openrouter/x/y`."""
    from bot.llm.failover import (  # lazy: 38 ms, 9768 KiB
        Profile,  # with the router: not on the way to ready (bot/runtime/reach.py)
    )

    ref = resolve_model(model)
    provider = make_provider(ref, api_key=api_key, auth_token=auth_token, base_url=base_url, timeout=timeout)
    return Profile(name=name, provider=provider, model=ref.model)
