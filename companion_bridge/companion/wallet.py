"""The companion's secrets: the main key (Ethereum V3 keystore, scrypt) and an Ed25519 device key.

The main key never leaves this module as anything but a signed transaction: it is decrypted only
after the user typed the passphrase for one specific request, used once, and dropped. The device
key only proves "this paired companion said so" to the signer; it cannot move funds.

Layout (dir 0700, files 0600): keystore.json, device.key (hex seed), companion.json (public state).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import coincurve
from eth_account import Account
from nacl.signing import SigningKey

from policies.kernel.addresses import to_checksum
from policies.kernel.files import check_private_file, ensure_private_dir, write_private_file
from policies.kernel.passphrase import zeroize
from signer.wire.approval_request import MainTx
from signer.wire.txcodec import Eip1559Tx, address_of, sign_eip1559

KEYSTORE = "keystore.json"
DEVICE_KEY = "device.key"
STATE = "companion.json"
DEFAULT_SCRYPT_N = 2**18  # the geth default; tests pass a small n
MIN_PASSPHRASE = 8


class WalletError(Exception):
    """Worded for the user; never contains key material."""


@dataclass
class CompanionWallet:
    home: Path
    main_address: str  # checksummed
    state: dict[str, Any]

    @classmethod
    def create(
        cls,
        home: Path,
        passphrase: bytearray,
        *,
        private_key: bytes | None = None,
        scrypt_n: int = DEFAULT_SCRYPT_N,
        name: str = "companion",
    ) -> CompanionWallet:
        home = ensure_private_dir(Path(home))
        if (home / KEYSTORE).exists():
            raise WalletError(f"{home / KEYSTORE} exists; refusing to overwrite a main key")
        if len(passphrase) < MIN_PASSPHRASE:
            raise WalletError(f"the passphrase must be at least {MIN_PASSPHRASE} characters")
        secret = bytearray(private_key or secrets.token_bytes(32))
        try:
            keystore = Account.encrypt(
                bytes(secret), bytes(passphrase).decode(), kdf="scrypt", iterations=scrypt_n
            )
        finally:
            zeroize(secret)
        write_private_file(home / KEYSTORE, json.dumps(keystore).encode())
        write_private_file(home / DEVICE_KEY, SigningKey.generate().encode().hex().encode())
        state = {"main_address": to_checksum("0x" + keystore["address"]), "name": name}
        write_private_file(home / STATE, json.dumps(state, indent=2).encode())
        return cls(home, state["main_address"], state)

    @classmethod
    def load(cls, home: Path) -> CompanionWallet:
        home = Path(home)
        for name in (KEYSTORE, DEVICE_KEY, STATE):
            if not (home / name).exists():
                raise WalletError(f"no companion in {home}: run `owlia companion init` first")
            check_private_file(home / name)
        state = json.loads((home / STATE).read_text())
        return cls(home, state["main_address"], state)

    # ---- public state -----------------------------------------------------------------------

    @property
    def device_id(self) -> str | None:
        return self.state.get("device_id")

    def save_state(self, **updates: Any) -> None:
        self.state.update(updates)
        write_private_file(self.home / STATE, json.dumps(self.state, indent=2).encode())

    # ---- the device key ---------------------------------------------------------------------

    def _device_key(self) -> SigningKey:
        return SigningKey(bytes.fromhex((self.home / DEVICE_KEY).read_text().strip()))

    @property
    def device_public_key(self) -> str:
        return self._device_key().verify_key.encode().hex()

    def device_sign(self, message: bytes) -> str:
        return self._device_key().sign(message).signature.hex()

    # ---- the main key -----------------------------------------------------------------------

    def main_key(self, passphrase: bytearray) -> coincurve.PrivateKey:
        """The main key for one Tier 3 act (companion.tier3); the caller drops it right after."""
        keystore = json.loads((self.home / KEYSTORE).read_text())
        try:
            secret = bytearray(Account.decrypt(keystore, bytes(passphrase).decode()))
        except ValueError:
            raise WalletError("wrong passphrase") from None
        try:
            key = coincurve.PrivateKey(bytes(secret))
        finally:
            zeroize(secret)
        if address_of(key) != self.main_address.lower():
            raise WalletError("the keystore does not hold this companion's main account")
        return key

    def sign_transaction(self, tx: MainTx, passphrase: bytearray) -> bytes:
        """Sign exactly the request's transaction fields; nothing is filled in or changed here."""
        key = self.main_key(passphrase)
        if tx["from"].lower() != self.main_address.lower():
            raise WalletError("the request asks another account to sign")
        unsigned = Eip1559Tx(
            chain_id=int(tx["chain_id"]),
            nonce=int(tx["nonce"]),
            max_priority_fee_per_gas=int(tx["max_priority_fee_per_gas"]),
            max_fee_per_gas=int(tx["max_fee_per_gas"]),
            gas=int(tx["gas_limit"]),
            to=tx["to"].lower(),
            value=int(tx["value"]),
            data=bytes.fromhex(tx["data"][2:]),
        )
        return sign_eip1559(unsigned, key).raw
