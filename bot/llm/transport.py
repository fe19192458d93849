"""One streamed POST to a provider: httpx in, SSE events or a ProviderError out.

Both wire formats (bot.llm.anthropic_provider, bot.llm.openai_provider) share this: it owns the
HTTP client, the limits a hostile or broken provider runs into, the mapping of every failure
to a ProviderError the router understands, and the frame of one call (StreamingProvider); an
adapter adds only its request body and the translation of its events. There are no retries here (failover between profiles
is the router's job) and no redirects (a redirect would replay the key to a host nobody chose).
httpx's exceptions carry the request and so its headers, which hold the key: every one is turned
into our own error `from None`.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NoReturn, TypeVar

import httpx

from bot.llm.errors import ProviderError, classify
from bot.llm.sse import SSEDecoder, SSEError, SSEEvent, SSELimits
from bot.llm.types import Finished, Request, StopReason, StreamEvent, Usage
from bot.net.answers import compressed, is_a, read_capped
from bot.net.tls import client_context
from policies.kernel import safejson

USER_AGENT = "owliabot/0.1"
_T = TypeVar("_T")


@dataclass(frozen=True)
class StreamLimits:
    """What one answer may cost us. `max_seconds` bounds an answer that never ends (keep-alives
    forever); `timeout` (per connect, write and read, as before) bounds a silent peer."""

    sse: SSELimits = field(default_factory=SSELimits)
    max_error_body: int = 64 << 10  # bytes of an HTTP error answer we read
    max_seconds: float = 900.0


def make_client(base_url: str, timeout: float) -> httpx.AsyncClient:
    """One client per provider: it keeps the connection pool between calls, and verifies with the
    process's one TLS context (bot/net/tls.py) instead of loading the CA bundle again."""
    return httpx.AsyncClient(
        base_url=base_url.rstrip("/"),
        timeout=httpx.Timeout(timeout),
        verify=client_context(),
        follow_redirects=False,
        headers={"user-agent": USER_AGENT},
    )


def protocol_error(what: str) -> ProviderError:
    """The provider broke its own wire format: retryable, so the router moves on to another profile."""
    return ProviderError(
        f"the provider sent a malformed answer ({what})", retryable=True, error_type="protocol"
    )


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: Python's parser takes them, JSON has none


