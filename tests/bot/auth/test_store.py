"""auth.json: private modes, strict parsing, refusal of loose permissions, no secrets in errors."""

from __future__ import annotations

import json
import os
import stat

import pytest

from bot.auth.errors import AuthStoreError
from bot.auth.store import ApiKeyEntry, AuthStore, OAuthEntry

ACCESS = "sk-ant-oat01-" + "A" * 40
REFRESH = "sk-ant-ort01-" + "B" * 40


def test_round_trip_is_0600_in_0700_dir(tmp_path):
    home = tmp_path / "new-home"  # does not exist yet: created 0700
    store = AuthStore.in_home(home)
    entry = OAuthEntry(
        access_token=ACCESS,
        refresh_token=REFRESH,
        expires_at=1234.5,
        scopes=("user:inference",),
        account="owl@example.com",
    )
    store.put("anthropic", entry)
    store.put("groq", ApiKeyEntry(key="gsk_" + "x" * 30))
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    assert store.load() == {"anthropic": entry, "groq": ApiKeyEntry(key="gsk_" + "x" * 30)}
    assert json.loads(store.path.read_text())["version"] == 1


def test_entries_do_not_repr_secrets():
    entry = OAuthEntry(access_token=ACCESS, refresh_token=REFRESH, expires_at=1.0)
    assert ACCESS not in repr(entry) and REFRESH not in repr(entry)
    assert "x" * 30 not in repr(ApiKeyEntry(key="gsk_" + "x" * 30))


def test_missing_file_is_empty(home):
    assert AuthStore.in_home(home).load() == {}


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_loose_permissions_refused_with_fix(home, mode):
    store = AuthStore.in_home(home)
    store.put("openai", ApiKeyEntry(key="sk-" + "k" * 40))
    os.chmod(store.path, mode)
    with pytest.raises(AuthStoreError) as err:
        store.load()
    assert f"chmod 600 {store.path}" in str(err.value)
    assert "k" * 40 not in str(err.value)


def test_symlink_refused(home, tmp_path):
    real = tmp_path / "elsewhere.json"
    real.write_text('{"version": 1, "providers": {}}')
    os.chmod(real, 0o600)
    (home / "auth.json").symlink_to(real)
    with pytest.raises(AuthStoreError, match="symlink"):
        AuthStore.in_home(home).load()


def test_corrupt_file_is_an_error_and_left_alone(home):
    path = home / "auth.json"
    path.write_text('{"version": 1, "providers": {"anthropic": ')
    os.chmod(path, 0o600)
    store = AuthStore(path)
    with pytest.raises(AuthStoreError, match="not valid JSON"):
        store.load()
    with pytest.raises(AuthStoreError):
        store.put("openai", ApiKeyEntry(key="sk-" + "k" * 40))  # never silently replaced
    assert path.read_text() == '{"version": 1, "providers": {"anthropic": '


def test_schema_errors_do_not_echo_secrets(home):
    path = home / "auth.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "providers": {
                    "anthropic": {
                        "kind": "oauth",
                        "access_token": ACCESS,
                        "refresh_token": REFRESH,
                        "expires_at": "soon",
                    }
                },
            }
        )
    )
    os.chmod(path, 0o600)
    with pytest.raises(AuthStoreError) as err:
        AuthStore(path).load()
    message = str(err.value)
    assert "expires_at" in message
    assert ACCESS not in message and REFRESH not in message


def test_newer_version_refused(home):
    path = home / "auth.json"
    path.write_text('{"version": 7, "providers": {}}')
    os.chmod(path, 0o600)
    with pytest.raises(AuthStoreError, match="newer OwliaBot"):
        AuthStore(path).load()


def test_put_replaces_and_remove(home):
    store = AuthStore.in_home(home)
    entry = OAuthEntry(access_token=ACCESS, refresh_token=REFRESH, expires_at=1.0)
    store.put("anthropic", entry)
    newer = OAuthEntry(access_token=ACCESS + "2", refresh_token=REFRESH + "2", expires_at=2.0)
    store.put("anthropic", newer)
    assert store.get("anthropic") == newer
    assert store.remove(["openai"]) == {}
    assert store.remove(None) == {"anthropic": newer}
    assert store.load() == {}


def test_the_file_schema_is_built_on_the_first_read_not_on_import():
    """`owlia start` with its key in the environment never reads auth.json before ready, so it never
    pays for these validators (about 20 ms); a file that is read is checked as strictly as ever."""
    import subprocess
    import sys

    code = (
        "import bot.auth.store as s; "
        "print(any(m.__pydantic_complete__ for m in (s._FileModel, s._OAuthModel, s._ApiKeyModel)))"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "False"
    )
