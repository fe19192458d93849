"""SafeFetcher against a real local server: pinning, redirects, limits and the outbound secret scan."""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest

from bot.net.fetch import SafeFetcher, html_to_text
from bot.net.ssrf import FetchBlocked, FetchError
from tests.bot.net.conftest import LocalServer, local_server


class Recorder:
    """An injectable resolver: a fixed answer per name, and a log of every call."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        return self.answers[host]


def run(scenario):  # type: ignore[no-untyped-def]
    """Start a local server, build a fetcher from `scenario(server)`'s needs and run it."""

    async def main():  # type: ignore[no-untyped-def]
        async with local_server() as server:
            return await scenario(server)

    return asyncio.run(main())


def test_html_page_is_fetched_as_readable_text():
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            return await fetcher.fetch(server.url("/"))

    result = run(scenario)
    assert result.status == 200 and result.content_type == "text/html" and not result.truncated
    assert result.text == (
        "Owl prices\n\nETH price\n\nToday ETH is up, see the details.\n\none\ntwo\n\ncafé & more"
    )
    assert "steal" not in result.text and "color" not in result.text and "hidden" not in result.text


def test_json_and_declared_charset():
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            return [await fetcher.fetch(server.url(p)) for p in ("/json", "/latin1", "/odd-charset")]

    doc, latin, odd = run(scenario)
    assert doc.content_type == "application/json" and doc.text == '{"eth": "3120.55"}'
    assert latin.text == "café"
    assert odd.text == "ok ✓"  # a non-text codec named as charset falls back to UTF-8


def test_pinning_connects_to_the_validated_address_and_resolves_once_per_hop():
    resolver = Recorder({"example.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})

    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(), resolve=resolver) as fetcher:
            to = server.url("/json", host="other.test")
            return await fetcher.fetch(server.url(f"/redirect?to={to}", host="example.test")), server.seen

    result, seen = run(scenario)
    # Neither name exists in real DNS: the connections can only have gone to the address we checked.
    assert result.status == 200 and result.final_url.startswith("http://other.test:")
    assert resolver.calls == ["example.test", "other.test"]
    assert [s.host.split(":")[0] for s in seen] == ["example.test", "other.test"]


def test_name_resolving_to_loopback_is_blocked_unless_allowed():
    resolver = Recorder({"sneaky.test": ["127.0.0.1"]})

    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(allow_private=()), resolve=resolver) as fetcher:
            with pytest.raises(FetchBlocked, match="sneaky.test: resolves to a loopback address"):
                await fetcher.fetch(server.url("/", host="sneaky.test"))
        return server.seen

    assert run(scenario) == []


def test_one_private_address_among_public_ones_blocks_the_name():
    resolver = Recorder({"mixed.test": ["93.184.216.34", "10.0.0.1"]})

    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(), resolve=resolver) as fetcher:
            with pytest.raises(FetchBlocked, match="private address"):
                await fetcher.fetch(server.url("/", host="mixed.test"))

    run(scenario)


def test_metadata_name_is_blocked_before_resolution():
    resolver = Recorder({"metadata.google.internal": ["127.0.0.1"]})

    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(), resolve=resolver) as fetcher:
            with pytest.raises(FetchBlocked, match="metadata"):
                await fetcher.fetch(server.url("/", host="metadata.google.internal"))

    run(scenario)
    assert resolver.calls == []


@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "017700000001", "127.1", "[::ffff:127.0.0.1]"])
def test_odd_ip_spellings_never_connect(host):
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(allow_private=())) as fetcher:
            with pytest.raises(FetchBlocked):
                await fetcher.fetch(f"http://{host}:{server.port}/")
        return server.seen

    assert run(scenario) == []


@pytest.mark.parametrize(
    "target, reason",
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://127.0.0.1:1/", "port 1 is not allowed"),
        ("file:///etc/passwd", "scheme"),
        ("http://user:pw@127.0.0.1/", "credentials"),
    ],
)
def test_redirects_are_checked_like_the_first_url(target, reason):
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            with pytest.raises(FetchBlocked, match=reason) as info:
                await fetcher.fetch(server.url(f"/redirect?to={target}"))
        return str(info.value), server.seen

    message, seen = run(scenario)
    assert message.startswith("redirect from 127.0.0.1 refused") and len(seen) == 1


def test_redirect_loop_is_capped():
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(max_redirects=3)) as fetcher:
            with pytest.raises(FetchError, match="too many redirects"):
                await fetcher.fetch(server.url("/loop"))
        return server.seen

    assert len(run(scenario)) == 4  # the first request and three followed redirects


