"""The web_fetch tool through its handler, with a real SafeFetcher against a local server."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from bot.net.fetch import SafeFetcher
from bot.tools.base import ContextKind, Level, ToolContext, ToolFailure
from bot.tools.services import Services
from bot.tools.web import WebFetchArgs, web_fetch
from tests.bot.net.conftest import local_server


def context(tmp_path, fetcher) -> ToolContext:  # type: ignore[no-untyped-def]
    return ToolContext("s1", "test", "peer", ContextKind.DM, Services(workspace=tmp_path, fetcher=fetcher))


def call(tmp_path, path: str, **args):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        async with local_server() as server, SafeFetcher(server.policy(max_bytes=5000)) as fetcher:
            url = server.url(path) if path.startswith("/") else path
            return await web_fetch.handler(context(tmp_path, fetcher), WebFetchArgs(url=url, **args)), server

    return asyncio.run(main())


def test_spec_is_a_read_tool_with_bounded_arguments():
    assert web_fetch.name == "web_fetch" and web_fetch.level is Level.READ and web_fetch.timeout == 30
    props = web_fetch.spec().parameters["properties"]
    assert props["url"]["maxLength"] == 2048 and props["max_chars"]["maximum"] == 50000
    for bad in (
        {"url": "x" * 2049},
        {"url": "http://a/", "max_chars": 0},
        {"url": "http://a/", "max_chars": 50001},
        {"url": "http://a/", "headers": {}},
    ):
        with pytest.raises(ValidationError):
            WebFetchArgs(**bad)


def test_fetches_page_as_untrusted_text(tmp_path):
    out, server = call(tmp_path, "/")
    assert out.untrusted and not out.is_error
    assert out.content.startswith(f"URL: {server.url('/')}\nStatus: 200\n\nOwl prices\n\nETH price")
    assert out.data == {
        "url": server.url("/"),
        "final_url": server.url("/"),
        "status": 200,
        "truncated": False,
    }


def test_long_text_is_cut_with_a_note(tmp_path):
    out, _ = call(tmp_path, "/big?n=300", max_chars=100)
    assert (
        "x" * 100 + "\n\n[... cut at 100 of 300 characters]" in out.content and "x" * 101 not in out.content
    )
    assert out.data["truncated"] is True
    out, _ = call(tmp_path, "/big?n=9000")
    assert (
        out.content.endswith("larger than the download limit and was cut]") and out.data["truncated"] is True
    )


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("file:///etc/passwd", "scheme"),
        ("/redirect?to=http://10.0.0.1/", "private address"),
        ("/binary", "not text"),
    ],
)
def test_refusals_become_tool_failures_with_the_reason(tmp_path, url, reason):
    with pytest.raises(ToolFailure, match=reason):
        call(tmp_path, url)


def test_secret_in_url_is_refused_without_echoing_it(tmp_path):
    key = "ab" * 32
    with pytest.raises(ToolFailure) as info:
        call(tmp_path, f"/echo?k={key}")
    assert "private_key" in str(info.value) and key not in str(info.value)


def test_unconfigured_web_access_fails_closed(tmp_path):
    async def main():  # type: ignore[no-untyped-def]
        await web_fetch.handler(context(tmp_path, None), WebFetchArgs(url="https://example.com/"))

    with pytest.raises(ToolFailure, match="web access is not configured"):
        asyncio.run(main())
