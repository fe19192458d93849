"""The pairing link: everything the companion must learn out of band, never through the bridge.

Two forms carry the same secrets. The web link `https://bridge/app/#v=1&id=…&code=…&signer=…` is
what `owlia companion pair` shows as a QR for a phone's camera: the secrets are in the fragment,
which the browser never sends to the server, and the page that opens is the companion web app.
`owlia companion link` takes either that link or the older `owlia-pair://v1?…`. An optional
`fp=` (sha256 of the bridge's certificate, hex) pins a self-signed certificate: the CLI companion
then checks that fingerprint instead of a certificate authority (a browser cannot: a phone must
trust the certificate, see docs/companion.md).
"""

from __future__ import annotations

import hashlib
import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

from companion_bridge.companion.errors import CompanionError

PAIR_SCHEME = "owlia-pair"
FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")
SIGNER_KEY = re.compile(r"[0-9a-f]{64}")  # the signer's raw Ed25519 public key, hex (signer.tier1.identity)


@dataclass(frozen=True, slots=True)
class PairLink:
    bridge: str
    pairing_id: str
    code: str
    signer_key: str
    fingerprint: str | None = None  # sha256 of the bridge's DER certificate, hex


def pair_uri(bridge_url: str, pairing_id: str, code: str, signer_key: str) -> str:
    """Everything the companion must learn out of band: where, which pairing, its secret, and the
    signer's public key (so nothing the bridge relays later can pass for the signer's)."""
    return f"{PAIR_SCHEME}://v1?bridge={bridge_url}&id={pairing_id}&code={code}&signer={signer_key}"


def pair_link(
    bridge_url: str, pairing_id: str, code: str, signer_key: str, fingerprint: str | None = None
) -> str:
    """The link the phone's camera opens: the web app, secrets in the fragment only."""
    fields = {
        "v": "1",
        "id": pairing_id,
        "code": code.replace("-", "").replace(" ", ""),
        "signer": signer_key,
    }
    if fingerprint:
        fields["fp"] = fingerprint
    return f"{bridge_url.rstrip('/')}/app/#{urlencode(fields)}"


def signer_key_problem(value: object) -> str | None:
    """Why `value` cannot be the signer's identity key, or None. A damaged key (a stray quote from a
    copy-paste, a digit lost) would make every signature check fail: requests dropped, the audit
    witness never kept. So it is refused where it enters, and where it is read back."""
    if not isinstance(value, str):
        return "it is missing"
    if len(value) != 64:
        return f"it has {len(value)} characters, not 64 hex digits"
    if not SIGNER_KEY.fullmatch(value):
        return "it is not 64 lowercase hex digits (a stray quote or space from copying?)"
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # lazy: 6 ms, 6780 KiB

    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(value))
    except ValueError:
        return "it is not an Ed25519 public key"
    return None


def checked_signer_key(value: str) -> str:
    """The pairing link's signer key, or CompanionError saying what is wrong with it."""
    problem = signer_key_problem(value)
    if problem is not None:
        raise CompanionError(
            f"the pairing link's signer key is damaged ({problem}): nothing was paired. Copy the "
            "whole link again from `owlia companion pair`, or scan its QR code"
        )
    return value


def parse_pair_link(uri: str) -> PairLink:
    parsed = urlparse(uri.strip())
    if parsed.scheme == PAIR_SCHEME:
        query = parse_qs(parsed.query)
        if not all(k in query for k in ("bridge", "id", "code", "signer")):
            raise CompanionError("not an owlia pairing code (scan the QR from `owlia companion pair`)")
        return PairLink(
            query["bridge"][0], query["id"][0], query["code"][0], checked_signer_key(query["signer"][0])
        )
    if parsed.scheme in ("https", "http") and parsed.path.rstrip("/") == "/app" and parsed.fragment:
        query = parse_qs(parsed.fragment)
        if query.get("v") != ["1"] or not all(k in query for k in ("id", "code", "signer")):
            raise CompanionError("not an owlia pairing link (scan the QR from `owlia companion pair`)")
        fingerprint = query.get("fp", [None])[0]
        if fingerprint is not None and not FINGERPRINT.fullmatch(fingerprint):
            raise CompanionError("the pairing link's certificate fingerprint is malformed")
        return PairLink(
            f"{parsed.scheme}://{parsed.netloc}",
            query["id"][0],
            query["code"][0],
            checked_signer_key(query["signer"][0]),
            fingerprint,
        )
    raise CompanionError("not an owlia pairing code (scan the QR from `owlia companion pair`)")


def parse_pair_uri(uri: str) -> tuple[str, str, str, str]:
    link = parse_pair_link(uri)
    return link.bridge, link.pairing_id, link.code, link.signer_key


def cert_fingerprint(pem_file: Path) -> str:
    """sha256 over the DER form of the first certificate in a PEM file (what aiohttp pins)."""
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(Path(pem_file).read_text())).hexdigest()


def ssl_for(fingerprint: str | None) -> object:
    """aiohttp's `ssl=`: the system's CAs, or exactly the pinned certificate."""
    if not fingerprint:
        return True
    import aiohttp  # lazy: 156 ms, 16084 KiB

    return aiohttp.Fingerprint(bytes.fromhex(fingerprint))
