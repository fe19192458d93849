"""The reference companion: pairs, logs in to the bridge, receives requests, answers them.

It trusts the bridge for nothing: the request hash it signs over is recomputed from the request
it received, so a bridge that rewrites a request makes the signer refuse the answer; the
transaction it signs is exactly the request's `tx`, checked to come from its own main account.
`decide` is the UI: a terminal prompt in `owlia companion run`, a script in the tests.
Every approval it signs is journaled first and watched until a signed nonce quote shows its
nonce mined (companion.watch): a bridge that drops an approval keeps a transaction it could send.
A request approved before is signed again only at its journaled nonce: the same transaction, so a
bridge that kept the first one and redelivers the request cannot get it paid twice. Every frame
from the bridge is shape-checked (companion.frames) before anything is read out of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import aiohttp

from companion_bridge.companion import frames
from companion_bridge.companion.bridge_text import block, short, tx_hash_or_blank
from companion_bridge.companion.errors import (
    CompanionError,  # defined here before; still importable from here
)
from companion_bridge.companion.journal import Entry, Journal
from companion_bridge.companion.outstanding import already_approved_lines
from companion_bridge.companion.pairing import (  # moved; importable here
    PAIR_SCHEME,
    checked_signer_key,
    pair_uri,
    parse_pair_uri,
)
from companion_bridge.companion.quotes import nonce_from, quoted_nonce  # quoted_nonce: likewise
from companion_bridge.companion.render import render_request
from companion_bridge.companion.wallet import CompanionWallet
from companion_bridge.companion.watch import Watch
from companion_bridge.wire import auth_message
from policies.kernel.keccak import keccak256
from policies.kernel.passphrase import zeroize
from signer.wire.approval_request import ApprovalRequestBody, MainTx, request_hash
from signer.wire.messages import (
    APPROVAL_DOMAIN,
    FREEZE_DOMAIN,
    PAIR_DOMAIN,
    REQUEST_DOMAIN,
    TOPUP_DOMAIN,
    answer_body,
    freeze_body,
    pair_body,
    pairing_mac,
    signed_by,
    signed_message,
    topup_body,
)
from signer.wire.protocol import ApprovalAction, RequestStatus
from signer.wire.sign_replies import ReplyError, parse_reply

__all__ = [
    "PAIR_SCHEME",
    "Choice",
    "Companion",
    "CompanionError",
    "Decide",
    "pair_uri",
    "parse_pair_uri",
    "quoted_nonce",
    "unsigned",
]


@dataclass
class Choice:
    """What the user decided for one request. `passphrase` is wiped after use."""

    action: str  # approve | deny | freeze | skip
    passphrase: bytearray | None = None
    note: str | None = None


Decide = Callable[[ApprovalRequestBody, str], Awaitable[Choice]]


class AnswerParams(TypedDict):
    """`approvals.answer`'s params as this companion sends them (signer.wire.requests.ApprovalAnswerParams)."""

    request_id: str
    request_hash: str
    device_id: str
    action: str
    expires_at: float
    signature: str
    raw_tx: NotRequired[str]  # an approval of a transaction: the main key's signed bytes
    note: NotRequired[str]


class TopUpAsk(TypedDict):
    """`approvals.topup`'s params (signer.wire.requests.TopUpRequestParams)."""

    device_id: str
    key_id: str
    ts: float
    signature: str
    amount: NotRequired[str]  # wei; absent: up to the cap


def unsigned(request: ApprovalRequestBody) -> ApprovalRequestBody:
    """The request as the signer hashed it: without the signature that travels with it."""
    body: ApprovalRequestBody = {**request}
    body.pop("signer_sig", None)
    return body


