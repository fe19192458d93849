"""Prompt-cache accounting as the providers document it, for the local LLM server.

Anthropic: a prefix is cached at each `cache_control` breakpoint (tools, then system, then message
blocks, in that order) once it holds at least 1024 tokens; a later request reads the longest cached
prefix ending at one of its breakpoints or up to 20 blocks before one, writes the rest up to its last
breakpoint, and `input_tokens` counts only what follows that breakpoint.
OpenAI: the longest prefix shared with an earlier prompt is cached when it is at least 1024 tokens,
in steps of 128 (`prompt_tokens_details.cached_tokens`); `prompt_tokens` counts the whole prompt.
Tokens are estimated as four characters of canonical JSON each: both sides of a comparison use the
same estimate, which is all a share of cached tokens needs.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

MIN_CACHED = 1024
LOOKBACK = 20
OPENAI_STEP = 128


def tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, sort_keys=True, ensure_ascii=False)) // 4)


def _plain(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The prompt as Anthropic orders it for caching: tools, system, then every message block."""
    out: list[dict[str, Any]] = [{"tool": t} for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append({"system": {"type": "text", "text": system}})
    elif isinstance(system, list):
        out += [{"system": b} for b in system]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out += [{"role": message.get("role"), "block": b} for b in content or []]
    return out


def _marked(entry: dict[str, Any]) -> bool:
    block = entry.get("tool") or entry.get("system") or entry.get("block") or {}
    return isinstance(block, dict) and "cache_control" in block


def _strip(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) if isinstance(v, dict) else v for k, v in entry.items()}


class AnthropicCache:
    def __init__(self) -> None:
        self._cached: set[str] = set()
        self._lock = threading.Lock()

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = _blocks(body)
        model = str(body.get("model", ""))
        digest = hashlib.sha256(model.encode())
        keys: list[str] = []
        totals: list[int] = []
        running = 0
        for entry in blocks:
            digest.update(json.dumps(_strip(entry), sort_keys=True).encode())
            keys.append(digest.copy().hexdigest())
            running += tokens(_strip(entry))
            totals.append(running)
        total = running
        points = [i for i, entry in enumerate(blocks) if _marked(entry)]
        with self._lock:
            read = 0
            for point in points:
                for j in range(point, max(-1, point - LOOKBACK - 1), -1):
                    if keys[j] in self._cached:
                        read = max(read, totals[j])
                        break
            last = points[-1] if points else None
            written = 0
            if last is not None and totals[last] >= MIN_CACHED:
                written = max(0, totals[last] - read)
                for point in points:
                    if totals[point] >= MIN_CACHED:
                        self._cached.add(keys[point])
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }


class OpenAICache:
    def __init__(self) -> None:
        self._seen: list[str] = []
        self._lock = threading.Lock()

    def usage(self, body: dict[str, Any]) -> tuple[int, int]:
        """(prompt_tokens, cached_tokens)."""
        parts = [json.dumps(t, sort_keys=True) for t in body.get("tools") or []]
        parts += [json.dumps(m, sort_keys=True) for m in body.get("messages") or []]
        prompt = "".join(parts)
        with self._lock:
            shared = max((_common(prompt, old) for old in self._seen), default=0)
            self._seen = [*self._seen[-63:], prompt]
        cached = shared // 4
        cached = 0 if cached < MIN_CACHED else cached - (cached - MIN_CACHED) % OPENAI_STEP
        return max(1, len(prompt) // 4), cached


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
