"""The signer's master key, sealed at rest by the user's passphrase.

`keystore.json` holds a random 256-bit master key encrypted with AES-256-GCM under a key derived
by scrypt from the passphrase. The KDF parameters are bound into the GCM associated data, so an
attacker who can edit the file cannot quietly weaken them. The master key then seals everything
else the signer keeps secret (session keys) with its own AES-GCM and a per-record context.

Secrets are held in bytearrays and overwritten when done: Python cannot promise no copy exists,
but nothing here keeps one longer than it must.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from policies.kernel.files import check_private_file, write_private_file
from policies.kernel.passphrase import PassphraseError, zeroize

KEYSTORE_FILE = "keystore.json"
MIN_PASSPHRASE_LENGTH = 8
DEFAULT_SCRYPT_N = 2**15
_MIN_SCRYPT_N = 2**10  # tests use small n; anything lower is refused even from a file we wrote
_VERSION = 1
_NONCE = 12


class KeystoreError(PassphraseError):
    """The keystore cannot be created or unlocked; the message never contains secret material."""


class MasterKey:
    """An unlocked master key. Use as a context manager or call `zeroize()` when done."""

    __slots__ = ("_key", "_aead")

    def __init__(self, key: bytearray) -> None:
        if len(key) != 32:
            raise KeystoreError("master key must be 32 bytes")
        self._key = key
        self._aead: AESGCM | None = AESGCM(bytes(key))

    def __repr__(self) -> str:
        return "MasterKey(<sealed>)" if self._aead is None else "MasterKey(<unlocked>)"

    def _cipher(self) -> AESGCM:
        if self._aead is None:
            raise KeystoreError("the master key has been wiped")
        return self._aead

    def seal(self, plaintext: bytes | bytearray, *, aad: bytes) -> bytes:
        nonce = secrets.token_bytes(_NONCE)
        return nonce + self._cipher().encrypt(nonce, bytes(plaintext), aad)

    def open(self, blob: bytes, *, aad: bytes) -> bytearray:
        if len(blob) < _NONCE + 16:
            raise KeystoreError("sealed record is truncated")
        try:
            return bytearray(self._cipher().decrypt(blob[:_NONCE], blob[_NONCE:], aad))
        except InvalidTag:
            raise KeystoreError("sealed record failed authentication (tampered or wrong context)") from None

    def derive(self, label: bytes) -> bytearray:
        """A 32-byte key for one purpose (HMAC-SHA256 keyed by the master key): same master, same key."""
        self._cipher()  # refuses once wiped
        return bytearray(hmac.new(bytes(self._key), label, hashlib.sha256).digest())

    def hkdf(self, purpose: bytes) -> bytes:
        """A 32-byte key for one purpose, HKDF-SHA256 with `purpose` as its info: a key derived for
        one purpose (the row MACs, the audit chain, the anchor) says nothing about another."""
        self._cipher()  # refuses once wiped
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"owliabot-master-v1", info=purpose).derive(
            bytes(self._key)
        )

    def zeroize(self) -> None:
        zeroize(self._key)
        self._aead = None

    def __enter__(self) -> MasterKey:
        return self

    def __exit__(self, *exc: object) -> None:
        self.zeroize()


def _kek(passphrase: bytearray, salt: bytes, n: int, r: int, p: int) -> bytearray:
    return bytearray(Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(bytes(passphrase)))


def _aad(params: dict[str, str | int]) -> bytes:
    return b"owliabot-keystore-v1:" + json.dumps(params, sort_keys=True, separators=(",", ":")).encode()


def create_keystore(home: Path, passphrase: bytearray, *, scrypt_n: int = DEFAULT_SCRYPT_N) -> Path:
    """Write a new keystore; refuses to overwrite one (that would orphan every sealed key)."""
    path = Path(home) / KEYSTORE_FILE
    if path.exists():
        raise KeystoreError(f"{path} already exists; refusing to overwrite an existing keystore")
    if len(passphrase) < MIN_PASSPHRASE_LENGTH:
        raise KeystoreError(f"the passphrase must be at least {MIN_PASSPHRASE_LENGTH} characters")
    if scrypt_n < _MIN_SCRYPT_N or scrypt_n & (scrypt_n - 1):
        raise KeystoreError(f"scrypt n must be a power of two >= {_MIN_SCRYPT_N}")
    salt = secrets.token_hex(16)
    params: dict[str, str | int] = {"kdf": "scrypt", "n": scrypt_n, "r": 8, "p": 1, "salt": salt}
    master = bytearray(secrets.token_bytes(32))
    kek = _kek(passphrase, bytes.fromhex(salt), scrypt_n, 8, 1)
    try:
        nonce = secrets.token_bytes(_NONCE)
        wrapped = AESGCM(bytes(kek)).encrypt(nonce, bytes(master), _aad(params))
    finally:
        zeroize(kek)
        zeroize(master)
    document = {
        "version": _VERSION,
        "params": params,
        "cipher": "aes-256-gcm",
        "nonce": nonce.hex(),
        "ciphertext": wrapped.hex(),
        "created_at": int(time.time()),
    }
    write_private_file(path, json.dumps(document, indent=2).encode())
    return path


def unlock(home: Path, passphrase: bytearray) -> MasterKey:
    path = Path(home) / KEYSTORE_FILE
    check_private_file(path)
    try:
        document = json.loads(path.read_text())
        params = document["params"]
        if (
            document["version"] != _VERSION
            or document["cipher"] != "aes-256-gcm"
            or params["kdf"] != "scrypt"
        ):
            raise KeystoreError(f"{path}: unsupported keystore format")
        n, r, p = int(params["n"]), int(params["r"]), int(params["p"])
        salt, nonce, wrapped = (
            bytes.fromhex(params["salt"]),
            bytes.fromhex(document["nonce"]),
            bytes.fromhex(document["ciphertext"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise KeystoreError(f"{path} is not a valid keystore ({type(exc).__name__})") from None
    if n < _MIN_SCRYPT_N or r < 1 or p < 1:
        raise KeystoreError(f"{path}: scrypt parameters are too weak; refusing to unlock")
    kek = _kek(passphrase, salt, n, r, p)
    try:
        master = bytearray(AESGCM(bytes(kek)).decrypt(nonce, wrapped, _aad(params)))
    except InvalidTag:
        raise KeystoreError("wrong passphrase (or the keystore was modified)") from None
    finally:
        zeroize(kek)
    return MasterKey(master)