class Companion:
    def __init__(self, wallet: CompanionWallet, bridge_url: str, *, ssl: Any = True) -> None:
        self.wallet = wallet
        self.bridge_url = bridge_url.rstrip("/")
        self.ssl = ssl
        self.state: dict[str, Any] = {}
        self.requests: asyncio.Queue[ApprovalRequestBody] = asyncio.Queue()
        self.resolved: set[str] = set()
        self.forged: list[str] = []  # ids of requests dropped because the signer did not sign them
        self.warn: Callable[[str], None] = lambda text: None  # `run` points this at the user's screen
        self.watch = Watch(wallet, self.call, lambda line: self.warn(line))  # approvals it signed
        self.answer_timeout = 30.0
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task | None = None
        self._witness: asyncio.Task | None = None
        self._replies: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self.closed = asyncio.Event()

    async def __aenter__(self) -> Companion:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            # No keep-alive: logins are rare, and a pooled connection the server already closed
            # would fail the next login.
            self._http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=30), connector=aiohttp.TCPConnector(force_close=True)
            )
        return self._http

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        async with self._session().post(self.bridge_url + path, json=body, ssl=self.ssl) as resp:
            return frames.http_body(await resp.read(), resp.status)

    # ---- pairing and login --------------------------------------------------------------------

    async def pair(self, pairing_id: str, code: str, signer_key: str | None = None) -> dict[str, Any]:
        """Prove the code (HMAC: the code itself never crosses the bridge) and the device key.
        `signer_key` comes from the pairing link; without it this companion can deny but never approve."""
        if signer_key is not None:
            checked_signer_key(signer_key)  # a damaged one is refused before anything is sent or stored
        wallet = self.wallet
        ts, nonce = time.time(), secrets.token_hex(32)
        body = pair_body(
            pairing_id,
            wallet.device_public_key,
            wallet.state.get("name", "companion"),
            wallet.main_address,
            ts,
            nonce,
        )
        message = signed_message(PAIR_DOMAIN, body)
        reply = await self._post(
            "/v1/pair",
            {
                **body,
                "main_address": wallet.main_address,
                "signature": wallet.device_sign(message),
                "mac": pairing_mac(code, message),
            },
        )
        device = reply.get("device")
        wallet.save_state(
            device_id=frames.text(device if isinstance(device, dict) else {}, "device_id"),
            bridge_url=self.bridge_url,
            signer_key=signer_key,
        )
        return reply

    async def login(self) -> str:
        device_id = self._device_id()
        challenge = await self._post("/v1/auth/challenge", {"device_id": device_id})
        ts = time.time()
        aud, nonce = frames.text(challenge, "aud"), frames.text(challenge, "nonce")
        signature = self.wallet.device_sign(auth_message(device_id, aud, nonce, ts))
        reply = await self._post(
            "/v1/auth/token", {"device_id": device_id, "nonce": nonce, "ts": ts, "signature": signature}
        )
        return frames.text(reply, "token")

    async def connect(self, token: str | None = None) -> None:
        token = token or await self.login()
        ws_url = self.bridge_url.replace("http", "ws", 1) + "/v1/ws"
        self._ws = await self._session().ws_connect(ws_url, ssl=self.ssl, heartbeat=20)
        await self._ws.send_str(json.dumps({"type": "hello", "token": token}))
        first = await self._ws.receive(timeout=10)
        if first.type != aiohttp.WSMsgType.TEXT:
            raise CompanionError(
                f"the bridge refused the connection ({self._ws.close_code})", self._ws.close_code
            )
        self.state = frames.welcome_state(first.data)
        self.closed.clear()
        self._reader = asyncio.create_task(self._read())
        await self.check_outstanding()
        self._witness = asyncio.create_task(
            self.watch.witness_now()
        )  # the audit checkpoint, in the background

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for msg in self._ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    break
                data = frames.parse(msg.data)
                if data is None:
                    continue  # not an object: nothing in it to read
                kind = data.get("type")
                if kind in ("request", "requests"):
                    for request in frames.requests_in(data):
                        self._receive(request)
                elif kind == "reply":
                    reply_id = data.get("id")
                    future = self._replies.pop(reply_id, None) if isinstance(reply_id, int) else None
                    if future is not None and not future.done():
                        future.set_result(data)
                elif kind == "state" and isinstance(data.get("state"), dict):
                    self.state = data["state"]
                    self.watch.poke()  # in a task of its own (its reply comes here), coalesced
                elif kind == "resolved" and isinstance(data.get("request_id"), str):
                    self.resolved.add(data["request_id"])
        finally:
            for future in self._replies.values():
                if not future.done():
                    future.set_exception(CompanionError("the bridge connection closed"))
            self._replies.clear()
            self.closed.set()

    @property
    def close_code(self) -> int | None:
        """Why the bridge closed the connection (4401: token expired or device revoked)."""
        return None if self._ws is None else self._ws.close_code

    async def call(
        self, method: str, params: Mapping[str, object] | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        """One call through the bridge: its result, or CompanionError (refused, or a malformed reply)."""
        if self._ws is None or self._ws.closed:
            raise CompanionError("not connected to the bridge")
        req_id = next(self._ids)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._replies[req_id] = future
        await self._ws.send_str(
            json.dumps({"type": "call", "id": req_id, "method": method, "params": params})
        )
        try:
            reply = await asyncio.wait_for(future, timeout)
        finally:
            self._replies.pop(req_id, None)
        result = frames.reply_result(reply)
        # The bridge is not trusted: what it relays must still be the signer's reply to this method.
        # Kept as JSON: the companion checks the signer's signatures over these very fields.
        try:
            parse_reply(method, result)
        except ReplyError as exc:
            raise CompanionError(f"the bridge relayed a reply the signer would not send: {exc}") from None
        return result

    async def close(self) -> None:
        self.watch.stop()
        if self._witness is not None:
            self._witness.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._witness
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._http is not None:
            await self._http.close()
            self._http = None

    def _device_id(self) -> str:
        if self.wallet.device_id is None:
            raise CompanionError("this companion is not paired: run `owlia companion link URI`")
        return self.wallet.device_id

    # ---- answers and actions ----------------------------------------------------------------

    def _receive(self, request: ApprovalRequestBody) -> None:
        """Queue a request only if the signer signed it: a rewritten one is never shown."""
        try:
            if not isinstance(request, dict):
                raise CompanionError("not a request")
            self.verified_hash(request)
        except CompanionError as exc:
            raw_id = str(request.get("request_id", "?")) if isinstance(request, dict) else "?"
            request_id = re.sub(r"[^A-Za-z0-9_-]", "?", raw_id[:40])  # the bridge wrote it: no escape codes
            self.forged.append(request_id)
            self.warn(f"WARNING: dropped request {request_id}: {exc}")
            return
        self.requests.put_nowait(request)

    def verified_hash(self, request: ApprovalRequestBody) -> str:
        """The request's hash, after checking the signer's signature over it with the key from the
        pairing link. Anything else may have been written by the bridge: nothing is signed for it."""
        key = self.wallet.state.get("signer_key")
        if not key:
            raise CompanionError(
                "this companion has no signer key (pair again with the full link or QR): "
                "it can deny, never approve"
            )
        digest = request_hash(unsigned(request))
        if not signed_by(key, REQUEST_DOMAIN, {"request_hash": digest}, request.get("signer_sig")):
            raise CompanionError(
                "this request is not signed by your signer (the bridge may be compromised): "
                "nothing was signed"
            )
        return digest

    def build_answer(
        self,
        request: ApprovalRequestBody,
        choice: Choice,
        nonce: int | None = None,
        quoted_at: float | None = None,
    ) -> AnswerParams:
        """The answer params for `approvals.answer`; the hash is ours, not the bridge's. An approval
        needs the signer's signature on the request; `nonce` (from the signed quote of `quoted_at`)
        replaces the request's when the main account has sent something since it was escalated,
        unless this request was approved before: then only its journaled nonce (`_approved_tx`)."""
        digest = (
            self.verified_hash(request)
            if choice.action == ApprovalAction.APPROVE
            else request_hash(unsigned(request))
        )
        raw, tx_hash = b"", ""
        if choice.action == ApprovalAction.APPROVE and request["kind"] == "policy":
            if choice.passphrase is not None:
                zeroize(choice.passphrase)  # a policy approval is signed by the device key alone
        elif choice.action == ApprovalAction.APPROVE:
            want = request["tx"]
            if want is None:
                raise CompanionError("this request has no transaction to sign; deny it")
            assert choice.passphrase is not None
            tx: MainTx = want if nonce is None else {**want, "nonce": nonce}
            try:
                tx, quoted_at = self._approved_tx(request, tx, quoted_at)
                self.watch.check_room()
                raw = self.wallet.sign_transaction(tx, choice.passphrase)
            finally:
                zeroize(choice.passphrase)
            tx_hash = self.watch.signed(request, tx, raw, quoted_at)  # journaled before it can leave
        device_id = self._device_id()
        message = signed_message(
            APPROVAL_DOMAIN,
            answer_body(
                request["request_id"], digest, choice.action, request["expires_at"], device_id, tx_hash
            ),
        )
        params: AnswerParams = {
            "request_id": request["request_id"],
            "request_hash": digest,
            "device_id": device_id,
            "action": choice.action,
            "expires_at": request["expires_at"],
            "signature": self.wallet.device_sign(message),
        }
        if raw:
            params["raw_tx"] = "0x" + raw.hex()
        if choice.note:
            params["note"] = choice.note
        return params

    def _approved_tx(
        self, request: ApprovalRequestBody, tx: MainTx, quoted_at: float | None
    ) -> tuple[MainTx, float | None]:
        """The transaction to sign, and the quote time it goes with. A request this companion approved
        before is signed only at that approval's nonce: signing is deterministic, so that is the very
        same transaction (which the signer refuses if its nonce is used), never a second payment at a
        new nonce, whatever the bridge said about the first one. Refused outright once that nonce is used."""
        first = self.watch.approved(request)
        if first is None:
            return tx, quoted_at
        if first.settled:
            raise CompanionError(
                f"request {short(first.request_id, 80)} was already approved on this companion as tx "
                f"{first.tx_hash} at nonce {first.nonce}, and your signer shows that nonce used: nothing was "
                "signed again (a new nonce could pay twice). If it was not paid, have it requested anew."
            )
        return {**tx, "nonce": first.nonce}, first.quoted_at  # the request's, at the journaled nonce

    async def answer(self, request: ApprovalRequestBody, choice: Choice) -> dict[str, Any]:
        """Send the answer. For an approval, whatever happens, check the journal afterwards: an
        error or silence may mean the bridge kept the signed transaction, and even a "signed" reply
        is the bridge's word until a signed quote shows the nonce mined."""
        nonce = quoted_at = None
        if choice.action == ApprovalAction.APPROVE and request.get("tx") is not None:
            nonce, quoted_at = await self.signing_nonce(request)
        params = self.build_answer(request, choice, nonce, quoted_at)
        tx_hash = "0x" + keccak256(bytes.fromhex(params["raw_tx"][2:])).hex() if "raw_tx" in params else ""
        try:
            result = await self.call("approvals.answer", params, timeout=self.answer_timeout)
        except (CompanionError, asyncio.TimeoutError) as exc:
            if tx_hash:
                await self.watch.answered(
                    tx_hash,
                    f"error: {exc.message}"
                    if isinstance(exc, CompanionError)
                    else f"no reply within {self.answer_timeout:g} s",
                )
            raise
        if tx_hash:
            await self.watch.answered(tx_hash, f"{result.get('status')} {result.get('tx_hash', '')}")
        return result

    async def signing_nonce(self, request: ApprovalRequestBody) -> tuple[int | None, float | None]:
        """The main account's next nonce as the signer quotes it now (None: keep the request's), and
        the `ts` of that fresh signed quote (None: none came), which the journal entry keeps."""
        quote = self.watch.settle(await self.call("approvals.state", params=self.watch.state_params()))
        if quote is None or not quote.fresh():
            return None, None
        return nonce_from(quote, request), quote.ts

    def _screen(self, request: ApprovalRequestBody) -> str:
        """The request as the user reads it, under a notice if this companion approved it before."""
        try:
            first = self.watch.approved(request)
        except CompanionError as exc:
            return f"WARNING: {exc.message}\n{render_request(request)}"
        notice = [] if first is None else already_approved_lines(first)
        return "\n".join([*notice, render_request(request)])

    @property
    def journal(self) -> Journal:
        return self.watch.journal

    async def check_outstanding(self, *, warn: bool = True) -> list[Entry]:
        """Approvals whose signed transaction someone may still send (companion.watch), each shown via `warn`."""
        return await self.watch.check(warn=warn)

    async def freeze(self, action: str = "freeze") -> dict[str, Any]:
        device_id, ts = self._device_id(), time.time()
        freeze_id = self.state.get("freeze_id", "") if action == "unfreeze" else ""
        if action == "unfreeze" and not freeze_id:
            self.state = await self.call("approvals.state", params=self.watch.state_params())
            self.watch.settle(self.state)
            freeze_id = self.state.get("freeze_id", "")
        message = signed_message(FREEZE_DOMAIN, freeze_body(device_id, action, freeze_id, ts))
        self.state = await self.call(
            "approvals.freeze",
            {
                "device_id": device_id,
                "action": action,
                "freeze_id": freeze_id,
                "ts": ts,
                "signature": self.wallet.device_sign(message),
            },
        )
        return self.state

    async def topup(self, key_id: str, amount: int | None = None) -> dict[str, Any]:
        device_id, ts = self._device_id(), time.time()
        message = signed_message(TOPUP_DOMAIN, topup_body(device_id, key_id, amount, ts))
        params: TopUpAsk = {
            "device_id": device_id,
            "key_id": key_id,
            "ts": ts,
            "signature": self.wallet.device_sign(message),
        }
        if amount is not None:
            params["amount"] = str(amount)
        return await self.call("approvals.topup", params)

    async def next_request(self, timeout: float | None = None) -> ApprovalRequestBody:
        return await asyncio.wait_for(self.requests.get(), timeout)

    async def run(self, decide: Decide, *, once: bool = False, report: Callable[[str], None] = print) -> None:
        """Show each request, ask `decide`, send the answer; until the connection closes."""
        self.warn = report
        while not self.closed.is_set():
            getter = asyncio.ensure_future(self.requests.get())
            closed = asyncio.ensure_future(self.closed.wait())
            done, _ = await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
            closed.cancel()
            if getter not in done:
                getter.cancel()
                return
            request = getter.result()
            if request["request_id"] in self.resolved or request["expires_at"] <= time.time():
                continue
            choice = await decide(request, self._screen(request))
            if choice.action != "skip":
                try:
                    result = await self.answer(request, choice)
                    report(
                        f"{choice.action}: {short(result.get('status'), 40)} "
                        f"{tx_hash_or_blank(result.get('tx_hash'))}".rstrip()
                    )
                    if (
                        result.get("status") == RequestStatus.FAILED
                    ):  # the signer's words on why, not only "failed"
                        report(
                            "\n".join(
                                block("why it failed", str(result.get("error") or "no reason given"), 600)
                            )
                        )
                    elif result.get("broadcast_unknown"):  # signed, but the node did not take it (or lied)
                        report("\n".join(block("not confirmed sent", str(result["broadcast_unknown"]), 600)))
                except CompanionError as exc:
                    # ours in full; the bridge's words were cut to 200 characters as they arrived
                    report("\n".join(block(f"{choice.action} refused", exc.message, 600)))
                except asyncio.TimeoutError:
                    report(f"{choice.action}: no reply from the bridge within {self.answer_timeout:g} s")
            if once:
                return
