"""The pairing link: everything the companion must learn out of band, never through the bridge."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from companion_bridge.companion.errors import CompanionError

PAIR_SCHEME = "owlia-pair"


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
