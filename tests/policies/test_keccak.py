"""Keccak-256 through pycryptodome's C functions directly (ctypes) agrees with its public API, and with
the published vectors (the empty string, an ERC-20 selector)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import given, strategies as st

from policies.kernel import keccak
from policies.kernel.keccak import keccak256


def test_the_direct_path_is_the_one_in_use():
    # if this fails after a pycryptodome upgrade, keccak256 still works (public API), only slower and heavier
    keccak256(b"bind")
    assert keccak._impl is not keccak._public and keccak._impl is not keccak._bind


def test_hashing_loads_neither_cffi_nor_pycparser():
    """The direct path is ctypes on pycryptodome's library: cffi's run-time C parser (about 3 MB)
    stays out of every process that hashes (the signer, the bot, `owlia sign send`)."""
    probe = (
        "import sys; from policies.kernel.keccak import keccak256; keccak256(b'x'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cffi', 'pycparser', 'Crypto')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout
    assert out.strip() == "[]"


def test_known_vectors():
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert keccak256(b"transfer(address,uint256)")[:4].hex() == "a9059cbb"


@given(st.binary(max_size=2000))
def test_the_direct_path_agrees_with_the_public_api(data):
    expected = keccak._public(data)
    assert keccak256(data) == expected
    assert keccak256(bytearray(data)) == expected
    assert keccak256(memoryview(data)) == expected


def test_threads_hashing_at_once_each_get_their_own_digest():
    """Sponge states are pooled and reused: threads hashing at the same time (ctypes lets go of the
    GIL inside each C call) must never share one."""
    import random
    import threading

    inputs = [random.Random(seed).randbytes(seed % 300) for seed in range(400)]
    expected = [keccak._public(data) for data in inputs]
    wrong: list[int] = []

    def work(offset: int) -> None:
        for round_ in range(20):
            for i in range(offset, len(inputs), 3):
                if keccak256(inputs[i]) != expected[i]:
                    wrong.append(i)

    threads = [threading.Thread(target=work, args=(n % 3,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_binding_that_gives_a_wrong_answer_is_not_used(monkeypatch):
    """pycryptodome's private C functions are bound with prototypes declared by hand: a release that
    changed them must not hash addresses wrongly. The known answers are checked at bind; a wrong
    direct binding falls back to the public API."""
    monkeypatch.setattr(keccak, "_direct", lambda: lambda data: bytes(32))  # a binding gone wrong
    monkeypatch.setattr(keccak, "_impl", keccak._bind)
    assert keccak256(b"abc").hex() == "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"
    assert keccak._impl is keccak._public


def test_no_binding_with_the_known_answers_refuses_to_hash(monkeypatch):
    import pytest

    monkeypatch.setattr(keccak, "_direct", lambda: None)
    monkeypatch.setattr(keccak, "_public", lambda data: b"\x01" * 32)  # a broken install
    monkeypatch.setattr(keccak, "_impl", keccak._bind)
    with pytest.raises(keccak.KeccakMismatch, match="known answers"):
        keccak256(b"abc")
    assert keccak._impl is keccak._bind  # nothing bound: the next hash checks again


def test_the_known_answers_hold_for_the_bound_function():
    keccak256(b"bind")
    assert keccak._answers_right(keccak._impl)
