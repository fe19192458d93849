"""`owlia companion`: pair, list and revoke devices (signer side); run the reference companion.

`pair`, `list` and `revoke` run as the signer's user (they use the admin token). `init`, `link`,
`run`, `outstanding`, `freeze`, `unfreeze` and `topup` are the companion itself: run them where the
main key lives (a desktop, or a phone's terminal), never on the bot's machine account.
"""

from __future__ import annotations

import getpass
import hmac
import io
import sys
from pathlib import Path
from typing import Optional

import typer

from companion_bridge.companion.bridge_text import block
from policies.kernel.cli import fail, home_of, print_json, run
from policies.kernel.text import visible
from signer.wire.cli import print_reply, signer_call, signer_call_as

app = typer.Typer(help="Tier 1: your companion app and its pairing with the signer.", no_args_is_help=True)

DEFAULT_BRIDGE = "http://127.0.0.1:8765"
RECONNECT_SECONDS = 1.0
EXIT_OUTSTANDING = 3  # `outstanding`: some approval's signed transaction may still be sent by someone else
DIR_OPTION = typer.Option(None, "--dir", help="Companion directory (default: <home>/companion).")
PASS_OPTION = typer.Option(
    None, "--passphrase-file", help="0600 file with the main key's passphrase (else a prompt)."
)


def _dir(ctx: typer.Context, directory: Optional[Path]) -> Path:
    return directory or home_of(ctx) / "companion"


MIN_PASSPHRASE = 8


def _passphrase(file: Optional[Path], prompt: str = "Main key passphrase: ") -> bytearray:
    from policies.kernel.passphrase import PassphraseError, read_passphrase  # lazy: 2 ms, 584 KiB

    if file is not None:
        try:
            return read_passphrase(file=file, prompt=False)
        except PassphraseError as exc:
            fail(str(exc))
    if not sys.stdin.isatty():
        fail("no passphrase: pass --passphrase-file or run on a terminal")
    return bytearray(getpass.getpass(prompt).encode())


def _stopped(message: str) -> None:
    """Exit 1 with a companion error. It may carry the bridge's words: collapsed, capped and wrapped
    under a label (companion.bridge_text), so it cannot fake a row of the companion's own."""
    fail("\n".join(block("the companion stopped", message, 600)))


def _wallet(ctx: typer.Context, directory: Optional[Path]):
    from companion_bridge.companion.wallet import CompanionWallet, WalletError  # lazy: 541 ms, 27240 KiB

    try:
        return CompanionWallet.load(_dir(ctx, directory))
    except (WalletError, PermissionError) as exc:
        fail(str(exc))


# ---- signer side -----------------------------------------------------------------------------


@app.command("pair")
def pair(
    ctx: typer.Context,
    name: str = typer.Option("companion", help="A name for the device."),
    bridge: str = typer.Option(DEFAULT_BRIDGE, help="The bridge URL the companion will reach."),
    png: Optional[Path] = typer.Option(None, help="Also write the QR code as a PNG (0600) here."),
    ttl: int = typer.Option(600, help="Seconds the code stays valid."),
    tls_cert: Optional[Path] = typer.Option(
        None,
        exists=True,
        dir_okay=False,
        help="The bridge's self-signed certificate (PEM): its sha256 goes in the link, and the CLI companion pins it.",
    ),
) -> None:
    """Show a one-time pairing link and QR: the phone's camera opens the web app at the bridge
    (secrets in the link's fragment, never sent to a server); the companion proves the code and
    its device key to the signer."""
    import segno  # lazy: 91 ms, 13496 KiB (4 imports)

    from companion_bridge.companion.pairing import cert_fingerprint, pair_link
    from policies.kernel.files import write_private_file
    from signer.wire.replies import PairBeginReply

    pairing = signer_call_as(
        ctx, PairBeginReply, "companion.pair_begin", {"name": name, "ttl_seconds": ttl}, admin=True
    )
    fingerprint = cert_fingerprint(tls_cert) if tls_cert else None
    uri = pair_link(bridge, pairing.pairing_id, pairing.code, pairing.signer_key, fingerprint)
    qr = segno.make(uri, error="m")
    qr.terminal(compact=True)
    typer.echo(f"pairing code: {pairing.code}   (expires in {ttl} s, single use)")
    typer.echo(
        f"signer identity key: {pairing.signer_key}   (the phone shows its first 16 and last 8 digits)"
    )
    typer.echo(f"open on the phone (camera), or on a desktop: owlia companion link '{uri}'")
    if png is not None:
        buf = io.BytesIO()
        qr.save(buf, kind="png", scale=6)
        write_private_file(png, buf.getvalue())
        typer.echo(f"QR code written to {png}")


