"""One request and its reply, whatever carries them: what both signer clients share.

`SignerClient` (signer.wire.client, asyncio: the bot, the skills host, every long-lived caller) and
`BlockingSignerClient` (signer.wire.blocking, a plain socket: a command that sends a request or two
and exits) differ only in how bytes move. The frame they send, the checks on the reply line (JSON,
JSON-RPC, the request's id), the error they raise for it and the reply model that parses the result
are these functions, so the two cannot drift apart. No asyncio here: a blocking caller loads none.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

from signer.wire.sign_replies import Reply, ReplyError, parse_reply

if TYPE_CHECKING:
    from signer.wire.requests import Intent

__all__ = [
    "MAX_REPLY_BYTES",
    "TOKEN_ENV",
    "SignerError",
    "SignerReplyError",
    "SignerUnavailable",
    "checked_reply",
    "connection_lost",
    "load_token",
    "new_idempotency_key",
    "parsed_result",
    "read_token_file",
    "reply_result",
    "sign_params",
    "unreachable",
]

TOKEN_ENV = "OWLIA_SIGNER_TOKEN"
MAX_REPLY_BYTES = 4 << 20  # the longest reply line a client reads


class SignerError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class SignerUnavailable(SignerError):
    def __init__(self, message: str) -> None:
        super().__init__(-1, message)


class SignerReplyError(SignerError):
    """The signer's reply does not match its method's model (or is not JSON-RPC at all): refused."""

    def __init__(self, message: str) -> None:
        super().__init__(-2, message)


def new_idempotency_key(prefix: str = "req") -> str:
    # secrets.token_hex(12) is os.urandom(12).hex(); the `secrets` module would import hmac, hashlib
    # and random into `owlia sign send` for it
    return f"{prefix}-{os.urandom(12).hex()}"


def load_token(token_file: Path | None = None) -> str:
    """The client token: `OWLIA_SIGNER_TOKEN`, else a 0600 file. Never from config.yaml."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return token.strip()
    how = "create one with `owlia signer client add NAME --scope sign`"
    if token_file is None:
        raise SignerUnavailable(f"no signer token: set {TOKEN_ENV} or write it to a 0600 file; {how}")
    return read_token_file(
        token_file,
        missing=f"no signer token: set {TOKEN_ENV} or write it to {token_file} (0600); {how}",
        how=how,
    )


def read_token_file(token_file: Path, *, missing: str, how: str) -> str:
    """A token from a regular 0600 file of this user's; `missing` when there is none, `how` says where
    a good one comes from. Anything else wrong with the file is worded, never a traceback."""
    try:
        st_mode = token_file.stat().st_mode
        if not stat.S_ISREG(st_mode):
            raise SignerUnavailable(
                f"{token_file} is not a file: it must be a 0600 file holding the token; {how}"
            )
        mode = st_mode & 0o777
        if mode & 0o077:
            raise SignerUnavailable(
                f"{token_file} is readable by others (mode {mode:o}); run `chmod 600 {token_file}`"
            )
        return token_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise SignerUnavailable(missing) from None
    except (OSError, UnicodeDecodeError) as exc:  # unreadable, not text
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise SignerUnavailable(f"cannot read the signer token {token_file} ({why}); {how}") from None


def unreachable(socket_path: Path, exc: BaseException) -> SignerUnavailable:
    """The connection could not be opened."""
    return SignerUnavailable(
        f"cannot reach the signer at {socket_path} ({type(exc).__name__}); is `owlia signer serve` running?"
    )


def connection_lost(exc: BaseException) -> SignerUnavailable:
    """Sending the request or reading its reply failed (an OS error, the timeout, an overlong line)."""
    return SignerUnavailable(f"lost the signer connection ({type(exc).__name__})")


def checked_reply(method: str, req_id: int, line: bytes) -> dict[str, Any]:
    """The line read after request `req_id`, checked to be a JSON-RPC reply to it.

    Raises `SignerUnavailable` (the signer closed the connection) or `SignerReplyError` (not a reply
    to this request): either way the caller closes the connection, whose next line it cannot trust."""
    if not line:
        raise SignerUnavailable("the signer closed the connection")
    try:
        # pydantic-core's parser: a third of json.loads' cost for a reply, the same values for any JSON
        # (tests/signer/test_wire_fast_paths.py); it refuses UTF-16/32, a BOM, a lone surrogate and
        # nesting past 200 levels, none of which the signer writes.
        reply = from_json(line)
    except ValueError:
        raise SignerReplyError(f"the signer's reply to {method!r} is not JSON: refused") from None
    # an error to a frame the signer could not read carries no id (JSON-RPC 2.0)
    ids = (req_id, None) if isinstance(reply, dict) and "error" in reply else (req_id,)
    if not isinstance(reply, dict) or reply.get("id") not in ids or ("result" in reply) == ("error" in reply):
        raise SignerReplyError(f"the signer's reply to {method!r} is not a JSON-RPC reply to it: refused")
    return reply


def reply_result(method: str, reply: dict[str, Any]) -> Any:
    """A checked reply's result, or its JSON-RPC error raised as `SignerError` (the connection stays
    usable)."""
    if "error" in reply:
        err = reply["error"]
        if not isinstance(err, dict):
            raise SignerReplyError(f"the signer's error for {method!r} is malformed: refused")
        raise SignerError(err.get("code", -32603), err.get("message", "error"), err.get("data"))
    return reply["result"]


def parsed_result(method: str, result: Any) -> Reply:
    """`result` parsed with `method`'s reply model; `SignerReplyError` if it does not match (the caller
    closes the connection: a signer that garbles one reply is not trusted with the next)."""
    try:
        return parse_reply(method, result)
    except ReplyError as exc:
        raise SignerReplyError(str(exc)) from None


def sign_params(
    intent: Intent | dict[str, Any], *, idempotency_key: str | None, reason: str | None, source: str
) -> dict[str, Any]:
    """`sign.request`'s params: a fresh idempotency key unless the caller has one."""
    body = intent if isinstance(intent, dict) else intent.model_dump(mode="json", exclude_none=True)
    params: dict[str, Any] = {
        "idempotency_key": idempotency_key or new_idempotency_key(),
        "intent": body,
        "source": source,
    }
    if reason:
        params["reason"] = reason
    return params
