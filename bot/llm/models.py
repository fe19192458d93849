"""Model ids: `provider/model` or a short alias, resolved strictly.

A typo in a model name must be an error the user sees, never a silent fall back to some default
model (which could be a different vendor, price or privacy policy than the user chose).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ApiKind = Literal["anthropic", "openai"]


@dataclass(frozen=True)
class ProviderInfo:
    """How to reach a provider: which wire protocol, and its default endpoint (None = the wire
    format's own: https://api.anthropic.com, https://api.openai.com/v1)."""

    name: str
    api: ApiKind
    default_base_url: str | None = None
    needs_base_url: bool = False


PROVIDERS: dict[str, ProviderInfo] = {
    "anthropic": ProviderInfo("anthropic", "anthropic"),
    "openai": ProviderInfo("openai", "openai"),
    "openrouter": ProviderInfo("openrouter", "openai", "https://openrouter.ai/api/v1"),
    # Any other OpenAI-compatible server (vLLM, Ollama, LM Studio, ...): the profile gives base_url.
    "openai-compatible": ProviderInfo("openai-compatible", "openai", needs_base_url=True),
}

ALIASES: dict[str, str] = {
    # Newest model names the providers list (as of anthropic 2.12 / openai 3.54's model lists); update with them.
    "sonnet": "anthropic/claude-sonnet-5-5",
    "opus": "anthropic/claude-opus-5-5",
    "haiku": "anthropic/claude-haiku-5-5",
    "gpt": "openai/gpt-5.4",
    "gpt-mini": "openai/gpt-5.4-mini",
}


class UnknownModel(ValueError):
    """The model text names no known alias or provider."""


@dataclass(frozen=True)
class ModelRef:
    provider: str
    model: str

    @property
    def info(self) -> ProviderInfo:
        return PROVIDERS[self.provider]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


def resolve_model(text: str) -> ModelRef:
    """`sonnet` -> anthropic/claude-sonnet-5-5; `openrouter/meta/llama-3` -> (openrouter, meta/llama-3).

    Only the first `/` separates the provider, since OpenRouter model names contain slashes.
    """
    raw = text.strip()
    if not raw:
        raise UnknownModel(
            "no model given; use provider/model (e.g. anthropic/claude-sonnet-5-5) or an alias"
        )
    if "/" not in raw:
        target = ALIASES.get(raw.lower())
        if target is None:
            raise UnknownModel(
                f"unknown model alias {raw!r}; known aliases: {', '.join(sorted(ALIASES))} "
                "(or write provider/model)"
            )
        raw = target
    provider, _, model = raw.partition("/")
    provider = provider.lower()
    if provider not in PROVIDERS:
        raise UnknownModel(
            f"unknown provider {provider!r} in {text!r}; known providers: {', '.join(PROVIDERS)}"
        )
    if not model.strip():
        raise UnknownModel(f"model id {text!r} names a provider but no model")
    return ModelRef(provider, model.strip())