@app.command("list")
def list_devices(ctx: typer.Context) -> None:
    """Paired devices: capabilities, last seen, revoked or not."""
    print_reply(signer_call(ctx, "companion.list", admin=True))


@app.command("revoke")
def revoke(ctx: typer.Context, device_id: str) -> None:
    """Revoke a device at once: its answers are refused and its bridge tokens die."""
    print_reply(signer_call(ctx, "companion.revoke", {"device_id": device_id}, admin=True))


# ---- the companion ---------------------------------------------------------------------------


@app.command("init")
def init(
    ctx: typer.Context,
    directory: Optional[Path] = DIR_OPTION,
    passphrase_file: Optional[Path] = PASS_OPTION,
    name: str = typer.Option("companion", help="This device's name."),
    scrypt_n: int = typer.Option(2**18, hidden=True),
) -> None:
    """Create the main key in an encrypted V3 keystore (scrypt) and this device's Ed25519 key."""
    from companion_bridge.companion.wallet import CompanionWallet, WalletError  # lazy: 501 ms, 27196 KiB

    passphrase = _passphrase(passphrase_file, "New main key passphrase: ")
    if passphrase_file is None:  # typed: a typo here would lock the main key away for good
        again = _passphrase(None, "Repeat the passphrase: ")
        if not hmac.compare_digest(bytes(passphrase), bytes(again)):
            fail("the two passphrases differ; nothing was created. Run `owlia companion init` again")
    if len(passphrase) < MIN_PASSPHRASE:
        fail(
            f"the passphrase is shorter than {MIN_PASSPHRASE} characters; nothing was created. It guards the key "
            "that can move all your funds: use a long one (several random words)"
        )
    try:
        wallet = CompanionWallet.create(_dir(ctx, directory), passphrase, scrypt_n=scrypt_n, name=name)
    except WalletError as exc:
        fail(str(exc))
    keystore = wallet.home / "keystore.json"
    if wallet.home.resolve().is_relative_to(home_of(ctx).resolve()):
        typer.secho(
            f"warning: {wallet.home} is inside the OwliaBot home, on the signer's host: whoever steals this "
            "host gets the main key. Only for a dev chain; on a real chain keep the main key on your phone "
            "(docs/self-hosting.md) or as another user on another machine (`owlia security audit`: "
            "OWL-MAIN-001)",
            fg=typer.colors.YELLOW,
            err=True,
        )
    typer.echo(f"main account {wallet.main_address}: fund it for Tier 1 transfers")
    typer.echo(
        f"BACK IT UP NOW: copy {keystore} somewhere off this machine (a USB stick, a password manager) and "
        "keep the passphrase apart from it. Without both, nobody (not OwliaBot, not you) can recover "
        "the main account; with both, anyone can."
    )


@app.command("link")
def link(ctx: typer.Context, uri: str, directory: Optional[Path] = DIR_OPTION) -> None:
    """Pair with the signer using the code or QR from `owlia companion pair`."""
    from companion_bridge.companion.client import (  # lazy: 693 ms, 47512 KiB (2 imports)
        Companion,
        CompanionError,
    )
    from companion_bridge.companion.pairing import parse_pair_link, ssl_for

    wallet = _wallet(ctx, directory)
    try:
        link = parse_pair_link(uri)  # before anything is sent or written
    except CompanionError as exc:
        fail(exc.message)

    async def go() -> dict:
        import aiohttp  # lazy: 125 ms, 15888 KiB

        async with Companion(wallet, link.bridge, ssl=ssl_for(link.fingerprint)) as companion:
            try:
                reply = await companion.pair(link.pairing_id, link.code, link.signer_key)
            except aiohttp.ServerFingerprintMismatch:
                raise CompanionError(
                    "the bridge's certificate is not the one in the pairing link: nothing was "
                    "sent (someone may be in the middle; pair again from the signer's host)"
                ) from None
            except (aiohttp.ClientSSLError, aiohttp.ClientConnectorCertificateError):
                raise CompanionError(
                    "the bridge's certificate is not trusted: use a pairing link with its "
                    "fingerprint (`owlia companion pair --tls-cert CERT`) or a trusted certificate"
                ) from None
            except aiohttp.ClientError as exc:
                raise CompanionError(
                    f"cannot reach the bridge at {link.bridge}: {type(exc).__name__}"
                ) from None
        wallet.save_state(tls_fingerprint=link.fingerprint)
        return reply

    try:
        reply = run(go())
    except CompanionError as exc:
        _stopped(exc.message)
    typer.echo(f"paired as {reply['device']['device_id']}")