def json_object(data: str, what: str) -> dict[str, Any]:
    """The data of one event: a JSON object, or a protocol error that says which event broke."""
    try:
        value = safejson.loads(data, parse_constant=_not_json)
    except ValueError:
        raise protocol_error(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise protocol_error(f"{what} is not a JSON object")
    return value


def get(
    obj: Mapping[str, Any], key: str, kind: type[_T], what: str, *, default: _T | None = None
) -> _T | None:
    """`obj[key]` if it has type `kind` (a bool is not an int), `default` if absent or null."""
    value = obj.get(key)
    if value is None:
        return default
    if not is_a(value, kind):
        raise protocol_error(f"{what}.{key} is not {kind.__name__}")
    return value


def need(obj: Mapping[str, Any], key: str, kind: type[_T], what: str) -> _T:
    value = get(obj, key, kind, what)
    if value is None:
        raise protocol_error(f"{what}.{key} is missing")
    return value


async def _error_body(response: httpx.Response, limit: int) -> Any:
    raw = await read_capped(response, limit)
    if raw is None:
        return None  # an error page this large says nothing we would show
    try:
        return safejson.loads(raw)
    except ValueError:
        return None


def _transport_failure(exc: httpx.HTTPError, *, sent: bool) -> NoReturn:
    if isinstance(exc, httpx.TimeoutException):
        raise ProviderError("the request timed out", retryable=True, error_type="timeout") from None
    if sent:
        raise ProviderError(
            "the connection to the provider dropped", retryable=True, error_type="connection"
        ) from None
    raise ProviderError(
        "could not connect to the provider", retryable=True, error_type="connection"
    ) from None


class EventStream:
    """The events of one streamed POST: iterate it, then `aclose()` it (idempotent) to release the
    connection. A class, not an async generator: the event loop closes abandoned generators
    concurrently at shutdown, and a provider's `finally` closing a generator the loop is closing
    at the same moment fails ("aclose(): asynchronous generator is already running").

    HTTP errors, transport failures, a body that is not an event stream and broken limits all
    raise ProviderError, never an httpx exception (it would carry the request and its key)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        path: str,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str],
        secrets: tuple[str | None, ...],
        limits: StreamLimits,
    ) -> None:
        self._client = client
        self._request = client.build_request(
            "POST",
            path,
            content=json.dumps(body).encode(),
            headers={
                **headers,
                "content-type": "application/json",
                "accept": "text/event-stream",
                "accept-encoding": "identity",
            },
        )
        self._secrets = secrets
        self._limits = limits
        self._decoder = SSEDecoder(limits.sse)
        self._pending: deque[SSEEvent] = deque()
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._deadline = 0.0
        self._closed = False

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> SSEEvent:
        while not self._pending:
            if self._closed:
                raise StopAsyncIteration
            try:
                chunks = self._chunks if self._chunks is not None else await self._open()
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                await self.aclose()
                raise
            except httpx.HTTPError as exc:
                await self.aclose()
                _transport_failure(exc, sent=self._response is not None)
            except BaseException:
                await self.aclose()
                raise
            try:
                self._pending.extend(self._decoder.feed(chunk))
            except SSEError as exc:
                await self.aclose()
                raise protocol_error(str(exc)) from None
            if time.monotonic() > self._deadline:
                await self.aclose()
                raise ProviderError(
                    f"the answer took longer than {self._limits.max_seconds:g} s",
                    retryable=True,
                    error_type="timeout",
                ) from None
        return self._pending.popleft()

    async def _open(self) -> AsyncIterator[bytes]:
        self._deadline = time.monotonic() + self._limits.max_seconds
        response = self._response = await self._client.send(self._request, stream=True)
        if not 200 <= response.status_code < 300:
            try:
                payload = await _error_body(response, self._limits.max_error_body)
            except httpx.HTTPError:
                payload = None
            raise classify(response.status_code, payload, secrets=self._secrets) from None
        if compressed(response):
            raise protocol_error("a compressed stream, though none was asked for") from None
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "text/event-stream":
            raise ProviderError(
                f"the provider answered with {ctype or 'no content type'!r}, not an event "
                "stream: check the endpoint URL (base_url)",
                retryable=False,
                status=response.status_code,
            ) from None
        self._chunks = response.aiter_raw()
        return self._chunks

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pending.clear()
        if self._response is not None:
            await self._response.aclose()


class StreamingProvider(ABC):
    """One provider's client and the frame of each call: POST the adapter's body to its `path`,
    translate the events, and release the connection however the consumer stops reading. An
    adapter gives `_body` and `_translate`; `_translate` ends with `yield await finished(...)`."""

    path: ClassVar[str]

    def __init__(
        self,
        *,
        base_url: str,
        timeout: float,
        headers: dict[str, str],
        secrets: tuple[str | None, ...],
        limits: StreamLimits,
    ) -> None:
        self._headers = headers
        self._secrets = secrets
        self._limits = limits
        self._client = make_client(base_url, timeout)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        events = EventStream(
            self._client,
            self.path,
            self._body(request),
            headers=self._headers,
            secrets=self._secrets,
            limits=self._limits,
        )
        try:
            async for event in self._translate(events):
                yield event
        finally:
            await events.aclose()

    @abstractmethod
    def _body(self, request: Request) -> dict[str, Any]:
        """The JSON body of this request in the adapter's wire format, with streaming on."""

    @abstractmethod
    def _translate(self, events: EventStream) -> AsyncIterator[StreamEvent]:
        """Our stream events from the provider's; raises ProviderError on a failure it reports."""


async def finished(events: EventStream, stop: StopReason | None, usage: Usage, model: str) -> Finished:
    """The last event of an answer, once the provider's events ran out. `stop` None means the
    provider never said it was done: the connection closed mid-answer, a retryable failure. The
    stream is closed first, because a consumer may stop reading at Finished."""
    if stop is None:
        raise ProviderError(
            "the provider's stream ended before the answer was complete",
            retryable=True,
            error_type="truncated",
        )
    await events.aclose()
    return Finished(stop, usage, model)
