"""The bridge's Web Push store and the web app's serving rules, without a browser."""

from __future__ import annotations

import stat

import pytest
from hypothesis import given, settings, strategies as st

from companion_bridge import webapp
from companion_bridge.push import MAX_PER_DEVICE, Pusher, Subscription, endpoint_allowed
from companion_bridge.server import BridgeConfigError, BridgeOptions, build

KEYS = {"p256dh": "B" + "A" * 86, "auth": "A" * 22}


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://push.example.com/x",  # clear text to a remote host
        "http://10.0.0.5/x",
        "http://169.254.169.254/latest/meta-data",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https:///nohost",
        "ftp://push.example.com/x",
        "ws://127.0.0.1/x",
        "",
    ],
)
def test_a_device_cannot_point_the_bridge_at_a_non_push_address(tmp_path, endpoint):
    pusher = Pusher(tmp_path)
    with pytest.raises(ValueError, match="https"):
        pusher.subscribe("dev_" + "0" * 16, Subscription(endpoint=endpoint, keys=KEYS))
    assert not endpoint_allowed(endpoint, True)  # nor with loopback http allowed (tests)


def test_loopback_http_only_when_allowed_and_files_are_private(tmp_path):
    assert not endpoint_allowed("http://127.0.0.1:9/x", False) and endpoint_allowed(
        "http://127.0.0.1:9/x", True
    )
    assert not endpoint_allowed("http://127.0.0.2.nip.io/x", True)
    pusher = Pusher(tmp_path)
    pusher.subscribe("dev_" + "1" * 16, Subscription(endpoint="https://push.example/a", keys=KEYS))
    for name in ("push.json", "vapid.pem"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
    public = pusher.public_key()
    assert Pusher(tmp_path).public_key() == public  # the key survives a restart
    pusher.forget_devices(set())
    assert pusher.subscriptions() == {}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["dev_" + c * 16 for c in "abc"]), st.integers(0, 9)), max_size=40))
def test_a_device_keeps_at_most_a_few_subscriptions_and_the_newest_win(tmp_path_factory, adds):
    pusher = Pusher(tmp_path_factory.mktemp("push"))
    for device, n in adds:
        pusher.subscribe(device, Subscription(endpoint=f"https://push.example/{n}", keys=KEYS))
    subs = pusher.subscriptions()
    for device in {d for d, _ in adds}:
        endpoints = [s["endpoint"] for s in subs[device]]
        assert len(endpoints) <= MAX_PER_DEVICE and len(set(endpoints)) == len(endpoints)
        newest: list[str] = []
        for d, n in reversed(adds):
            url = f"https://push.example/{n}"
            if d == device and url not in newest:
                newest.append(url)
        assert endpoints == list(reversed(newest[:MAX_PER_DEVICE]))


def test_the_bridge_refuses_to_start_without_the_web_app_and_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setattr(webapp, "BUNDLE", tmp_path / "missing.js")
    options = BridgeOptions(home=tmp_path / "b", signer_socket=tmp_path / "s.sock", signer_token="t")
    with pytest.raises(BridgeConfigError, match="npm run build:companion"):
        build(options)
    with pytest.raises(BridgeConfigError, match="npm run build:companion"):
        options.check()  # what `owlia bridge serve` calls first, to print it without a traceback


def test_the_push_contact_must_be_a_url_a_push_service_accepts(tmp_path):
    options = BridgeOptions(
        home=tmp_path, signer_socket=tmp_path / "s.sock", signer_token="t", push_subject="me"
    )
    with pytest.raises(BridgeConfigError, match="mailto"):
        options.check()
