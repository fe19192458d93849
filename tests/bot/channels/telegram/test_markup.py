"""Markdown -> Telegram HTML: checked against the same parser rules the fake Bot API enforces."""

from __future__ import annotations

import time

from hypothesis import given, settings, strategies as st

from bot.channels.telegram.api import fit, utf16_len
from bot.channels.telegram.markup import to_html
from tests.fakes.telegram_server import parse_html

MARKDOWN_BITS = st.sampled_from(
    [
        "**",
        "*",
        "_",
        "__",
        "~~",
        "`",
        "```",
        "```py\n",
        "\n",
        "# ",
        "- ",
        "> ",
        "[",
        "](",
        ")",
        "https://x.y/a?b=1&c=2",
        "javascript:alert(1)",
        "<",
        ">",
        "&",
        "&amp;",
        "\\",
        "---",
        " ",
        "word",
        "🦉",
        "<b>",
        "</pre>",
        '"',
        "'",
    ]
)
MARKDOWNISH = st.lists(st.one_of(MARKDOWN_BITS, st.text(max_size=8)), max_size=60).map("".join)


def test_the_usual_constructs():
    html = to_html(
        "# Title\n**bold** *it* _it_ ~~gone~~ `a<b` [site](https://ex.org/?a=1&b=2)\n"
        "- one\n* two\n> quoted\n---\n```js\nif (a && b) {}\n```"
    )
    assert html.split("\n") == [
        "<b>Title</b>",
        (
            "<b>bold</b> <i>it</i> <i>it</i> <s>gone</s> <code>a&lt;b</code> "
            '<a href="https://ex.org/?a=1&amp;b=2">site</a>'
        ),
        "• one",
        "• two",
        "<blockquote>quoted</blockquote>",
        "───",
        '<pre><code class="language-js">if (a &amp;&amp; b) {}</code></pre>',
    ]


def test_identifiers_and_arithmetic_are_not_italic():
    assert to_html("snake_case_name and 2*3*4 and a * b") == "snake_case_name and 2*3*4 and a * b"


def test_only_safe_links_are_made_and_never_nested():
    assert "<a" not in to_html("[click](javascript:alert(1)) [x](data:text/html,hi) [y](file:///etc/passwd)")
    html = to_html("[outer [inner](https://a.b)](https://c.d)")
    assert html.count("<a ") == 1
    parse_html(html)


def test_html_in_the_source_is_text():
    html = to_html('<b>not bold</b> <script>alert("x")</script> & &amp;')
    assert parse_html(html) == '<b>not bold</b> <script>alert("x")</script> & &amp;'


def test_an_unclosed_code_block_is_closed():
    html = to_html("look:\n```python\nprint('streaming…')")
    assert parse_html(html) == "look:\nprint('streaming…')" and html.endswith("</code></pre>")


@settings(max_examples=400, deadline=None)
@given(MARKDOWNISH)
def test_any_text_renders_to_html_telegram_accepts_and_never_grows(text):
    visible = parse_html(to_html(text))
    assert len(visible) <= len(text)
    assert utf16_len(visible) <= utf16_len(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="*_~`[]()\\#>-+!.{}|"), max_size=200))
def test_text_without_markdown_comes_through_unchanged(text):
    assert parse_html(to_html(text)) == text


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=12000))
def test_fit_pieces_respect_the_utf16_limit(text):
    pieces = fit(text)
    assert all(utf16_len(p) <= 4096 for p in pieces)
    if utf16_len(text) <= 4096:
        assert pieces == [text]


def test_hostile_markers_convert_in_linear_time():
    hostile_inputs = (
        "**a" * 1400,
        "*a " * 1400,
        "_" * 4000,
        "[" * 4000,
        "`" * 4000,
        "~~x" * 1400,
        "[a](" * 1000,
    )
    for hostile in hostile_inputs:
        started = time.perf_counter()
        parse_html(to_html(hostile))
        assert time.perf_counter() - started < 0.5, hostile[:10]


def test_a_long_signer_card_is_split_never_cut_and_links_only_real_hashes():
    from bot.channels.telegram.sink import signer_card_html

    summary = "; ".join(f"call {i}: transfer 1 USDC to 0x{'ab' * 20}" for i in range(200))
    tx_hash = "0x" + "12" * 32
    pieces = signer_card_html(
        {"status": "signed", "summary": summary, "tx_hash": tx_hash, "chain_id": 1},
        {1: "https://etherscan.io/tx/{hash}"},
    )
    assert len(pieces) >= 3
    visible = [parse_html(html) for html, _ in pieces]
    assert all(utf16_len(v) <= 4096 for v in visible)
    joined = "".join(plain for _, plain in pieces)
    assert all(f"call {i}:" in joined for i in range(200))
    assert pieces[-1][0].endswith(f'<a href="https://etherscan.io/tx/{tx_hash}">View it in the explorer</a>')
    explorer = {1: "https://etherscan.io/tx/{hash}"}
    forged = signer_card_html(
        {"status": "signed", "summary": "x", "tx_hash": '0x" onclick="x', "chain_id": 1}, explorer
    )
    assert "<a" not in forged[0][0]
    unknown_chain = signer_card_html(
        {"status": "signed", "summary": "x", "tx_hash": tx_hash, "chain_id": 5}, explorer
    )
    assert (
        "<a" not in unknown_chain[0][0]
        and f"Transaction {tx_hash[:10]}…{tx_hash[-6:]}." in unknown_chain[0][1]
    )


@given(st.text())
def test_escape_is_the_standard_library_s_html_escape(text: str) -> None:
    """The channel escapes with its own table (importing `html` loads its entity table on the way to
    ready): the same output as html.escape(quote=True) for any text, so nothing can smuggle markup."""
    import html

    from bot.channels.telegram.markup import escape

    assert escape(text) == html.escape(text, quote=True)
    assert not set(escape(text)) & set("<>\"'") and "&" not in escape(text).replace("&amp;", "").replace(
        "&lt;", ""
    ).replace("&gt;", "").replace("&quot;", "").replace("&#x27;", "")
