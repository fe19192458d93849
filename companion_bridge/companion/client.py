"""The reference companion: pairs, logs in to the bridge, receives requests, answers them.

It trusts the bridge for nothing: the request hash it signs over is recomputed from the request
it received, so a bridge that rewrites a request makes the signer refuse the answer; the
transaction it signs is exactly the request's `tx`, checked to come from its own main account.
`decide` is the UI: a terminal prompt in `owlia companion run`, a script in the tests.
Every approval it signs is journaled first and watched until a signed nonce quote shows its
nonce used (companion.watch): a bridge that drops an approval keeps a transaction it could send.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlparse

import aiohttp

from companion_bridge.app import auth_message
from companion_bridge.companion.errors import CompanionError  # defined here before; still importable from here
from companion_bridge.companion.journal import Entry, Journal
from companion_bridge.companion.quotes import quoted_nonce  # likewise
from companion_bridge.companion.render import render_request
from companion_bridge.companion.wallet import CompanionWallet
from companion_bridge.companion.watch import Watch
from policies import safejson
from signer.approval_request import request_hash
from signer.devices import (
    APPROVAL_DOMAIN,
    FREEZE_DOMAIN,
    PAIR_DOMAIN,
    TOPUP_DOMAIN,
    answer_body,
    freeze_body,
    pair_body,
    pairing_mac,
    signed_message,
    topup_body,
)
from signer.identity import REQUEST_DOMAIN, signed_by
from signer.keystore import zeroize
from signer.txcodec import keccak256

PAIR_SCHEME = "owlia-pair"


@dataclass
class Choice:
    """What the user decided for one request. `passphrase` is wiped after use."""

    action: str  # approve | deny | freeze | skip
    passphrase: bytearray | None = None
    note: str | None = None


Decide = Callable[[dict[str, Any], str], Awaitable[Choice]]


def pair_uri(bridge_url: str, pairing_id: str, code: str, signer_key: str) -> str:
    """Everything the companion must learn out of band: where, which pairing, its secret, and the
    signer's public key (so nothing the bridge relays later can pass for the signer's)."""
    return f"{PAIR_SCHEME}://v1?bridge={bridge_url}&id={pairing_id}&code={code}&signer={signer_key}"


def parse_pair_uri(uri: str) -> tuple[str, str, str, str]:
    parsed = urlparse(uri)
    query = parse_qs(parsed.query)
    if parsed.scheme != PAIR_SCHEME or not all(k in query for k in ("bridge", "id", "code", "signer")):
        raise CompanionError("not an owlia pairing code (scan the QR from `owlia companion pair`)")
    return query["bridge"][0], query["id"][0], query["code"][0], query["signer"][0]


def unsigned(request: dict[str, Any]) -> dict[str, Any]:
    """The request as the signer hashed it: without the signature that travels with it."""
    return {k: v for k, v in request.items() if k != "signer_sig"}


class Companion:
    def __init__(self, wallet: CompanionWallet, bridge_url: str, *, ssl: Any = True) -> None:
        self.wallet = wallet
        self.bridge_url = bridge_url.rstrip("/")
        self.ssl = ssl
        self.state: dict[str, Any] = {}
        self.requests: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.resolved: set[str] = set()
        self.forged: list[str] = []  # ids of requests dropped because the signer did not sign them
        self.warn: Callable[[str], None] = lambda text: None  # `run` points this at the user's screen
        self.watch = Watch(wallet, self.call, lambda line: self.warn(line))  # approvals it signed
        self.answer_timeout = 30.0
        self._checks: set[asyncio.Task] = set()
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task | None = None
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
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30),
                                               connector=aiohttp.TCPConnector(force_close=True))
        return self._http

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        async with self._session().post(self.bridge_url + path, json=body, ssl=self.ssl) as resp:
            data = await resp.json(content_type=None)
            if resp.status != 200:
                raise CompanionError(str(data.get("detail", data)) if isinstance(data, dict) else str(data),
                                     resp.status)
            return data

    # ---- pairing and login --------------------------------------------------------------------

    async def pair(self, pairing_id: str, code: str, signer_key: str | None = None) -> dict[str, Any]:
        """Prove the code (HMAC: the code itself never crosses the bridge) and the device key.
        `signer_key` comes from the pairing link; without it this companion can deny but never approve."""
        wallet = self.wallet
        ts, nonce = time.time(), secrets.token_hex(32)
        body = pair_body(pairing_id, wallet.device_public_key, wallet.state.get("name", "companion"),
                         wallet.main_address, ts, nonce)
        message = signed_message(PAIR_DOMAIN, body)
        reply = await self._post("/v1/pair", {**body, "main_address": wallet.main_address,
                                              "signature": wallet.device_sign(message),
                                              "mac": pairing_mac(code, message)})
        wallet.save_state(device_id=reply["device"]["device_id"], bridge_url=self.bridge_url, signer_key=signer_key)
        return reply

    async def login(self) -> str:
        device_id = self._device_id()
        challenge = await self._post("/v1/auth/challenge", {"device_id": device_id})
        ts = time.time()
        signature = self.wallet.device_sign(auth_message(device_id, challenge["aud"], challenge["nonce"], ts))
        reply = await self._post("/v1/auth/token", {"device_id": device_id, "nonce": challenge["nonce"], "ts": ts,
                                                    "signature": signature})
        return reply["token"]

    async def connect(self, token: str | None = None) -> None:
        token = token or await self.login()
        ws_url = self.bridge_url.replace("http", "ws", 1) + "/v1/ws"
        self._ws = await self._session().ws_connect(ws_url, ssl=self.ssl, heartbeat=20)
        await self._ws.send_str(json.dumps({"type": "hello", "token": token}))
        first = await self._ws.receive(timeout=10)
        if first.type != aiohttp.WSMsgType.TEXT:
            raise CompanionError(f"the bridge refused the connection ({self._ws.close_code})", self._ws.close_code)
        welcome = safejson.loads(first.data)
        self.state = welcome.get("state", {})
        self.closed.clear()
        self._reader = asyncio.create_task(self._read())
        await self.check_outstanding()

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for msg in self._ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    break
                data = safejson.loads(msg.data)
                kind = data.get("type")
                if kind in ("request", "requests"):
                    for request in [data["request"]] if kind == "request" else data["requests"]:
                        self._receive(request)
                elif kind == "reply":
                    future = self._replies.pop(data.get("id"), None)
                    if future is not None and not future.done():
                        future.set_result(data)
                elif kind == "state":
                    self.state = data["state"]
                    task = asyncio.create_task(self.check_outstanding())  # not here: its reply comes here
                    self._checks.add(task)
                    task.add_done_callback(self._checks.discard)
                elif kind == "resolved":
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

    async def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
        if self._ws is None or self._ws.closed:
            raise CompanionError("not connected to the bridge")
        req_id = next(self._ids)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._replies[req_id] = future
        await self._ws.send_str(json.dumps({"type": "call", "id": req_id, "method": method, "params": params}))
        try:
            reply = await asyncio.wait_for(future, timeout)
        finally:
            self._replies.pop(req_id, None)
        if not reply["ok"]:
            raise CompanionError(reply["error"]["message"], reply["error"].get("code"))
        return reply["result"]

    async def close(self) -> None:
        for task in list(self._checks):
            task.cancel()
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

    def _receive(self, request: dict[str, Any]) -> None:
        """Queue a request only if the signer signed it: a rewritten one is never shown."""
        try:
            self.verified_hash(request)
        except CompanionError as exc:
            raw_id = str(request.get("request_id", "?")) if isinstance(request, dict) else "?"
            request_id = re.sub(r"[^A-Za-z0-9_-]", "?", raw_id[:40])  # the bridge wrote it: no escape codes
            self.forged.append(request_id)
            self.warn(f"WARNING: dropped request {request_id}: {exc}")
            return
        self.requests.put_nowait(request)

    def verified_hash(self, request: dict[str, Any]) -> str:
        """The request's hash, after checking the signer's signature over it with the key from the
        pairing link. Anything else may have been written by the bridge: nothing is signed for it."""
        key = self.wallet.state.get("signer_key")
        if not key:
            raise CompanionError("this companion has no signer key (pair again with the full link or QR): "
                                 "it can deny, never approve")
        digest = request_hash(unsigned(request))
        if not signed_by(key, REQUEST_DOMAIN, {"request_hash": digest}, request.get("signer_sig")):
            raise CompanionError("this request is not signed by your signer (the bridge may be compromised): "
                                 "nothing was signed")
        return digest

    def build_answer(self, request: dict[str, Any], choice: Choice, nonce: int | None = None) -> dict[str, Any]:
        """The answer params for `approvals.answer`; the hash is ours, not the bridge's. An approval
        needs the signer's signature on the request; `nonce` replaces the request's when the main
        account has sent something since it was escalated."""
        digest = self.verified_hash(request) if choice.action == "approve" else request_hash(unsigned(request))
        raw, tx_hash = b"", ""
        if choice.action == "approve" and request["kind"] == "policy":
            if choice.passphrase is not None:
                zeroize(choice.passphrase)  # a policy approval is signed by the device key alone
        elif choice.action == "approve":
            if request.get("tx") is None:
                raise CompanionError("this request has no transaction to sign; deny it")
            assert choice.passphrase is not None
            tx = request["tx"] if nonce is None else {**request["tx"], "nonce": nonce}
            try:
                self.watch.check_room()
                raw = self.wallet.sign_transaction(tx, choice.passphrase)
            finally:
                zeroize(choice.passphrase)
            tx_hash = self.watch.signed(request, tx, raw)  # journaled before it can leave
        device_id = self._device_id()
        message = signed_message(APPROVAL_DOMAIN, answer_body(request["request_id"], digest, choice.action,
                                                              request["expires_at"], device_id, tx_hash))
        params: dict[str, Any] = {"request_id": request["request_id"], "request_hash": digest, "device_id": device_id,
                                  "action": choice.action, "expires_at": request["expires_at"],
                                  "signature": self.wallet.device_sign(message)}
        if raw:
            params["raw_tx"] = "0x" + raw.hex()
        if choice.note:
            params["note"] = choice.note
        return params

    async def answer(self, request: dict[str, Any], choice: Choice) -> dict[str, Any]:
        """Send the answer. For an approval, whatever happens, check the journal afterwards: an
        error or silence may mean the bridge kept the signed transaction, and even a "signed" reply
        is the bridge's word until a signed quote shows the nonce used."""
        nonce = None
        if choice.action == "approve" and request.get("tx") is not None:
            nonce = await self.next_nonce(request)
        params = self.build_answer(request, choice, nonce)
        tx_hash = "0x" + keccak256(bytes.fromhex(params["raw_tx"][2:])).hex() if "raw_tx" in params else ""
        try:
            result = await self.call("approvals.answer", params, timeout=self.answer_timeout)
        except (CompanionError, asyncio.TimeoutError) as exc:
            if tx_hash:
                await self.watch.answered(tx_hash, f"error: {exc.message}" if isinstance(exc, CompanionError)
                                          else f"no reply within {self.answer_timeout:g} s")
            raise
        if tx_hash:
            await self.watch.answered(tx_hash, f"{result.get('status')} {result.get('tx_hash', '')}".strip())
        return result

    async def next_nonce(self, request: dict[str, Any]) -> int | None:
        """The main account's next nonce as the signer quotes it now (None: keep the request's)."""
        state = await self.call("approvals.state")
        self.watch.settle(state)
        return quoted_nonce(state, request, self.wallet.state.get("signer_key"))

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
            self.state = await self.call("approvals.state")
            self.watch.settle(self.state)
            freeze_id = self.state.get("freeze_id", "")
        message = signed_message(FREEZE_DOMAIN, freeze_body(device_id, action, freeze_id, ts))
        self.state = await self.call("approvals.freeze", {"device_id": device_id, "action": action,
                                                          "freeze_id": freeze_id, "ts": ts,
                                                          "signature": self.wallet.device_sign(message)})
        return self.state

    async def topup(self, key_id: str, amount: int | None = None) -> dict[str, Any]:
        device_id, ts = self._device_id(), time.time()
        message = signed_message(TOPUP_DOMAIN, topup_body(device_id, key_id, amount, ts))
        params: dict[str, Any] = {"device_id": device_id, "key_id": key_id, "ts": ts,
                                  "signature": self.wallet.device_sign(message)}
        if amount is not None:
            params["amount"] = str(amount)
        return await self.call("approvals.topup", params)

    async def next_request(self, timeout: float | None = None) -> dict[str, Any]:
        return await asyncio.wait_for(self.requests.get(), timeout)

    async def run(self, decide: Decide, *, once: bool = False,
                  report: Callable[[str], None] = print) -> None:
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
            choice = await decide(request, render_request(request))
            if choice.action != "skip":
                try:
                    result = await self.answer(request, choice)
                    report(f"{choice.action}: {result['status']} {result.get('tx_hash', '')}".rstrip())
                except CompanionError as exc:
                    report(f"{choice.action} refused: {exc.message}")
                except asyncio.TimeoutError:
                    report(f"{choice.action}: no reply from the bridge within {self.answer_timeout:g} s")
            if once:
                return
