"""Slash commands: answered by the runtime itself, no model involved.

They work with no LLM credentials at all. `/send` and `/balance` go through the same tool
executor (and so the same audit log, tier rules and signer) as the agent's own calls.
"""

from __future__ import annotations

import re
import shlex
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bot.agent.convert import OUTCOME_PART, to_messages, tool_result_data
from bot.agent.sink import ReplySink
from bot.channels.access import PairingError, open_access
from bot.channels.base import Inbound
from bot.llm.types import Message, Request, ToolCall
from bot.sessions import Session
from bot.sessions.turns import process_owner
from bot.tools.base import ContextKind, Level, ToolContext
from bot.tools.signer_words import SIGNER_DOWN, details_text, humane
from policies.kernel.addresses import is_address
from policies.units import read_amount
from signer.wire.exchange import SignerUnavailable
from signer.wire.protocol import RequestStatus
from signer.wire.sign_replies import SignReply

if TYPE_CHECKING:
    from bot.runtime.state import Runtime

HELP = """\
Commands:
/help — this list
/status — model, tokens used in this chat, signer and chain
/balance [TOKEN] — the wallet's balance (session keys held by the signer)
/send ADDRESS AMOUNT — ask the signer to send, e.g. /send 0x7099…79C8 0.001eth or /send dev-friend 0.001eth (a name from the address book; the unit is required: eth, gwei, wei or a token such as 5usdc); it decides: signed, needs approval or denied
/swap AMOUNT FROM TO — ask the signer to swap, e.g. /swap 0.005 ETH TUSD (tokens the policy lists; docs/defi.md)
/approvals — requests waiting for your companion app
/details — the ids, hashes and rules behind the last signing request
/new — start a fresh conversation (the old one is archived)
/compact — summarize older messages to save context
/model — the model profiles in use
/cancel — stop the request that is running
/pair approve CODE — (owner only, in a DM) admit the user who was sent CODE
Anything else is a message to the assistant."""
PENDING = RequestStatus.PENDING
SEND_USAGE = (
    "usage: /send ADDRESS AMOUNT, e.g. /send 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 0.001eth, or a name "
    "from the address book: /send dev-friend 0.001eth"
)
SWAP_USAGE = "usage: /swap AMOUNT FROM TO, e.g. /swap 0.005 ETH TUSD"

COMPACT_PROMPT = (
    "Summarize the conversation so far for your own future reference: decisions, facts about the "
    "user, open tasks, and every transaction with its request id, status and tx hash. Be concise. "
    "Do not include secrets."
)

Command = Callable[[list[str], Session, Inbound, ReplySink], Awaitable[str]]


