"""Markdown (as models write it) to the HTML subset Telegram accepts.

Telegram rejects a whole message over one stray `<` or an unclosed tag, so the converter is built
to be valid by construction: every piece of source text is escaped, and a tag is only emitted
together with its closing tag around an inner span that is itself converted the same way.
Unmatched markers stay literal text. Links are made only for http(s), tg and mailto URLs (a
`javascript:` link stays text), and never nest. The visible text is never longer than the source,
so a chunk that fits Telegram's limit as Markdown still fits once rendered.

Spans are bounded in length so that text full of unmatched `**` cannot make the scan quadratic
over a whole message (model output can quote attacker-controlled pages).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([A-Za-z0-9_+#.-]{0,32})\s*$")
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_RULE = re.compile(r"^\s*([-*_])(?:\s*\1){2,}\s*$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_SCHEMES = ("http://", "https://", "tg://", "mailto:")

_INLINE = re.compile(
    r"(?P<code>(?P<ticks>`{1,3})(?P<code_body>[^\n]{1,2000}?)(?P=ticks))"
    r"|(?P<link>\[(?P<link_text>[^\]\n]{1,500})\]\((?P<url>[^\s()]{1,2000})\))"
    r"|(?P<bold>(?P<bmark>\*\*|__)(?=\S)(?P<bold_body>[^\n]{1,1000}?)(?<=\S)(?P=bmark))"
    r"|(?P<strike>~~(?=\S)(?P<strike_body>[^\n]{1,1000}?)(?<=\S)~~)"
    r"|(?P<italic>(?<![\w*])\*(?=[^\s*])(?P<star_body>[^\n]{1,1000}?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<![\w_])_(?=[^\s_])(?P<under_body>[^\n]{1,1000}?)(?<=[^\s_])_(?![\w_]))"
    r"|(?P<escape>\\(?P<escaped>[\\`*_{}\[\]()#+\-.!~>|]))"
)


# html.escape's table (quote=True), without importing `html`: it loads the whole entity table
# (html.entities) for unescape, which the channel never calls, on `owlia start`'s way to ready.
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def escape(text: str) -> str:
    """Escape what Telegram's HTML parser treats as markup (&, <, > and, in attributes, quotes)."""
    return text.translate(_ESCAPES)


def inline(text: str, *, links: bool = True) -> str:
    """One line of inline Markdown: code, links, bold, italic, strikethrough, backslash escapes."""
    out: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        kind = _kind(match)
        if kind == "link" and (not links or not match.group("url").lower().startswith(_SCHEMES)):
            continue  # left as literal text (escaped below with its surroundings)
        out.append(escape(text[position : match.start()]))
        position = match.end()
        if kind == "code":
            out.append(f"<code>{escape(match.group('code_body'))}</code>")
        elif kind == "link":
            label = inline(match.group("link_text"), links=False)
            out.append(f'<a href="{escape(match.group("url"))}">{label}</a>')
        elif kind == "bold":
            out.append(f"<b>{inline(match.group('bold_body'), links=links)}</b>")
        elif kind == "strike":
            out.append(f"<s>{inline(match.group('strike_body'), links=links)}</s>")
        elif kind == "italic":
            body = match.group("star_body") or match.group("under_body")
            out.append(f"<i>{inline(body, links=links)}</i>")
        else:
            out.append(escape(match.group("escaped")))
    out.append(escape(text[position:]))
    return "".join(out)


def _kind(match: re.Match[str]) -> str:
    for name in ("code", "link", "bold", "strike", "italic", "escape"):
        if match.group(name) is not None:
            return name
    raise AssertionError("unreachable: the pattern has no other alternatives")


def to_html(markdown: str) -> str:
    """A whole message: fenced code to <pre>, headers to bold, bullets to •, quotes to <blockquote>."""
    out: list[str] = []
    code: list[str] | None = None
    fence = ("", "")
    quote: list[str] = []

    def flush_quote() -> None:
        if quote:
            out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
            quote.clear()

    for line in markdown.split("\n"):
        if code is not None:
            closing = _FENCE.match(line)
            if (
                closing
                and closing.group(1)[0] == fence[0][0]
                and len(closing.group(1)) >= len(fence[0])
                and not closing.group(2)
            ):
                out.append(_pre(code, fence[1]))
                code = None
            else:
                code.append(line)
            continue
        opening = _FENCE.match(line)
        quoted = _QUOTE.match(line)
        if quoted is not None and opening is None:
            quote.append(_line(quoted.group(1)))
            continue
        flush_quote()
        if opening is not None:
            code, fence = [], (opening.group(1), opening.group(2))
            continue
        out.append(_line(line))
    flush_quote()
    if code is not None:  # an unclosed block (a streamed preview, or a model that forgot): close it
        out.append(_pre(code, fence[1]))
    return "\n".join(out)


def _line(line: str) -> str:
    if _RULE.match(line):
        return "───"
    header = _HEADER.match(line)
    if header is not None:
        return f"<b>{inline(header.group(1))}</b>" if header.group(1) else ""
    bullet = _BULLET.match(line)
    if bullet is not None:
        return f"{bullet.group(1)}• {inline(bullet.group(2))}"
    return inline(line)


def _pre(lines: list[str], language: str) -> str:
    body = escape("\n".join(lines))
    if language:
        return f'<pre><code class="language-{escape(language)}">{body}</code></pre>'
    return f"<pre>{body}</pre>"