def _stored_signer_key_problem(wallet) -> Optional[str]:
    """Why the signer key this companion stored at pairing cannot be used, or None (none stored is
    not a problem here: such a companion can deny, never approve, and says so on each request)."""
    from companion_bridge.companion.pairing import signer_key_problem  # lazy: 7 ms, 2084 KiB

    key = wallet.state.get("signer_key")
    if key is None:
        return None
    problem = signer_key_problem(key)
    return (
        None
        if problem is None
        else (
            f"the signer key stored in {wallet.home / 'companion.json'} is damaged ({problem}): this companion "
            "could verify no request and keep no audit witness. Pair again: `owlia companion pair` on the "
            "signer's host, then `owlia companion link LINK` here"
        )
    )


def _companion(
    ctx: typer.Context, directory: Optional[Path], bridge: Optional[str], *, emergency: bool = False
):
    """The companion, refused loudly if its stored signer key is damaged; an `emergency` (a freeze,
    signed by the device key alone) still goes ahead, with the warning on stderr."""
    from companion_bridge.companion.client import Companion  # lazy: 665 ms, 47496 KiB (2 imports)
    from companion_bridge.companion.pairing import ssl_for

    wallet = _wallet(ctx, directory)
    problem = _stored_signer_key_problem(wallet)
    if problem is not None and not emergency:
        fail(problem)
    if problem is not None:
        typer.echo(f"WARNING: {problem}", err=True)
    return Companion(
        wallet,
        bridge or wallet.state.get("bridge_url") or DEFAULT_BRIDGE,
        ssl=ssl_for(wallet.state.get("tls_fingerprint")),
    )


def prompt_decider(passphrase_file: Optional[Path]):
    """The terminal UI: show everything, then ask; the passphrase is asked only to approve."""
    import asyncio  # lazy: 675 ms, 47432 KiB (3 imports)

    from companion_bridge.companion.client import Choice
    from signer.wire.protocol import ApprovalAction

    async def decide(request: dict, text: str) -> Choice:
        typer.echo(text)
        answer = await asyncio.to_thread(
            typer.prompt, "[a]pprove / [d]eny / [f] deny and FREEZE / [s]kip", default="s"
        )
        keys = {"a": ApprovalAction.APPROVE, "d": ApprovalAction.DENY, "f": ApprovalAction.FREEZE}
        action = keys.get(answer.strip().lower()[:1], "skip")
        if action == ApprovalAction.APPROVE:
            return Choice(action, await asyncio.to_thread(_passphrase, passphrase_file))
        return Choice(action)

    return decide


def scripted_decider(answers: list[str], passphrase_file: Optional[Path]):
    """Non-interactive: answer requests in order from a list (tests, demos)."""
    from companion_bridge.companion.client import Choice  # lazy: 650 ms, 47504 KiB (2 imports)
    from signer.wire.protocol import ApprovalAction

    queue = list(answers)

    async def decide(request: dict, text: str) -> Choice:
        typer.echo(text)
        action = queue.pop(0) if queue else "skip"
        return Choice(action, _passphrase(passphrase_file) if action == ApprovalAction.APPROVE else None)

    return decide


@app.command("run")
def run_companion(
    ctx: typer.Context,
    directory: Optional[Path] = DIR_OPTION,
    bridge: Optional[str] = typer.Option(None, help="Bridge URL (default: the one paired with)."),
    passphrase_file: Optional[Path] = PASS_OPTION,
    answers: Optional[str] = typer.Option(None, help="Scripted answers, e.g. 'approve,deny' (no prompt)."),
    once: bool = typer.Option(False, help="Exit after the first request."),
) -> None:
    """Receive approval requests, show each in full, and answer them."""
    from companion_bridge.companion.client import CompanionError  # lazy: 706 ms, 47416 KiB

    companion = _companion(ctx, directory, bridge)
    decide = (
        scripted_decider([a.strip() for a in answers.split(",") if a.strip()], passphrase_file)
        if answers is not None
        else prompt_decider(passphrase_file)
    )

    def report(line: str) -> None:
        typer.echo(visible(line))

    companion.warn = report  # outstanding approvals are shown from the first connect on

    async def go() -> None:
        import asyncio  # lazy: 132 ms, 15852 KiB (2 imports)

        import aiohttp

        async with companion:
            while True:  # connection tokens are short-lived: log in again when one runs out
                try:
                    await companion.connect()
                except (
                    OSError,
                    aiohttp.ClientError,
                    asyncio.TimeoutError,
                ) as exc:  # the bridge is down or unreachable
                    if once:
                        raise CompanionError(f"could not reach the bridge ({type(exc).__name__})") from None
                    typer.echo(
                        f"could not reach the bridge ({type(exc).__name__}); retrying in "
                        f"{RECONNECT_SECONDS:g} s",
                        err=True,
                    )
                    await asyncio.sleep(RECONNECT_SECONDS)
                    continue
                typer.echo(
                    f"connected to {companion.bridge_url} as {companion.wallet.device_id}; "
                    f"signer {'FROZEN' if companion.state.get('frozen') else 'not frozen'}"
                )
                await companion.run(decide, once=once, report=report)
                if once:
                    return
                typer.echo("bridge connection closed; reconnecting", err=True)
                await asyncio.sleep(RECONNECT_SECONDS)

    try:
        run(go())
    except CompanionError as exc:
        _stopped(exc.message)


