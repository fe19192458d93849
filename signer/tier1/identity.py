"""The signer's identity toward its companions: an Ed25519 key derived from the master key.

The bridge relays everything between the signer and the companion, so a compromised bridge could
rewrite an approval request (say, the recipient) and the companion would sign that with the main
key; the signer would refuse the answer, but the bridge holds a valid signed transaction and can
broadcast it itself. So the signer signs every request it delivers and every nonce it quotes, and
the companion signs nothing it cannot check against this key. Its public half reaches the
companion out of band, in the pairing link or QR shown on the signer's own host, never through
the bridge.
"""

from __future__ import annotations

from collections.abc import Mapping

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from policies.kernel.passphrase import zeroize
from signer.keystore import MasterKey
from signer.wire.messages import signed_message

_LABEL = b"owliabot companion identity v1"


class SignerIdentity:
    def __init__(self, master: MasterKey) -> None:
        seed = master.derive(_LABEL)
        try:
            self._key = Ed25519PrivateKey.from_private_bytes(bytes(seed))
        finally:
            zeroize(seed)
        self.public_key = (
            self._key.public_key().public_bytes_raw().hex()
        )  # raw 32 bytes, without the serialization package

    def sign(self, domain: str, body: Mapping[str, object]) -> str:
        return self._key.sign(signed_message(domain, body)).hex()
