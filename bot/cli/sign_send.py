"""`owlia sign send`: one transfer through the signer client's wire exchange, and the signer's outcome.

Two ways in, one body (`send_transfer`): the typer command (bot/cli/sign_cmd.py: help, usage errors,
any value typer has to convert) and a typer-free path (`from_argv`, run by bot/cli/entry.py) for a
command line whose every value typer would pass through unchanged. The whole command is a request or
two and an answer, so that path loads no typer, click or event loop: it talks to the signer over a
blocking socket (signer.wire.blocking) with the same frames, checks and reply models as the bot's
asyncio client.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.plain import plain_int, plain_path, utf8
from policies.kernel.home import resolve_home
from policies.units import parse_units, read_amount

if TYPE_CHECKING:
    from signer.wire.blocking import BlockingSignerClient

EXIT_SIGNED, EXIT_FAILED, EXIT_PENDING, EXIT_DENIED = 0, 1, 3, 4
DEFAULT_CHAIN_ID = 31337
HOME_ENV = "OWLIA_HOME"

# The typer-free path's grammar: the root's `--home` and the options of sign_cmd.send, by their
# long names, each taking one value (tests/bot/test_cli_sign_send.py holds these equal to the typer
# command's and compares both parsers on generated command lines).
SEND_OPTIONS: dict[str, tuple[str, type]] = {
    "--to": ("to", str),
    "--value": ("value", str),
    "--data": ("data", str),
    "--chain": ("chain_id", int),
    "--reason": ("reason", str),
    "--idempotency-key": ("idempotency_key", str),
}
REQUIRED = ("to", "value")


class Refused(Exception):
    """A worded error: printed as `error: MESSAGE` on stderr (policies.kernel.cli.fail), exit 1."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class SendRequest:
    home: Path
    to: str
    value: str
    data: str | None = None
    chain_id: int = DEFAULT_CHAIN_ID
    reason: str | None = None
    idempotency_key: str | None = None


def from_argv(args: Sequence[str], environ: Mapping[str, str]) -> SendRequest | None:
    """`[--home H] sign send OPTIONS` as typer reads it, or None where typer must read it: another
    command, `--help`, an unknown, repeated or missing option, a stray argument, a value typer would
    convert or refuse, a shell-completion request."""
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in environ):
        return None  # click answers completion requests before it parses anything
    words = list(args)
    home = _take_home(words, environ)
    if home is None or words[:2] != ["sign", "send"]:
        return None
    del words[:2]
    given: dict[str, Any] = {}
    while words:
        name, has_value, text = words.pop(0).partition("=")
        if name not in SEND_OPTIONS or (not has_value and not words):
            return None
        if not has_value:
            text = words.pop(0)
        field, kind = SEND_OPTIONS[name]
        if field in given or not utf8(text) or (kind is int and not plain_int(text)):
            return None
        given[field] = int(text) if kind is int else text
    if not all(field in given for field in REQUIRED):
        return None
    return SendRequest(home=home, **given)


def _take_home(words: list[str], environ: Mapping[str, str]) -> Path | None:
    """The home the root's `--home` (else a non-empty `OWLIA_HOME`) names, the option taken off
    `words`; None where typer must read it."""
    text: str | None
    if words[:1] == ["--home"] and len(words) > 1:
        text = words[1]
        del words[:2]
    elif words[:1] and words[0].startswith("--home="):
        text = words.pop(0).partition("=")[2]
    else:
        text = environ.get(HOME_ENV) or None  # click skips an empty variable
    if words[:1] and words[0].startswith("--home"):
        return None  # given twice, or a malformed one
    if text is not None and not plain_path(text):
        return None
    return resolve_home(text)


def parse_amount(text: str, assets: list[dict[str, Any]], chain_id: int) -> tuple[str | None, int]:
    """`0.01eth`, `1000wei`, `12 gwei`, `5usdc` -> (token address or None for native, base units).

    The same grammar as /send in chat (policies.units.read_amount): the unit is always written.
    """
    amount = read_amount(text)
    if amount.native:
        return None, amount.native_wei()
    found = [
        a
        for a in assets
        if a.get("chain") == chain_id
        and str(a.get("symbol", "")).lower() == amount.unit
        and a.get("asset") != "native"
    ]
    if not found:
        raise ValueError(
            f"unknown token {amount.unit!r} on chain {chain_id}: the signer's policy has no such asset "
            "(`owlia signer status` lists the policy's assets)"
        )
    return found[0]["asset"], parse_units(amount.number, int(found[0]["decimals"]))


