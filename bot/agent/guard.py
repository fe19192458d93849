"""Redact secrets from streamed model text before any of it reaches a channel.

Streaming and redaction pull in opposite directions: a private key or a seed phrase may arrive
a few characters at a time. The guard releases text only up to a point where no secret can still
be forming — it holds back the last partial word, a trailing run of BIP-39 words (a mnemonic in
progress), the word after a credential cue such as "Bearer", and any unterminated PEM block —
and redacts what it releases.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.security.redact import BIP39_WORDS, redact

HOLD_LIMIT = 16_384  # beyond this much held text, release it (redacted as a whole) to keep streaming
_WORD = re.compile(r"\S+")
_NUMBERING = re.compile(r"^\d{1,2}[.)]?$")
_CUES = frozenset(
    {
        "bearer",
        "authorization:",
        "password",
        "password:",
        "passphrase",
        "passphrase:",
        "secret:",
        "token:",
        "key:",
        "password=",
        "api_key=",
        "apikey=",
    }
)


class StreamGuard:
    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.pending = ""
        self.allow: set[str] = set(allow)
        self.words = BIP39_WORDS

    def allow_values(self, values: Iterable[str]) -> None:
        """Known public values (tx hashes the signer returned) that must not be redacted."""
        self.allow.update(values)

    def feed(self, delta: str) -> str:
        self.pending += delta
        cut = len(self.pending) if len(self.pending) > HOLD_LIMIT else self._safe_cut(self.pending)
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return redact(out, allow=self.allow) if out else ""

    def flush(self) -> str:
        out, self.pending = self.pending, ""
        return redact(out, allow=self.allow) if out else ""

    def _safe_cut(self, text: str) -> int:
        begin = text.rfind("-----BEGIN")
        limit = begin if begin != -1 and "-----END" not in text[begin:] else len(text)
        words = list(_WORD.finditer(text, 0, limit))
        if (
            words
            and words[-1].end() == limit
            and (limit == len(text) or not text[limit : limit + 1].isspace())
        ):
            limit = words.pop().start()  # the last word may still be growing
        for match in reversed(words):  # a run of wordlist words may be a seed phrase being typed
            token = match.group(0).strip(",;").lower()
            if token in self.words or _NUMBERING.match(token):
                limit = match.start()
                continue
            if token in _CUES:
                limit = match.start()
            break
        return limit