class Commands:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.table: dict[str, Command] = {
            "/help": self.help,
            "/start": self.help,
            "/status": self.status,
            "/balance": self.balance,
            "/send": self.send,
            "/swap": self.swap,
            "/new": self.new,
            "/compact": self.compact,
            "/model": self.model,
            "/approvals": self.approvals,
            "/pair": self.pair,
            "/details": self.details,
        }

    async def dispatch(self, text: str, session: Session, inbound: Inbound, sink: ReplySink) -> str:
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        name = words[0].split("@", 1)[0].lower()  # Telegram appends @botname in groups
        handler = self.table.get(name)
        if handler is None:
            return f"Unknown command {name}. /help lists what I understand."
        session.append("user", [{"type": "text", "text": text}], keep=False, owner=process_owner())
        reply = await handler(words[1:], session, inbound, sink)
        if handler != self.new:  # a new conversation starts empty: its first words are the user's
            session.append("assistant", [{"type": "text", "text": reply}])
        return reply

    async def help(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        return HELP

    async def status(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        rt = self.runtime
        usage = session.usage
        lines = [
            f"chat: {session.key}; tokens used here: {usage.input_tokens} in / {usage.output_tokens} out"
        ]
        lines.append(await rt.llm.describe())
        signer = rt.services.signer
        if signer is None:
            lines.append(f"signer: not reachable ({rt.services.signer_problem})")
        else:
            try:
                st = await signer.status()
                lines.append(
                    f"signer: up {int(st.uptime_seconds)}s, "
                    f"{'FROZEN' if st.frozen else 'not frozen'}, {len(st.session_keys)} active session key(s), "
                    f"policy {st.policy_hash[:12]}"
                )
            except Exception as exc:  # noqa: BLE001 - /status must report, not crash
                lines.append(f"signer: unreachable ({type(exc).__name__})")
        chain = rt.config.default_chain
        lines.append(f"chain: {chain.name} ({chain.id})")
        return "\n".join(lines)

    async def model(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        return await self.runtime.llm.describe()

    async def balance(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        arguments: dict[str, Any] = {"token": args[0]} if args else {}
        return await self._tool(session, inbound, sink, "wallet_balance", arguments)

    async def send(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        if len(args) not in (2, 3):
            return SEND_USAGE
        to, amount_text = args[0], "".join(args[1:])
        if not is_address(to):
            found = await self._named(to)
            if isinstance(found, str):
                return f"{SEND_USAGE}\n{found}"
            to = found[0]
        try:
            amount = read_amount(amount_text)
            number, asset = (
                (amount.native_eth_text(), "ETH") if amount.native else (amount.number, amount.unit.upper())
            )
        except ValueError as exc:
            return f"{SEND_USAGE}\n{exc}"
        return await self._tool(
            session,
            inbound,
            sink,
            "transfer",
            {"to": to, "amount": number, "asset": asset, "reason": "typed by the user with /send"},
        )

    async def _named(self, name: str) -> tuple[str, str] | str:
        """The address of a name from the address book (or the contacts), or why there is none."""
        from bot.tools.base import ToolFailure  # lazy: 30 ms, 1172 KiB (2 imports)
        from bot.tools.contacts import address_named

        services = self.runtime.services
        try:
            found = await address_named(services.signer, services.state_dir, services.default_chain_id, name)
        except ToolFailure as exc:
            return str(exc)
        if found is None:
            return (
                f"'{name}' is neither an address (0x and 40 hex digits) nor a name in the signer's address book "
                "or your contacts."
            )
        return found

    async def swap(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        if len(args) != 3 or not re.fullmatch(r"[0-9]{1,40}(\.[0-9]{1,40})?", args[0]):
            return SWAP_USAGE
        return await self._tool(
            session,
            inbound,
            sink,
            "swap",
            {
                "amount": args[0],
                "token_in": args[1],
                "token_out": args[2],
                "reason": "typed by the user with /swap",
            },
        )

    async def approvals(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        signer = self.runtime.services.signer
        if signer is None:
            return f"The bot cannot reach the signer: {self.runtime.services.signer_problem}"
        pending = [
            str(data["request_id"])
            for data in tool_result_data(session.messages)
            if data.get("status") == RequestStatus.PENDING and data.get("request_id")
        ]
        lines = []
        for request_id in dict.fromkeys(pending):
            try:
                state = await signer.call_as(SignReply, "sign.status", {"request_id": request_id})
            except Exception as exc:  # noqa: BLE001
                summary = _summary_of(session, request_id)
                lines.append(f"- unknown right now ({signer_down_or(exc)}): {summary}")
                continue
            status = state.status  # the signer's judgement, expiry included (`state.state` is the raw row)
            why = state.error or (state.reason if status not in (RequestStatus.SIGNED, PENDING) else None)
            lines.append(
                f"- {status.replace('_', ' ')}: {humane(state.summary)}"
                + (f" ({humane(why)})" if why else "")
            )
        waiting = sum(1 for line in lines if line.startswith("- pending approval: "))
        if not lines:
            return "No requests from this chat are waiting for approval."
        where = self.runtime.services.companion_app_url
        open_it = f" (approve or deny them at {where})" if where and waiting else ""
        return (
            f"{waiting} waiting for your companion app{open_it}:\n"
            + "\n".join(lines)
            + "\n/details shows the ids behind the last one."
        )

    async def details(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        """What the short words leave out (request id, rules, full hash), for the one who asks."""
        outcomes = [data for data in tool_result_data(session.messages) if data.get("request_id")]
        if not outcomes:
            return "No signing request in this conversation yet."
        return details_text(outcomes[-1])

    async def pair(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        """Owners approve pairing codes from their own DM; to anyone else the command does not exist."""
        rt = self.runtime
        owner = f"{inbound.channel}:{inbound.peer}"
        if inbound.kind is not ContextKind.DM or owner not in rt.config.bot.pairing.owners:
            return "Unknown command /pair. /help lists what I understand."
        if len(args) != 2 or args[0] != "approve":
            return "Usage: /pair approve CODE"
        store = open_access(rt.home, rt.config.bot.pairing)
        try:
            grant = store.approve(args[1], by=owner)
        except PairingError as exc:
            return str(exc)
        finally:
            store.close()
        return f"Paired {grant.channel}:{grant.peer} ({grant.display or 'no name'})."

    async def new(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        session.new()
        return "Started a new conversation. The old one is archived."

    async def compact(self, args: list[str], session: Session, inbound: Inbound, sink: ReplySink) -> str:
        router = await self.runtime.llm.router()
        if router is None:
            return "Compaction needs a language model; run `owlia auth setup` first."
        messages = to_messages(session.history(10_000))
        if not messages:
            return "Nothing to compact."
        messages.append(Message.user(COMPACT_PROMPT))
        completion = await router.complete(Request(tuple(_alternate(messages)), max_tokens=2048))
        if not completion.text.strip():
            return "The model returned no summary; nothing was changed."
        session.compact(completion.text, keep_turns=2)
        return "Compacted: older messages are now a summary; transactions and pending approvals were kept."

    async def _tool(
        self, session: Session, inbound: Inbound, sink: ReplySink, name: str, arguments: dict[str, Any]
    ) -> str:
        rt = self.runtime
        call = ToolCall(f"cmd_{uuid.uuid4().hex[:12]}", name, arguments)
        ctx = ToolContext(
            session.key,
            inbound.channel,
            inbound.peer,
            inbound.kind,
            rt.services,
            run_id=f"cmd{int(time.time())}",
        )
        ctx.provenance.saw_user_text(inbound.text)
        executed = await rt.executor.execute(ctx, [call], sink, on_event=sink.tool_event)
        if executed[0].data and executed[0].level is Level.SIGN:
            # kept for /approvals and the signer watcher; not replayed to the model
            outcome = {"type": OUTCOME_PART, "tool": name, "data": dict(executed[0].data)}
            session.append("assistant", [outcome])
            return ""  # the channel already showed the signer's own card
        return executed[0].result.content


def signer_down_or(exc: Exception) -> str:
    return SIGNER_DOWN if isinstance(exc, SignerUnavailable) else type(exc).__name__


def _summary_of(session: Session, request_id: str) -> str:
    found = [d for d in tool_result_data(session.messages) if d.get("request_id") == request_id]
    return humane(str(found[-1].get("summary", ""))) if found else "(no summary)"


def _alternate(messages: list[Message]) -> list[Message]:
    """Merge a trailing user prompt into the last user message if roles would repeat."""
    if len(messages) >= 2 and messages[-2].role == "user" and messages[-1].role == "user":
        merged = Message("user", messages[-2].parts + messages[-1].parts)
        return [*messages[:-2], merged]
    return messages
