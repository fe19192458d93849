"""Find and redact secrets in text and in structured data, before it leaves the process.

Everything the bot writes somewhere (audit log, runtime events, replies, outbound HTTP) passes
through here, so the detectors err on the side of redacting. Two crypto-specific tensions:

* A private key and a transaction hash are both 64 hex characters. We cannot tell them apart by
  shape, so every 64-hex run is treated as a key unless the caller vouches for it (`allow`, e.g.
  the tx hash the signer just returned) or it sits under a key that names a public hash.
* `token` in crypto usually means an ERC-20 contract, not a credential; see `_classify_key`.

Every pattern is written to run in linear time (no nested quantifiers; a variable-length scan
either cannot fail once started or is anchored at the start of a run), because the input is often
attacker controlled: a web page, a chat message, a tool result.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SecretFinding", "find_secrets", "contains_secret", "redact", "redact_obj", "BIP39_WORDS"]


@dataclass(frozen=True)
class SecretFinding:
    kind: str
    start: int
    end: int


def _load_bip39_words() -> frozenset[str]:
    """The BIP-39 English list shipped with eth_account.

    Located with find_spec rather than importlib.resources.files, because the latter imports the
    whole eth_account package (about a second) just to read one data file. Missing or malformed
    means mnemonics would silently pass through, so we refuse to import instead.
    """
    spec = importlib.util.find_spec("eth_account")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for base in locations:
        path = Path(base) / "hdaccount" / "wordlist" / "english.txt"
        if path.is_file():
            words = frozenset(w.strip() for w in path.read_text(encoding="utf-8").split() if w.strip())
            if len(words) == 2048:
                return words
            raise RuntimeError(f"BIP-39 wordlist at {path} has {len(words)} words, expected 2048")
    raise RuntimeError(
        "BIP-39 English wordlist not found (is eth-account installed?); refusing to "
        "run without mnemonic redaction"
    )


BIP39_WORDS: frozenset[str] = _load_bip39_words()
MIN_MNEMONIC_WORDS = 12

# An earlier redaction. Masked before scanning so that redact() is idempotent and the letters of
# a marker ("private", "key", "secret" are BIP-39 words) never join a mnemonic run.
_MARKER = re.compile(r"\[REDACTED(?::[a-z_]{1,32})?\]")
_MASK = "\x00"
_MAX_PASSES = 8

# Every boundary assertion treats the mask like a letter: a marker stands where an alphanumeric
# secret stood, so a neighbour sees the same kind of edge on the second pass (idempotence).
_B = r"(?<![A-Za-z0-9_\x00-])"  # start of a token-ish run: keeps variable-length scans linear
_RANDOM_CHARS = frozenset("0123456789._~+/=-")


def _looks_random(value: str) -> bool:
    """Credential-like rather than an English word: a digit, a symbol, or mixed case."""
    if any(c in _RANDOM_CHARS for c in value):
        return True
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


def _openai_ok(value: str) -> bool:
    """sk-… is also how some English compounds start ("sk-learn-compatible"): demand entropy."""
    body = value[3:].replace("-", "").replace("_", "")
    return any(c.isdigit() for c in body) or any(c.isupper() for c in body)


_ASSIGN_KEYS = (
    r"password|passwd|passphrase|secret|api[_-]?key|private[_-]?key|mnemonic|seed[_-]?phrase"
    r"|(?:access|refresh|auth|bot|api|session)[_-]?token"
)


@dataclass(frozen=True)
class _Rule:
    """One regex detector. `needles` are literals one of which must occur before the regex runs at
    all: most text skips most rules. An `icase` rule is written in lower case and run over the
    lowered text (offsets are unchanged when lowering keeps the length; otherwise `folded`, the
    same pattern with IGNORECASE, runs on the original): Python's IGNORECASE scan is ~3x slower."""

    kind: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    valid: Callable[[str], bool] | None = None
    icase: bool = False

    @property
    def folded(self) -> re.Pattern[str]:
        return re.compile(self.pattern.pattern, re.IGNORECASE)


