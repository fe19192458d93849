import json
import os
import stat

import pytest

from policies.kernel.files import (
    PermissionProblem,
    check_private_file,
    ensure_private_dir,
    write_private_file,
)
from policies.kernel.passphrase import PassphraseError, read_passphrase, zeroize
from signer.keystore import KeystoreError, create_keystore, unlock

N = 2**10


def test_create_and_unlock_round_trip(tmp_path):
    path = create_keystore(tmp_path, bytearray(b"correct horse"), scrypt_n=N)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with unlock(tmp_path, bytearray(b"correct horse")) as master:
        blob = master.seal(b"session secret", aad=b"ctx-1")
        assert master.open(blob, aad=b"ctx-1") == bytearray(b"session secret")
        with pytest.raises(KeystoreError, match="authentication"):
            master.open(blob, aad=b"ctx-2")  # a sealed record cannot be moved to another context
    with pytest.raises(KeystoreError, match="wiped"):
        master.seal(b"x", aad=b"")


def test_wrong_passphrase_and_no_secret_in_file(tmp_path):
    create_keystore(tmp_path, bytearray(b"correct horse"), scrypt_n=N)
    with pytest.raises(KeystoreError, match="wrong passphrase"):
        unlock(tmp_path, bytearray(b"correct horsf"))
    assert b"correct horse" not in (tmp_path / "keystore.json").read_bytes()


def test_refuses_overwrite_short_passphrase_weak_params(tmp_path):
    create_keystore(tmp_path, bytearray(b"correct horse"), scrypt_n=N)
    with pytest.raises(KeystoreError, match="already exists"):
        create_keystore(tmp_path, bytearray(b"another one!"), scrypt_n=N)
    with pytest.raises(KeystoreError, match="at least 8"):
        create_keystore(tmp_path / "b", bytearray(b"short"), scrypt_n=N)
    with pytest.raises(KeystoreError, match="power of two"):
        create_keystore(tmp_path / "c", bytearray(b"long enough"), scrypt_n=1000)


def test_tampered_kdf_params_are_detected(tmp_path):
    path = create_keystore(tmp_path, bytearray(b"correct horse"), scrypt_n=2**11)
    doc = json.loads(path.read_text())
    doc["params"]["n"] = 2**10  # a downgrade attempt: the params are authenticated
    path.write_text(json.dumps(doc))
    with pytest.raises(KeystoreError):
        unlock(tmp_path, bytearray(b"correct horse"))


def test_unlock_refuses_group_readable_keystore(tmp_path):
    path = create_keystore(tmp_path, bytearray(b"correct horse"), scrypt_n=N)
    path.chmod(0o640)
    with pytest.raises(PermissionProblem, match="chmod 600"):
        unlock(tmp_path, bytearray(b"correct horse"))


def test_read_passphrase_sources(tmp_path, monkeypatch):
    secret_file = tmp_path / "pass"
    write_private_file(secret_file, b"from-file-secret\nignored\n")
    monkeypatch.setenv("OWLIA_SIGNER_PASSPHRASE", "from-env-secret")
    assert read_passphrase(file=secret_file, prompt=False) == bytearray(b"from-file-secret")
    assert read_passphrase(prompt=False) == bytearray(b"from-env-secret")
    monkeypatch.delenv("OWLIA_SIGNER_PASSPHRASE")
    with pytest.raises(PassphraseError, match="no passphrase"):
        read_passphrase(prompt=False)
    for mode in (0o644, 0o640):  # group-readable too: the bot's user is in the signer's socket group
        secret_file.chmod(mode)
        with pytest.raises(PassphraseError, match="readable by other users or the group"):
            read_passphrase(file=secret_file, prompt=False)
    secret_file.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(secret_file)
    with pytest.raises(PassphraseError, match="cannot read passphrase file"):  # never through a symlink
        read_passphrase(file=link, prompt=False)


def test_zeroize_overwrites():
    buf = bytearray(b"secret")
    zeroize(buf)
    assert buf == bytearray(6)


def test_private_dir_and_file_modes(tmp_path):
    home = ensure_private_dir(tmp_path / "a" / "home")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    home.chmod(0o755)
    ensure_private_dir(home)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    f = home / "secret"
    write_private_file(f, b"x")
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    check_private_file(f)
    link = home / "link"
    os.symlink(f, link)
    with pytest.raises(PermissionProblem, match="symlink"):
        check_private_file(link)
    f.chmod(0o604)
    with pytest.raises(PermissionProblem):
        check_private_file(f)