def send_transfer(request: SendRequest) -> int:
    """Ask the signer to sign the request's transfer and print its JSON outcome: the exit code, 0 signed,
    3 pending approval, 4 denied, 1 failed (the signer's error printed as JSON). `Refused` for an error
    worded for the user: the config, the token, the amount."""
    from signer.wire.blocking import BlockingSignerClient  # lazy: 88 ms, 10240 KiB (3 imports)
    from signer.wire.exchange import SignerError, load_token
    from signer.wire.settings import ConfigError, SignerPaths, client_token_file, load_signer_config

    try:
        paths = SignerPaths.from_config(request.home, load_signer_config(request.home))
    except ConfigError as exc:
        raise Refused(str(exc)) from None
    try:
        token = load_token(client_token_file(request.home))
    except SignerError as exc:
        raise Refused(exc.message) from None
    try:
        # connected and authenticated before the amount is read: an unreachable signer is what a
        # command with a bad amount reports first, as the command always did
        with BlockingSignerClient(paths.socket, token) as client:
            outcome = client.sign(
                _intent(client, request),
                idempotency_key=request.idempotency_key,
                reason=request.reason,
                source="cli",
            )
    except ValueError as exc:
        raise Refused(str(exc)) from None
    except SignerError as exc:
        print_json({"status": "error", "code": exc.code, "error": exc.message, "data": exc.data})
        return EXIT_FAILED
    from signer.wire.protocol import RequestStatus  # lazy: 72 ms, 8776 KiB (2 imports)
    from signer.wire.sign_replies import dump_reply

    print_json(json.loads(dump_reply(outcome)))
    exit_codes = {
        RequestStatus.SIGNED: EXIT_SIGNED,
        RequestStatus.PENDING: EXIT_PENDING,
        RequestStatus.DENIED: EXIT_DENIED,
    }
    return exit_codes.get(outcome.status, EXIT_FAILED)


def _intent(client: BlockingSignerClient, request: SendRequest) -> dict[str, Any]:
    from policies.kernel.addresses import is_address  # lazy: 72 ms, 9176 KiB (3 imports)
    from policies.units import read_amount
    from signer.wire.sign_replies import PolicyShowReply

    assets: list[dict[str, Any]] = []
    to = request.to
    policy = None
    if not read_amount(request.value).native or not is_address(to):
        policy = client.call_as(PolicyShowReply, "policy.show").policy
        assets = policy.get("assets", [])
    if not is_address(to):
        to = book_address(policy or {}, request.chain_id, to)
    token_addr, amount = parse_amount(request.value, assets, request.chain_id)
    if token_addr is None:
        intent: dict[str, Any] = {"chain_id": request.chain_id, "to": to, "value": str(amount)}
        if request.data:
            intent["data"] = request.data
        return intent
    if request.data:
        raise ValueError("--data cannot be combined with a token amount")
    return {
        "chain_id": request.chain_id,
        "token_transfer": {"token": token_addr, "recipient": to, "amount": str(amount)},
    }


def book_address(policy: dict[str, Any], chain_id: int, name: str) -> str:
    """The address the signer's address book gives `name` on `chain_id` (any case), or ValueError."""
    wanted = name.casefold()
    found = {
        str(e.get("address"))
        for e in policy.get("address_book", []) or []
        if isinstance(e, dict) and e.get("chain") == chain_id and str(e.get("name", "")).casefold() == wanted
    }
    if len(found) == 1:
        return found.pop()
    if found:
        raise ValueError(
            f"--to {name}: the signer's address book has more than one {name!r} on chain {chain_id}; "
            "give the address"
        )
    raise ValueError(
        f"--to {name}: neither an address (0x and 40 hex digits) nor a name in the signer's address book "
        f"on chain {chain_id}"
    )


def print_json(data: Any) -> None:
    """policies.kernel.cli.print_json's output without typer: the same JSON text (ASCII, so typer's
    echo would write the same bytes) and a flush, as echo does; nothing, as echo, without a stdout."""
    if sys.stdout is None:  # started with its stdout closed
        return
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    sys.stdout.flush()
