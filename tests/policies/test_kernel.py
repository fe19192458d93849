"""The shared kernel: one copy of private files, locks and EIP-55, checked against attacks and eth-utils."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time

import pytest
from eth_utils import to_checksum_address
from hypothesis import given, settings, strategies as st

from policies.kernel.addresses import ADDRESS_RE, case_ok, checksum_ok, is_address, to_checksum
from policies.kernel.files import (
    PathNotAllowed,
    PermissionProblem,
    check_private_file,
    ensure_private_dir,
    write_new_private,
    write_private_file,
)
from policies.kernel.locks import file_lock
from policies.kernel.registry import RegistryCorrupt, read_registry, write_registry

HEX40 = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)


def test_private_dir_refuses_a_symlink_pointing_elsewhere(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    link = tmp_path / "home"
    link.symlink_to(elsewhere)
    with pytest.raises(PathNotAllowed, match="symlink"):
        ensure_private_dir(link)
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755  # not tightened through the link either


def test_private_dir_is_created_0700_and_tightened(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    assert stat.S_IMODE(ensure_private_dir(loose).stat().st_mode) == 0o700
    assert stat.S_IMODE(ensure_private_dir(tmp_path / "a" / "b").stat().st_mode) == 0o700


def test_private_file_write_never_follows_a_planted_temp_symlink(tmp_path):
    target = tmp_path / "victim"
    target.write_bytes(b"untouched")
    key = tmp_path / "key.json"
    (tmp_path / f".key.json.{os.getpid()}.tmp").symlink_to(target)
    with pytest.raises(OSError):
        write_private_file(key, b"secret")
    assert target.read_bytes() == b"untouched" and not key.exists()


def test_private_file_replaces_a_symlink_instead_of_writing_through_it(tmp_path):
    target = tmp_path / "victim"
    target.write_bytes(b"untouched")
    key = tmp_path / "key.json"
    key.symlink_to(target)
    write_private_file(key, b"secret")
    assert target.read_bytes() == b"untouched"
    assert not key.is_symlink() and key.read_bytes() == b"secret"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    check_private_file(key)


def test_check_private_file_refuses_symlink_and_loose_modes(tmp_path):
    real = tmp_path / "real"
    write_private_file(real, b"x")
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(PathNotAllowed):
        check_private_file(link)
    os.chmod(real, 0o640)
    with pytest.raises(PermissionProblem, match="chmod 600"):
        check_private_file(real)


def test_write_new_private_keeps_what_is_there(tmp_path):
    path = tmp_path / "note"
    assert write_new_private(path, "first") and not write_new_private(path, "second")
    assert path.read_text() == "first" and stat.S_IMODE(path.stat().st_mode) == 0o600
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    assert not write_new_private(dangling, "x") and not (tmp_path / "nowhere").exists()


def test_file_lock_serializes_and_refuses_a_symlinked_lock(tmp_path):
    lock = tmp_path / ".state.lock"
    order: list[str] = []

    def second() -> None:
        with file_lock(lock):
            order.append("second")

    with file_lock(lock):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.2)  # room for a lock that did not hold to let the other thread in: no event to wait on
        order.append("first")
    thread.join(5)
    assert order == ["first", "second"]
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    evil = tmp_path / ".evil.lock"
    evil.symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        with file_lock(evil):
            pass


@given(HEX40)
def test_to_checksum_agrees_with_eth_utils(body):
    address = "0x" + body
    assert to_checksum(address) == to_checksum_address(address)
    assert to_checksum(address.upper().replace("0X", "0x")) == to_checksum_address(address)
    assert checksum_ok(to_checksum(address)) and case_ok(to_checksum(address))
    assert case_ok(address) and is_address(address)


@given(HEX40, st.integers(min_value=0, max_value=39))
def test_a_flipped_case_breaks_the_checksum(body, index):
    good = to_checksum("0x" + body)[2:]
    if not good[index].isalpha():
        return  # digits have no case to flip
    flipped = good[:index] + good[index].swapcase() + good[index + 1 :]
    if flipped in (flipped.lower(), flipped.upper()):
        return  # uniform case carries no checksum
    assert not checksum_ok("0x" + flipped) and not case_ok("0x" + flipped)


@given(st.text(max_size=50))
def test_is_address_only_for_forty_hex_digits(value):
    assert is_address(value) == (value.startswith("0x") and ADDRESS_RE.fullmatch(value) is not None)
    assert not is_address(None) and not is_address("0x" + "a" * 39) and not is_address("0x" + "a" * 41)


ENTRIES = st.dictionaries(
    st.text(min_size=1, max_size=12),
    st.dictionaries(
        st.text(max_size=8),
        st.one_of(st.integers(), st.text(max_size=20), st.booleans(), st.none()),
        max_size=4,
    ),
    max_size=6,
)


@settings(deadline=None)  # each example fsyncs a file and its directory
@given(ENTRIES)
def test_registry_reads_back_what_it_wrote(tmp_path_factory, entries):
    path = tmp_path_factory.mktemp("reg") / "sub" / "registry.json"
    write_registry(path, "skills", entries)
    assert read_registry(path, "skills") == entries
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text())["version"] == 1


def test_registry_absent_is_empty_and_a_broken_one_is_refused(tmp_path):
    path = tmp_path / "registry.json"
    assert read_registry(path, "servers") == {}
    for body in (b"{not json", b"\xff\xfe{}", b"[1, 2]", b'{"servers": [1]}', b'"servers"'):
        path.write_bytes(body)
        with pytest.raises(RegistryCorrupt, match="registry.json"):
            read_registry(path, "servers")
    path.write_bytes(b'{"version": 1}')
    assert read_registry(path, "servers") == {}


def test_registry_write_replaces_a_planted_symlink_instead_of_writing_through_it(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text("keep")
    path = tmp_path / "reg" / "registry.json"
    path.parent.mkdir(mode=0o700)
    path.symlink_to(target)
    write_registry(path, "skills", {"a": {"enabled": True}})
    assert target.read_text() == "keep" and not path.is_symlink()


def test_keccak_binds_pycryptodome_only_on_the_first_hash():
    code = (
        "from policies.kernel import keccak; from policies.kernel.addresses import to_checksum; "
        "before = keccak._impl is keccak._bind; "
        "print(before, to_checksum('0x' + 'ab' * 20), keccak._impl is keccak._bind)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    assert out == ["True", to_checksum_address("0x" + "ab" * 20), "False"]