# The secret is the named group "s" (or "q1"/"q2") when present, else the whole match.
_RULES: tuple[_Rule, ...] = (
    _Rule("anthropic_key", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}"), ("sk-ant-",)),
    _Rule(
        "openai_key",
        re.compile(_B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        ("sk-",),
        _openai_ok,
    ),
    _Rule(
        "github_token",
        re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _Rule("slack_token", re.compile(r"xox[abprs]-[A-Za-z0-9-]{10,}"), ("xox",)),
    _Rule(
        "aws_access_key",
        re.compile(r"(?<![A-Za-z0-9\x00])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9\x00])"),
        ("AKIA", "ASIA"),
    ),
    _Rule(
        "telegram_bot_token",
        re.compile(r"(?<![0-9\x00])[0-9]{8,10}:[A-Za-z0-9_-]{35}(?![A-Za-z0-9_\x00-])"),
        (":",),
    ),
    _Rule("jwt", re.compile(_B + r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), ("eyJ",)),
    # The bot's own credentials: its signer client token, and a Discord bot token. A leak of either
    # lets someone else act as the bot. A Discord token starts with the bot's user id (17-20 digits)
    # in base64, and base64 of ASCII digits has a fixed shape per 4 characters: that, not just
    # "three dotted runs", is what keeps file names and dotted identifiers out.
    _Rule("owlia_token", re.compile(r"owl_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}"), ("owl_",)),
    _Rule(
        "discord_bot_token",
        re.compile(
            r"(?<![A-Za-z0-9_\x00-])(?:[MNO][DTjz][AEIMQUYcgk][w-z0-5]){5,6}[A-Za-z0-9]{0,3}"
            r"\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])"
        ),
        (".",),
    ),
    _Rule("xprv", re.compile(r"(?<![A-Za-z0-9\x00])[xtyz]prv[1-9A-HJ-NP-Za-km-z]{90,}"), ("prv",)),
    _Rule(
        "bearer",
        re.compile(r"(?<![A-Za-z0-9_\x00])bearer[ \t]{1,20}(?P<s>[A-Za-z0-9._~+/=-]{8,})"),
        ("bearer",),
        _looks_random,
        icase=True,
    ),
    _Rule(
        "bearer",
        re.compile(
            r"(?<![A-Za-z0-9_\x00-])(?:proxy-)?authorization[\"']?[ \t]{0,10}[:=][ \t]{0,10}[\"']?"
            r"(?:(?:bearer|basic|token|digest)[ \t]{1,20})?(?!(?:bearer|basic|token|digest)\b)"
            r"(?P<s>[^\s\"',;\x00]{6,})"
        ),
        ("authorization",),
        _looks_random,
        icase=True,
    ),
    _Rule(
        "assignment",
        re.compile(
            r"(?:" + _ASSIGN_KEYS + r")(?:[_-][A-Za-z0-9]{1,20})?[\"']?[ \t]{0,10}[:=][ \t]{0,10}"
            r"(?:\"(?P<q1>[^\"\n\x00]{1,500})\"|'(?P<q2>[^'\n\x00]{1,500})'|[\"']?(?P<s>[^\s\"',;&\x00]+))"
        ),
        ("pass", "secret", "key", "mnemonic", "seed", "token"),
        icase=True,
    ),
)
# Same-span ties go to the more specific kind (earlier here).
_PRIORITY = {
    k: i
    for i, k in enumerate(
        (
            "pem_private_key",
            "xprv",
            "mnemonic",
            "anthropic_key",
            "openai_key",
            "github_token",
            "slack_token",
            "aws_access_key",
            "telegram_bot_token",
            "owlia_token",
            "discord_bot_token",
            "jwt",
            "private_key",
            "bearer",
            "assignment",
        )
    )
}

_HEX64 = re.compile(r"(?<![0-9A-Fa-f\x00])[0-9A-Fa-f]{64}(?![0-9A-Fa-f\x00])")
# BIP-39 words are 3-8 letters; any other word lands in a gap, fails _WORD_GAP and ends the run.
_WORD = re.compile(r"(?<![A-Za-z\x00])[A-Za-z]{3,8}(?![A-Za-z\x00])")
_WORD_GAP = re.compile(r"[\s,;|/'\"\[\]-]*(?:[0-9]{1,2}[.):]?[\s,;|/'\"\[\]-]*)?")
_MAX_GAP = 24
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")


# Internally a finding is a plain (start, end, kind) tuple: a 1 MB input can hold 10^5 of them.
_Hit = tuple[int, int, str]


def _regex_findings(text: str) -> Iterator[_Hit]:
    lowered = text.lower()
    aligned = len(lowered) == len(text)
    for rule in _RULES:
        if not any(n in (lowered if rule.icase else text) for n in rule.needles):
            continue
        if rule.icase:
            matches = rule.pattern.finditer(lowered) if aligned else rule.folded.finditer(text)
        else:
            matches = rule.pattern.finditer(text)
        kind, valid = rule.kind, rule.valid
        for m in matches:
            # the secret is the named group that matched (s, q1 or q2), else the whole match
            start, end = m.span(m.lastgroup) if m.lastgroup else m.span()
            if valid is None or valid(text[start:end]):
                yield start, end, kind


def _hex_keys(text: str) -> Iterator[_Hit]:
    """64-hex runs that are not part of a longer hex run (those are signatures, calldata, ...)."""
    for m in _HEX64.finditer(text):
        start, end = m.span()
        if start >= 2 and text[start - 2] == "0" and text[start - 1] in "xX":
            start -= 2
        yield start, end, "private_key"


def _mnemonics(text: str) -> Iterator[_Hit]:
    """Runs of >= 12 BIP-39 words separated only by whitespace, commas, quotes or numbering."""
    if sum(map(BIP39_WORDS.__contains__, map(str.lower, _WORD.findall(text)))) < MIN_MNEMONIC_WORDS:
        return  # the common case, counted at C speed
    count = run_start = prev_end = 0
    for m in _WORD.finditer(text):
        if m.group().lower() not in BIP39_WORDS:
            if count >= MIN_MNEMONIC_WORDS:
                yield run_start, prev_end, "mnemonic"
            count = 0
            continue
        gap_ok = (
            count > 0
            and m.start() - prev_end <= _MAX_GAP
            and _WORD_GAP.fullmatch(text, prev_end, m.start()) is not None
        )
        if not gap_ok:
            if count >= MIN_MNEMONIC_WORDS:
                yield run_start, prev_end, "mnemonic"
            count, run_start = 0, m.start()
        count += 1
        prev_end = m.end()
    if count >= MIN_MNEMONIC_WORDS:
        yield run_start, prev_end, "mnemonic"


def _pem_blocks(text: str) -> Iterator[_Hit]:
    """BEGIN..END blocks; a block without END runs to the end of the text (a cut key still leaks)."""
    pos = 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        end_m = _PEM_END.search(text, begin.end())
        pos = end_m.end() if end_m else len(text)
        yield begin.start(), pos, "pem_private_key"


def _norm_public(value: str) -> str:
    value = value.strip().lower()
    return value[2:] if value.startswith("0x") else value


def _mask(m: re.Match[str]) -> str:
    return _MASK * (m.end() - m.start())


def _scan(text: str, allow: frozenset[str], skip: frozenset[str]) -> list[SecretFinding]:
    masked = _MARKER.sub(_mask, text) if "[REDACTED" in text else text
    # Only a PEM block may span a mask (an earlier marker inside a key block): it is swallowed whole.
    raw = [
        h
        for source in (_pem_blocks, _regex_findings, _hex_keys, _mnemonics)
        for h in source(masked)
        if h[1] > h[0] and h[2] not in skip
    ]
    if allow:
        raw = [h for h in raw if _norm_public(text[h[0] : h[1]]) not in allow]
    raw.sort()
    # Overlapping findings are merged, never dropped: a partly redacted secret is a leaked secret.
    # The merged span takes the kind of its longest part (ties: the more specific kind).
    merged: list[list[Any]] = []  # [start, end, kind, rank of kind]
    for start, end, kind in raw:
        rank = (end - start, -_PRIORITY[kind])
        if merged and start < merged[-1][1]:
            group = merged[-1]
            group[1] = max(group[1], end)
            if rank > group[3]:
                group[2], group[3] = kind, rank
        else:
            merged.append([start, end, kind, rank])
    return [SecretFinding(kind, start, end) for start, end, kind, _ in merged]


def _allow_set(allow: Collection[str]) -> frozenset[str]:
    return frozenset(_norm_public(a) for a in allow if isinstance(a, str) and a.strip())


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret-looking span in `text`: sorted, non-overlapping."""
    return _scan(text, frozenset(), frozenset())


def contains_secret(text: str) -> bool:
    return bool(_scan(text, frozenset(), frozenset()))


def _replace(text: str, findings: list[SecretFinding]) -> str:
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(f"[REDACTED:{f.kind}]")
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def _redact_text(text: str, allow: frozenset[str], skip: frozenset[str] = frozenset()) -> str:
    """Redact to a fixpoint. One pass is nearly always enough, but a match that swallowed part of
    the text (then was replaced) can hide a second secret behind it; the next pass, with the first
    one masked, sees it. Each pass masks strictly more text, so this ends, usually after pass two."""
    for _ in range(_MAX_PASSES):
        findings = _scan(text, allow, skip)
        if not findings:
            break
        text = _replace(text, findings)
    return text


def redact(text: str, allow: Collection[str] = ()) -> str:
    """`text` with each finding replaced by `[REDACTED:<kind>]`; values in `allow` (known public,
    compared case-insensitively, 0x optional) are kept. Idempotent."""
    return _redact_text(text, _allow_set(allow))


# A person's message calls a 64-hex value a key: redact it. Otherwise keep it, because people
# paste transaction hashes to ask about them, and a hash and a key look the same.
_KEY_CONTEXT = re.compile(
    r"(?i)\b(?:priv(?:ate)?[\s_-]*key|secret[\s_-]*key|signing[\s_-]*key|pk|seed|"
    r"import\w*|wallet[\s_-]*key)\b"
)


def redact_message(text: str) -> str:
    """A person's own message, before it is stored or sent to a model: like `redact`, except that
    a bare 64-hex value stays unless the message calls it a key (see _KEY_CONTEXT)."""
    return _redact_text(text, frozenset(), frozenset() if _KEY_CONTEXT.search(text) else _SKIP_HEX)


# --- structured data -------------------------------------------------------------------------

_SECRET_KEY_PARTS = (
    "apikey",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "privatekey",
    "privkey",
    "mnemonic",
    "seedphrase",
    "authorization",
    "cookie",
    "credential",
)
_CREDENTIAL_TOKEN_PREFIXES = frozenset(
    (
        "access",
        "refresh",
        "auth",
        "bot",
        "api",
        "id",
        "session",
        "csrf",
        "bearer",
        "oauth",
        "github",
        "slack",
        "personalaccess",
        "security",
        "client",
        "jwt",
    )
)
# prev: a hash chain's link to the previous record; treehash: a skill's content hash, as approved
_HASH_KEYS = frozenset(
    (
        "txhash",
        "hash",
        "blockhash",
        "transactionhash",
        "requesthash",
        "policyhash",
        "prevhash",
        "prev",
        "treehash",
    )
)
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_TICKER = re.compile(r"[A-Za-z][A-Za-z0-9.]{0,11}")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_MAX_DEPTH = 64
_SKIP_HEX = frozenset(("private_key",))


def _classify_key(key: str) -> str | None:
    """'secret', 'token' (ambiguous: a credential or an ERC-20), 'hash' (public hash), or None."""
    words = [w for w in _NON_ALNUM.split(_CAMEL.sub(r"\1_\2", key).lower()) if w]
    compact = "".join(words)
    if any(part in compact for part in _SECRET_KEY_PARTS):
        return "secret"
    if compact in _HASH_KEYS:
        return "hash"
    last = words[-1] if words else ""
    if last.endswith("token"):  # never "input_tokens" nor "token_transfer"
        prefix = last[: -len("token")] or (words[-2] if len(words) > 1 else "")
        return "secret" if prefix in _CREDENTIAL_TOKEN_PREFIXES else "token"
    return None


def _is_public_token_value(value: str) -> bool:
    """An ERC-20 address or a ticker such as 'USDC': what `token` holds in a crypto context."""
    return _ADDRESS.fullmatch(value) is not None or _TICKER.fullmatch(value) is not None


def _is_mnemonic_list(items: list[Any] | tuple[Any, ...]) -> bool:
    return len(items) >= MIN_MNEMONIC_WORDS and all(
        isinstance(w, str) and w.strip().lower() in BIP39_WORDS for w in items
    )


def _walk(obj: Any, allow: frozenset[str], depth: int, skip: frozenset[str] = frozenset()) -> Any:
    if depth > _MAX_DEPTH:
        return "[REDACTED]"  # too deep (or a cycle) to inspect: withhold rather than guess
    if isinstance(obj, str):
        return _redact_text(obj, allow, skip)
    if isinstance(obj, Mapping):
        return {
            (_redact_text(k, allow) if isinstance(k, str) else k): _walk_value(k, v, allow, depth)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        items = (
            ["[REDACTED:mnemonic]"] * len(obj)
            if _is_mnemonic_list(obj)
            else [_walk(v, allow, depth + 1, skip) for v in obj]
        )
        return items if isinstance(obj, list) else tuple(items)
    return obj


def _walk_value(key: Any, value: Any, allow: frozenset[str], depth: int) -> Any:
    kind = _classify_key(key) if isinstance(key, str) else None
    if kind == "secret":
        return value if value is None or isinstance(value, bool) else "[REDACTED]"
    if kind == "token" and isinstance(value, str):
        return value if _is_public_token_value(value) else "[REDACTED]"
    if kind == "hash":
        return _walk(value, allow, depth + 1, _SKIP_HEX)
    return _walk(value, allow, depth + 1)


def redact_obj(obj: Any, allow: Collection[str] = ()) -> Any:
    """A redacted copy of `obj` (dicts, lists, tuples and strings; other values unchanged).

    A value under a key that names a secret is replaced whole; under a public-hash key
    (tx_hash, blockHash, ...) 64-hex values survive but other secret kinds are still redacted.
    """
    return _walk(obj, _allow_set(allow), 0)
