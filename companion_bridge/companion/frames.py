"""The shapes of the bridge's WebSocket frames, checked before anything is read out of them.

Every frame is written by the bridge, which the companion does not trust: a reply with no `ok`, an
`error` that is a string, a `result` that is not an object or a welcome that is a list must end as
a worded CompanionError (or a frame ignored), never as a KeyError or TypeError that kills `run`
or `outstanding` halfway, with the journal unread.
"""

from __future__ import annotations

from typing import Any

from companion_bridge.companion.errors import CompanionError
from companion_bridge.companion.journal import SUMMARY_CHARS
from policies.kernel import safejson
from policies.kernel.text import one_line


def parse(text: Any) -> dict[str, Any] | None:
    """A frame as an object, or None for anything else (not JSON, too deep, not an object)."""
    if not isinstance(text, (str, bytes)):
        return None
    try:
        data = safejson.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def welcome_state(text: Any) -> dict[str, Any]:
    """The signer state in the bridge's first frame after `hello`."""
    data = parse(text)
    if data is None or not isinstance(data.get("state", {}), dict):
        raise CompanionError("the bridge sent a malformed welcome: not connected")
    return data.get("state", {})


def reply_result(reply: Any) -> dict[str, Any]:
    """The `result` of a reply frame, or CompanionError: the error it carries, or that it is malformed."""
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise CompanionError("the bridge sent a malformed reply")
    if not reply["ok"]:
        error = reply.get("error")
        if not isinstance(error, dict):
            raise CompanionError("the bridge sent a malformed error reply")
        code = error.get("code")
        raise CompanionError(
            one_line(str(error.get("message", "")), SUMMARY_CHARS) or "(no message)",
            code if isinstance(code, int) and not isinstance(code, bool) else None,
        )
    result = reply.get("result")
    if not isinstance(result, dict):
        raise CompanionError("the bridge sent a malformed reply (its result is not an object)")
    return result


def http_body(raw: bytes, status: int) -> dict[str, Any]:
    """An HTTP reply from the bridge (pairing, login): its object, or CompanionError with its `detail`."""
    try:
        data = safejson.loads(raw)
    except ValueError:
        data = None
    if status != 200:
        detail = data.get("detail", data) if isinstance(data, dict) else data
        raise CompanionError(
            one_line(str(detail if detail is not None else f"HTTP {status}"), SUMMARY_CHARS), status
        )
    if not isinstance(data, dict):
        raise CompanionError("the bridge sent a malformed reply", status)
    return data


def text(data: dict[str, Any], name: str) -> str:
    """A string field of a reply, or CompanionError."""
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise CompanionError(f"the bridge sent a malformed reply (no {name})")
    return value


def requests_in(data: dict[str, Any]) -> list[Any]:
    """The requests a `request` or `requests` frame carries (each still to be checked)."""
    if data.get("type") == "request":
        return [data.get("request")]
    batch = data.get("requests")
    return batch if isinstance(batch, list) else []