@app.command("outstanding")
def outstanding(
    ctx: typer.Context,
    directory: Optional[Path] = DIR_OPTION,
    bridge: Optional[str] = typer.Option(None, help="Bridge URL (default: the one paired with)."),
    offline: bool = typer.Option(False, help="Only read the journal; do not ask the signer."),
) -> None:
    """Approvals you signed whose transaction someone may still send. Exit 0: none; 3: some.

    Reads this companion's journal and, when the bridge is reachable, asks for a nonce quote: only
    one your signer signed settles an entry (its nonce mined), never the bridge's own word.
    """
    import time  # lazy: 711 ms, 47484 KiB (5 imports)

    from companion_bridge.companion.bridge_text import block
    from companion_bridge.companion.client import CompanionError
    from companion_bridge.companion.journal import JournalError
    from companion_bridge.companion.outstanding import settled_line, warning_lines

    companion = _companion(ctx, directory, bridge)

    async def refresh() -> None:
        async with companion:
            await companion.connect()  # checks the journal against a fresh signed quote

    if not offline:
        try:
            run(refresh())
        except Exception as exc:  # noqa: BLE001 - whatever the bridge did, the journal is still there to read
            message = exc.message if isinstance(exc, CompanionError) else str(exc) or type(exc).__name__
            for line in block(
                "could not reach the bridge, so below is the journal as last checked; why", message
            ):
                typer.echo(line, err=True)
    try:
        entries = companion.journal.entries()
    except (JournalError, PermissionError) as exc:
        fail(visible(str(exc)))
    left = [e for e in entries if not e.settled]
    quoted = companion.watch.last_quote
    if quoted is not None:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(quoted))
        typer.echo(f"checked against your signer's nonce quote of {when}")
    elif left:
        typer.echo("no nonce quote signed by your signer this time: the journal as last checked")
    for entry in [e for e in entries if e.settled][-5:]:
        typer.echo(settled_line(entry))
    for entry in left:
        typer.echo("\n".join(warning_lines(entry)))
    typer.echo(f"{len(left)} outstanding, {len(entries) - len(left)} settled in {companion.journal.path}")
    raise typer.Exit(EXIT_OUTSTANDING if left else 0)


def _action(ctx: typer.Context, directory: Optional[Path], bridge: Optional[str], name: str, *args) -> None:
    from companion_bridge.companion.client import CompanionError  # lazy: 710 ms, 47444 KiB

    companion = _companion(ctx, directory, bridge, emergency=name == "freeze" and args == ("freeze",))
    companion.warn = lambda line: typer.echo(visible(line), err=True)  # outstanding approvals; stdout is JSON

    async def go() -> dict:
        import asyncio  # lazy: 142 ms, 15868 KiB (2 imports)

        import aiohttp

        async with companion:
            try:
                await companion.connect()
            except (
                OSError,
                aiohttp.ClientError,
                asyncio.TimeoutError,
            ) as exc:  # the bridge is down or unreachable
                hint = (
                    " To freeze now without the bridge, run `owlia signer freeze` on the signer's host."
                    if name == "freeze" and args == ("freeze",)
                    else " Check that `owlia bridge serve` runs."
                )
                raise CompanionError(
                    f"could not reach the bridge at {companion.bridge_url} ({type(exc).__name__}).{hint}"
                ) from None
            return await getattr(companion, name)(*args)

    try:
        print_json(run(go()))
    except CompanionError as exc:
        _stopped(exc.message)


@app.command("freeze")
def freeze(ctx: typer.Context, directory: Optional[Path] = DIR_OPTION, bridge: Optional[str] = None) -> None:
    """Kill switch: the signer stops all Tier 2 signing and revokes every session key."""
    _action(ctx, directory, bridge, "freeze", "freeze")


@app.command("unfreeze")
def unfreeze(
    ctx: typer.Context, directory: Optional[Path] = DIR_OPTION, bridge: Optional[str] = None
) -> None:
    """Lift a freeze (session keys stay revoked: create new ones)."""
    _action(ctx, directory, bridge, "freeze", "unfreeze")


@app.command("topup")
def topup(
    ctx: typer.Context,
    key_id: str,
    amount: Optional[int] = typer.Option(None, help="wei (default: to the cap)"),
    directory: Optional[Path] = DIR_OPTION,
    bridge: Optional[str] = None,
) -> None:
    """Ask to fund a session key from the main account, up to its cap; approve it like any request."""
    _action(ctx, directory, bridge, "topup", key_id, amount)
