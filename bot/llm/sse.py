"""Server-sent events framing (the WHATWG `text/event-stream` format), bounded for a hostile peer.

Both provider APIs stream their answers as SSE. This module only turns bytes into (event, data)
pairs; what the data means is each wire format's business (bot.llm.anthropic_wire,
bot.llm.openai_wire). It follows the standard's parsing rules: lines end in CRLF, LF or CR (a
CRLF may be split across two reads), `:` starts a comment (keep-alives), several `data:` lines
join with "\n", a blank line dispatches, an event never closed by a blank line is dropped, and
`id:` / `retry:` are ignored (we never reconnect). A provider can send anything, so a line, an
event and the whole stream have a size limit: past one, SSEError, never unbounded buffering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EOL = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


class SSEError(ValueError):
    """The byte stream is not a well-formed, in-limits event stream; the message says which rule broke."""


@dataclass(frozen=True)
class SSEEvent:
    event: str  # "message" when the stream gave no `event:` line
    data: str


@dataclass(frozen=True)
class SSELimits:
    """Far above any honest answer (a long answer is a few MB of small events), far below trouble."""

    max_line: int = 1 << 20  # bytes in one line
    max_event: int = 1 << 20  # bytes of data in one event
    max_total: int = 32 << 20  # bytes in the whole stream


class SSEDecoder:
    """Incremental decoder: `feed` any chunking of a stream, get the same events."""

    def __init__(self, limits: SSELimits = SSELimits()) -> None:
        self._limits = limits
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf already searched for a line end (none there)
        self._skip_lf = False  # the last line ended in CR: a LF opening the next chunk belongs to it
        self._started = False
        self._total = 0
        self._event = ""
        self._data: list[str] = []
        self._data_size = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._total += len(chunk)
        if self._total > self._limits.max_total:
            raise SSEError(f"the event stream is larger than {self._limits.max_total} bytes")
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        self._buf += chunk
        if not self._started:
            if len(self._buf) < len(_BOM) and _BOM.startswith(bytes(self._buf)):
                return []  # could still be a byte-order mark
            self._started = True
            if self._buf.startswith(_BOM):
                del self._buf[: len(_BOM)]
        events: list[SSEEvent] = []
        start = 0
        while (match := _EOL.search(self._buf, max(start, self._scanned))) is not None:
            self._line(bytes(self._buf[start : match.start()]), events)
            start = match.end()
            if match.group() == b"\r" and start == len(self._buf):
                self._skip_lf = True
        del self._buf[:start]
        self._scanned = len(self._buf)
        if len(self._buf) > self._limits.max_line:
            raise SSEError(f"a line of the event stream is longer than {self._limits.max_line} bytes")
        return events

    def _line(self, raw: bytes, events: list[SSEEvent]) -> None:
        if len(raw) > self._limits.max_line:
            raise SSEError(f"a line of the event stream is longer than {self._limits.max_line} bytes")
        if not raw:  # a blank line dispatches the event gathered so far
            if self._data:
                events.append(SSEEvent(self._event or "message", "\n".join(self._data)))
            self._event, self._data, self._data_size = "", [], 0
            return
        if raw[:1] == b":":
            return  # a comment: keep-alives
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SSEError("the event stream is not UTF-8 text") from None
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data_size += len(raw)
            if self._data_size > self._limits.max_event:
                raise SSEError(f"an event of the stream is larger than {self._limits.max_event} bytes")
            self._data.append(value)
        elif name == "event":
            self._event = value
        # id, retry and unknown fields: ignored, as the standard says
