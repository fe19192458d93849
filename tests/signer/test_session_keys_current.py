"""`SessionKeys.current` is kept per chain instead of searched on every call: same answer always.

The reference is the search it replaced (the newest loaded key of the chain, the first of equals in
load order), run over a model of which keys are loaded, after every install, revocation and close.
"""

from __future__ import annotations

import coincurve
from hypothesis import given, settings, strategies as st

from signer.tier2.session_keys import ACTIVE, REVOKED, SessionKeyInfo, SessionKeys

KEY = coincurve.PrivateKey(b"\x11" * 32)

_install = st.tuples(
    st.just("install"), st.integers(0, 5), st.integers(1, 3), st.sampled_from([0.0, 1.0, 2.0, 2.0])
)
_disarm = st.tuples(st.just("disarm"), st.integers(0, 5), st.just(0), st.just(0.0))
_close = st.tuples(st.just("close"), st.just(0), st.just(0), st.just(0.0))


def _searched(loaded: dict[str, SessionKeyInfo], chain_id: int) -> SessionKeyInfo | None:
    candidates = [info for info in loaded.values() if info.chain_id == chain_id]
    return max(candidates, key=lambda i: i.created_at, default=None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_install, _disarm, _close), max_size=30))
def test_current_is_the_newest_loaded_key_of_the_chain_after_every_change(ops):
    keys = SessionKeys(master=None)  # type: ignore[arg-type]  # nothing here seals or opens
    loaded: dict[str, SessionKeyInfo] = {}
    for op, n, chain_id, created in ops:
        key_id = f"sk_{n:016x}"
        if op == "install":
            info = SessionKeyInfo(key_id, chain_id, "0x" + "ab" * 20, created, created + 60, ACTIVE, 1)
            keys.install(info, KEY)
            loaded[key_id] = info
        elif op == "disarm":
            if keys.info(key_id) is None:
                continue
            keys.disarm(key_id, REVOKED)
            loaded.pop(key_id, None)
        else:
            keys.close()
            loaded.clear()
        for chain in (1, 2, 3, 4):
            assert keys.current(chain) is _searched(loaded, chain)


def test_a_revoked_key_is_no_longer_current_at_once():
    keys = SessionKeys(master=None)  # type: ignore[arg-type]
    old = SessionKeyInfo("sk_old", 1, "0x" + "ab" * 20, 1.0, 99.0, ACTIVE, 1)
    new = SessionKeyInfo("sk_new", 1, "0x" + "cd" * 20, 2.0, 99.0, ACTIVE, 1)
    keys.install(old, KEY)
    keys.install(new, KEY)
    assert keys.current(1) is new
    keys.disarm("sk_new", REVOKED)
    assert keys.current(1) is old
    keys.disarm("sk_old", REVOKED)
    assert keys.current(1) is None
