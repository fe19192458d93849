"""The skill SDK: the program the sandbox runs, and the module a skill imports as `owlia_skill`.

It is started as `python3 -I -S -B /owlia/sdk.py LIMITS_JSON /skill/ENTRYPOINT` inside the sandbox,
standard library only. Before any skill code runs it lowers the hard rlimits (which nothing in the
sandbox can raise again), keeps private copies of the JSON-RPC pipes and points fd 1 at stderr, so
a stray print() cannot corrupt the protocol. Then it loads the entrypoint, which registers tools:

    from owlia_skill import tool, fetch, chain, sign, ToolError

    @tool("gas_price")
    def gas_price(args):
        return {"gwei": int(chain("eth_gasPrice"), 16) // 10**9}

Wire format: one JSON-RPC 2.0 message per line, each line at most MAX_LINE bytes. The host sends
`initialize`, `tools/list`, `tools/call`, `shutdown`; during a call the skill may send `core.fetch`,
`core.chain` and `core.sign` requests back and blocks until the host answers.
"""

from __future__ import annotations

import json
import os
import resource
import runpy
import sys
import traceback
from typing import Any, Callable

MAX_LINE = 8 << 20
SDK_VERSION = 1

Message = dict[str, Any]  # a JSON-RPC message, and a tool's arguments: a JSON object
Handler = Callable[[Message], Any]

_TOOLS: dict[str, Handler] = {}
_rpc_in: Any = None
_rpc_out: Any = None
_next_id = 0


class ToolError(Exception):
    """Raise from a tool for an expected failure; the message goes back to the bot."""


class HostError(Exception):
    """The host refused or failed a core.* request (not allowed, rate-limited, blocked...)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def tool(name: str) -> Callable[[Handler], Handler]:
    """Register a function as the handler of a tool declared in SKILL.md."""

    def wrap(func: Handler) -> Handler:
        _TOOLS[name] = func
        return func

    return wrap


def _send(message: Message) -> None:
    data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
    _rpc_out.write(data)
    _rpc_out.flush()


def _read() -> Message | None:
    line = _rpc_in.readline(MAX_LINE + 1)
    if not line:
        return None
    if len(line) > MAX_LINE:
        raise SystemExit("message too large")
    message = json.loads(line)
    if not isinstance(message, dict):
        raise SystemExit("protocol error: a message from the host is not a JSON object")
    return message


def _request(method: str, params: Message) -> Any:
    """Send a request to the host and wait for its answer (the host sends nothing else meanwhile)."""
    global _next_id
    _next_id += 1
    my_id = f"s{_next_id}"
    _send({"jsonrpc": "2.0", "id": my_id, "method": method, "params": params})
    reply = _read()
    if reply is None:
        raise SystemExit(0)
    if reply.get("id") != my_id:
        raise SystemExit("protocol error: unexpected message from the host")
    if "error" in reply:
        raise HostError(int(reply["error"].get("code", -32603)), str(reply["error"].get("message", "error")))
    return reply.get("result")


def fetch(
    url: str, *, method: str = "GET", body: str | None = None, headers: dict[str, str] | None = None
) -> Message:
    """HTTP through the bot, only to hosts SKILL.md declares: {status, content_type, text, truncated}."""
    params: dict[str, Any] = {"url": url, "method": method}
    if body is not None:
        params["body"] = body
    if headers:
        params["headers"] = headers
    return _object("core.fetch", _request("core.fetch", params))


def chain(method: str, *params: Any, chain_id: int | None = None) -> Any:
    """A read-only JSON-RPC call to the bot's chain (an allowlisted method), if SKILL.md asks for it."""
    body: dict[str, Any] = {"method": method, "params": list(params)}
    if chain_id is not None:
        body["chain_id"] = chain_id
    return _request("core.chain", body)


def sign(intent: Message, *, reason: str = "") -> Message:
    """Ask the signer for a transaction: the signer's policy decides, and marks it as from a skill."""
    return _object("core.sign", _request("core.sign", {"intent": intent, "reason": reason}))


def _object(method: str, result: Any) -> Message:
    """A result the host answers with a JSON object; anything else is the host's failure."""
    if not isinstance(result, dict):
        raise HostError(-32603, f"{method}: the host's answer is not a JSON object")
    return result


def _apply_limits(limits: dict[str, int]) -> None:
    names = {
        "as": resource.RLIMIT_AS,
        "cpu": resource.RLIMIT_CPU,
        "fsize": resource.RLIMIT_FSIZE,
        "nproc": resource.RLIMIT_NPROC,
        "nofile": resource.RLIMIT_NOFILE,
        "core": resource.RLIMIT_CORE,
    }
    for key, value in limits.items():
        soft = hard = int(value)
        if key == "cpu":
            hard = soft + 1  # SIGXCPU at the soft limit, SIGKILL one second later
        resource.setrlimit(names[key], (soft, hard))


def _take_stdio() -> None:
    """Keep private duplicates of the protocol pipes; fd 0 becomes /dev/null, fd 1 joins stderr."""
    global _rpc_in, _rpc_out
    _rpc_in = os.fdopen(os.dup(0), "rb", buffering=65536)
    _rpc_out = os.fdopen(os.dup(1), "wb", buffering=65536)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)


def _result_of(value: Any) -> Message:
    if isinstance(value, str):
        return {"text": value}
    return {"text": json.dumps(value, separators=(",", ":"), default=str), "data": value}


def _handle(message: Message, entrypoint: str) -> Message:
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        sys.modules["owlia_skill"] = sys.modules[__name__]
        sys.path.insert(0, os.path.dirname(entrypoint))
        runpy.run_path(entrypoint, run_name="__skill__")
        return {"sdk": SDK_VERSION, "tools": sorted(_TOOLS)}
    if method == "tools/list":
        return {"tools": sorted(_TOOLS)}
    if method == "tools/call":
        name = params.get("name")
        handler = _TOOLS.get(name) if isinstance(name, str) else None
        if handler is None:
            raise ToolError(f"no tool named {name!r}")
        return _result_of(handler(dict(params.get("arguments") or {})))
    raise LookupError(f"unknown method {method!r}")


def main(argv: list[str]) -> None:
    limits, entrypoint = json.loads(argv[1]), argv[2]
    _apply_limits(limits)
    _take_stdio()
    while True:
        message = _read()
        if message is None:
            return
        if message.get("method") == "shutdown":
            _send({"jsonrpc": "2.0", "id": message.get("id"), "result": {}})
            return
        try:
            reply = {"jsonrpc": "2.0", "id": message.get("id"), "result": _handle(message, entrypoint)}
        except (ToolError, HostError) as exc:
            reply = {
                "jsonrpc": "2.0",
                "id": message.get("id"),
                "error": {"code": 1, "message": str(exc)[:2000]},
            }
        except MemoryError:
            reply = {
                "jsonrpc": "2.0",
                "id": message.get("id"),
                "error": {"code": 2, "message": "out of memory"},
            }
        except Exception as exc:  # a skill bug: report the type, the traceback goes to stderr
            traceback.print_exc()
            reply = {
                "jsonrpc": "2.0",
                "id": message.get("id"),
                "error": {"code": 3, "message": f"skill error: {type(exc).__name__}"},
            }
        _send(reply)


if __name__ == "__main__":
    main(sys.argv)