def test_303_turns_post_into_get_and_cross_origin_hops_drop_headers_and_refuse_bodies():
    resolver = Recorder({"elsewhere.test": ["127.0.0.1"]})

    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(), resolve=resolver) as fetcher:
            see_other = await fetcher.fetch(
                server.url("/redirect?status=303&to=/echo"),
                method="POST",
                body=b"hello",
                headers={"X-Api-Key": "k1"},
            )
            moved = await fetcher.fetch(
                server.url(f"/redirect?to={server.url('/echo', 'elsewhere.test')}"),
                headers={"X-Api-Key": "k1"},
            )
            with pytest.raises(FetchBlocked, match="resend the request body"):
                elsewhere = server.url("/echo", "elsewhere.test")
                await fetcher.fetch(
                    server.url(f"/redirect?status=307&to={elsewhere}"), method="POST", body=b"hello"
                )
            return see_other, moved

    see_other, moved = run(scenario)
    assert see_other.text == "GET  auth=k1"  # same origin keeps the caller's header
    assert moved.text == "GET  auth=-"


def test_size_cap_truncates():
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(max_bytes=1000)) as fetcher:
            cut = await fetcher.fetch(server.url("/big?n=5000000"))
            return cut, await fetcher.fetch(server.url("/big?n=1000"))

    cut, exact = run(scenario)
    assert cut.truncated and cut.bytes_read == 1000 and cut.text == "x" * 1000
    assert not exact.truncated and exact.bytes_read == 1000


def test_stalling_server_hits_the_total_timeout():
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy(timeout=0.5)) as fetcher:
            start = time.monotonic()
            with pytest.raises(FetchError, match="127.0.0.1: timed out after 0.5s"):
                await fetcher.fetch(server.url("/stall"))
            return time.monotonic() - start

    assert run(scenario) < 3


def test_binary_content_is_refused():
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            with pytest.raises(FetchBlocked, match="application/octet-stream"):
                await fetcher.fetch(server.url("/binary"))

    run(scenario)


KEY = secrets.token_hex(32)
MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow"


@pytest.mark.parametrize(
    "path, body",
    [
        (f"/echo?k=0x{KEY}", None),
        (f"/echo?note={MNEMONIC.replace(' ', '+')}", None),
        (f"/echo?x={MNEMONIC.replace(' ', '%20')}", None),
        ("/echo?api_key=abc123", None),
        ("/echo", f"secret phrase: {MNEMONIC}".encode()),
        ("/echo", b"token=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"),
    ],
)
def test_secrets_are_refused_before_any_connection(path, body):
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            with pytest.raises(FetchBlocked) as info:
                await fetcher.fetch(server.url(path), method="POST" if body else "GET", body=body)
        return str(info.value), server.seen

    message, seen = run(scenario)
    assert seen == []
    assert message.startswith("127.0.0.1: refusing to send what looks like a")
    assert KEY not in message and "legal" not in message and "abc123" not in message


def test_error_messages_never_carry_a_secret_from_the_url():
    host = "sk-ant-api03-" + "a1B2" * 6 + ".example.com"

    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            with pytest.raises(FetchBlocked) as info:
                await fetcher.fetch(f"http://{host}:1/")  # refused for the port, named by host
        return str(info.value)

    message = run(scenario)
    assert "a1B2" not in message and "[REDACTED:anthropic_key]" in message


def test_public_value_may_be_allowed_through_the_secret_scan():
    tx = "0x" + secrets.token_hex(32)

    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            return await fetcher.fetch(server.url(f"/echo?tx={tx}"), allow=[tx])

    assert run(scenario).status == 200


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "gopher://127.0.0.1:70/_x", "http://user:pw@127.0.0.1/"]
)
def test_non_http_and_userinfo_urls_are_refused(url):
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            with pytest.raises(FetchBlocked):
                await fetcher.fetch(url)
        return server.seen

    assert run(scenario) == []


def test_methods_and_headers_are_restricted():
    async def scenario(server: LocalServer):
        async with SafeFetcher(server.policy()) as fetcher:
            for kwargs in (
                {"method": "DELETE"},
                {"body": b"x"},
                {"headers": {"Host": "evil"}},
                {"headers": {"X-A": "1\r\nX-B: 2"}},
            ):
                with pytest.raises(FetchBlocked):
                    await fetcher.fetch(server.url("/echo"), **kwargs)
        return server.seen

    assert run(scenario) == []


def test_html_to_text_edge_cases():
    assert html_to_text("<p>a<br>b</p><div>c</div>") == "a\nb\n\nc"
    assert html_to_text("<script>x<p>y</p></script>z") == "z"
    assert html_to_text("<p>  lots \n\n of\t space </p>") == "lots of space"
    assert html_to_text("<template>unclosed") == ""
