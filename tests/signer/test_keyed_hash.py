"""`KeyedSha256` is HMAC-SHA256: byte for byte what `hmac.digest` gives, for any key and message.

The audit chain, the row MACs and the table digests of existing homes were computed with
`hmac.digest`; they must verify unchanged."""

from __future__ import annotations

import hmac
import threading

from hypothesis import given, settings, strategies as st

from signer.store.keyed_hash import KeyedSha256


@given(key=st.binary(max_size=200), msg=st.binary(max_size=5000))
@settings(max_examples=1000, deadline=None)
def test_it_is_hmac_sha256_for_any_key_and_message(key, msg):
    assert KeyedSha256(key).digest(msg) == hmac.digest(key, msg, "sha256")
    assert KeyedSha256(bytearray(key)).digest(msg) == hmac.digest(key, msg, "sha256")


def test_the_key_sizes_around_the_block_and_rfc_4231_vectors():
    for size in (0, 1, 31, 32, 63, 64, 65, 128, 131):
        key = bytes(range(size % 256)) * (size // 256 + 1)
        key = key[:size]
        assert KeyedSha256(key).digest(b"x") == hmac.digest(key, b"x", "sha256")
    # RFC 4231 test cases 1 and 6 (a key longer than the block)
    assert KeyedSha256(b"\x0b" * 20).digest(b"Hi There").hex() == (
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    )
    assert KeyedSha256(b"\xaa" * 131).digest(
        b"Test Using Larger Than Block-Size Key - Hash Key First"
    ).hex() == ("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")


def test_one_instance_serves_many_messages_and_threads_alike():
    """The writer thread and the event loop both MAC with the same keys: the states are only copied."""
    mac = KeyedSha256(b"k" * 32)
    messages = [bytes([i]) * (i * 37) for i in range(64)]
    results: dict[int, list[bytes]] = {}

    def work(n: int) -> None:
        results[n] = [mac.digest(m) for m in messages * 20]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = [hmac.digest(b"k" * 32, m, "sha256") for m in messages * 20]
    assert all(r == expected for r in results.values())
