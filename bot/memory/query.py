"""Turn free text into FTS5 syntax that cannot be an operator, a column filter or a syntax error.

User and model queries go straight into MATCH, so every term is extracted and double-quoted:
`NEAR`, `AND`, `*`, `:`, `^` and stray quotes become plain words or vanish.
"""

from __future__ import annotations

import re

MAX_TERMS = 32
MAX_TERM_CHARS = 64
_WORD = re.compile(r"\w+", re.UNICODE)


def fts_terms(query: str) -> list[str]:
    """Distinct word terms in order of appearance, bounded in count and length."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(query):
        term = match.group(0)[:MAX_TERM_CHARS]
        seen.setdefault(term, None)
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)


def to_fts_query(query: str) -> str | None:
    """OR of quoted terms (BM25 ranks chunks matching more terms higher); None if nothing searchable."""
    terms = fts_terms(query)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
