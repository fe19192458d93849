"""Bridge login challenges: stateless to hand out, bound to one device, short-lived, single use."""

from __future__ import annotations

from companion_bridge.challenges import Challenges

DEVICE, OTHER = "dev_" + "1" * 16, "dev_" + "2" * 16


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_challenge_works_once_for_its_device_within_its_lifetime() -> None:
    clock = Clock()
    challenges = Challenges(ttl=60.0, clock=clock)
    nonce = challenges.issue(DEVICE)
    assert challenges.usable(DEVICE, nonce)
    assert not challenges.usable(OTHER, nonce)  # bound to the device it was asked for
    challenges.use(nonce)
    assert not challenges.usable(DEVICE, nonce)  # single use
    late = challenges.issue(DEVICE)
    clock.now += 61
    assert not challenges.usable(DEVICE, late)


def test_a_tampered_or_foreign_challenge_is_refused() -> None:
    challenges = Challenges()
    nonce = challenges.issue(DEVICE)
    later = nonce[:16] + f"{int(9e12):012x}" + nonce[28:]  # a changed issue time breaks the MAC
    flipped = nonce[:-1] + ("0" if nonce[-1] != "0" else "1")
    for bad in (later, flipped, "0" * 64, nonce[:32]):
        assert not challenges.usable(DEVICE, bad)
    assert not Challenges().usable(DEVICE, nonce)  # another process (a restarted bridge) has another key


def test_strangers_asking_for_challenges_cannot_lock_the_user_out() -> None:
    challenges = Challenges()
    for i in range(50_000):  # the old table refused everyone after 10 000 outstanding challenges
        challenges.issue(f"dev_{i:016x}")
    assert challenges._used == {}  # handing challenges out stores nothing
    assert challenges.usable(DEVICE, challenges.issue(DEVICE))


def test_memory_of_used_challenges_forgets_expired_ones() -> None:
    clock = Clock()
    challenges = Challenges(ttl=60.0, clock=clock)
    for _ in range(3000):
        challenges.use(challenges.issue(DEVICE))
        clock.now += 0.1
    assert len(challenges._used) <= 1024 + 1  # about 61 s worth at ten logins a second, then pruned
