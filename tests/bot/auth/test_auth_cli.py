"""`owlia auth setup | status | logout` end to end against the fake server, through CliRunner."""

from __future__ import annotations

import json
import os
import stat
import threading
import time

from bot.auth.store import ApiKeyEntry, AuthStore, OAuthEntry

ANTHROPIC_KEY = "sk-ant-api03-" + "K" * 60 + "tail"


def stored(home):
    return AuthStore.in_home(home).load()


def test_pkce_login_through_the_cli(cli, home):
    result = cli("setup", "--provider", "anthropic", input=cli.approve_last)
    assert result.exit_code == 0, result.output
    path = home / "auth.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(home).st_mode) == 0o700
    entry = stored(home)["anthropic"]
    assert isinstance(entry, OAuthEntry) and entry.account == "owl@example.com"
    out = result.output
    assert cli.started[-1].url in out  # the authorization URL is printed
    assert f"{entry.access_token[:6]}…{entry.access_token[-4:]}" in out
    for secret in (entry.access_token, entry.refresh_token, cli.started[-1].verifier):
        assert secret not in out
    assert cli.fake.requests_to("/v1/oauth/token")[0].body["code_verifier"] == cli.started[-1].verifier


def test_wrong_state_rejected_through_the_cli(cli, home):
    result = cli(
        "setup",
        "--provider",
        "anthropic",
        input=lambda: cli.approve_last().split("#")[0] + "#not-the-state-we-sent",
    )
    assert result.exit_code == 1
    assert "state mismatch" in result.output
    assert cli.fake.requests_to("/v1/oauth/token") == [] and stored(home) == {}


def test_device_login_through_the_cli(cli, home):
    def user() -> None:
        while not cli.fake.user_codes:
            time.sleep(0.01)
        cli.fake.approve_device(cli.fake.user_codes[0])

    threading.Thread(target=user, daemon=True).start()
    result = cli("setup", "--provider", "openai")
    assert result.exit_code == 0, result.output
    entry = stored(home)["openai"]
    assert cli.fake.user_codes[0] in result.output and f"{cli.fake.url}/codex/device" in result.output
    assert entry.access_token not in result.output and entry.refresh_token not in result.output
    assert "api.openai.com does not accept it" in result.output


def test_api_key_setup_by_prompt_and_stdin(cli, home):
    result = cli("setup", "--provider", "anthropic", "--method", "api-key", input=ANTHROPIC_KEY + "\n")
    assert result.exit_code == 0, result.output
    assert stored(home)["anthropic"] == ApiKeyEntry(key=ANTHROPIC_KEY)
    assert ANTHROPIC_KEY not in result.output and "sk-ant…tail" in result.output

    key = "sk-proj-" + "p" * 50
    result = cli("setup", "--provider", "openai", "--api-key-stdin", input=key + "\n")
    assert result.exit_code == 0, result.output
    assert stored(home)["openai"] == ApiKeyEntry(key=key) and key not in result.output


def test_api_key_format_errors(cli, home):
    result = cli("setup", "--provider", "anthropic", "--api-key-stdin", input="sk-proj-" + "x" * 40)
    assert result.exit_code == 1 and "start with 'sk-ant-'" in result.output
    result = cli("setup", "--provider", "anthropic", "--api-key-stdin", input="sk-ant-oat01-" + "x" * 40)
    assert result.exit_code == 1 and "use --method oauth" in result.output
    result = cli("setup", "--provider", "openai", "--api-key-stdin", input="sk-abc def")
    assert result.exit_code == 1 and "spaces" in result.output
    assert "x" * 40 not in result.output and stored(home) == {}


def test_status_masks_everything(cli, home, monkeypatch):
    now = time.time()
    store = AuthStore.in_home(home)
    access = "sk-ant-oat01-" + "A" * 60 + "ZZZZ"
    store.put(
        "anthropic",
        OAuthEntry(
            access_token=access,
            refresh_token="sk-ant-ort01-" + "R" * 60,
            expires_at=now + 3600,
            account="owl@example.com",
        ),
    )
    store.put("groq", ApiKeyEntry(key="gsk_" + "G" * 40))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-" + "E" * 40)

    result = cli("status")
    assert result.exit_code == 0, result.output
    assert "sk-ant…ZZZZ" in result.output and "owl@example.com" in result.output and "valid" in result.output
    assert "env OPENAI_API_KEY" in result.output
    for secret in ("A" * 60, "R" * 60, "G" * 40, "E" * 40):
        assert secret not in result.output

    data = json.loads(cli("status", "--json").output)
    rows = {row["provider"]: row for row in data["providers"]}
    assert rows["anthropic"]["secret"] == "sk-ant…ZZZZ" and rows["anthropic"]["auto_refresh"] is True
    assert rows["anthropic"]["state"] == "valid" and 3500 < rows["anthropic"]["expires_in"] <= 3600
    assert rows["openai"]["source"] == "env OPENAI_API_KEY" and rows["groq"]["kind"] == "api_key"
    assert "R" * 60 not in json.dumps(data)


def test_logout(cli, home):
    store = AuthStore.in_home(home)
    store.put("anthropic", ApiKeyEntry(key=ANTHROPIC_KEY))
    store.put("openai", OAuthEntry(access_token="a" * 40, refresh_token="r" * 40, expires_at=time.time()))
    assert cli("logout").exit_code == 1
    result = cli("logout", "--provider", "anthropic")
    assert result.exit_code == 0 and "removed anthropic (api_key)" in result.output
    assert list(stored(home)) == ["openai"]
    assert "nothing stored for anthropic" in cli("logout", "--provider", "anthropic").output
    result = cli("logout", "--all")
    assert "removed openai (oauth)" in result.output and stored(home) == {}


def test_loose_permissions_and_corrupt_file_refused(cli, home):
    AuthStore.in_home(home).put("openai", ApiKeyEntry(key="sk-" + "k" * 40))
    os.chmod(home / "auth.json", 0o644)
    result = cli("status")
    assert result.exit_code == 1 and f"chmod 600 {home / 'auth.json'}" in result.output
    assert "k" * 40 not in result.output

    (home / "auth.json").write_text("{not json")
    os.chmod(home / "auth.json", 0o600)
    result = cli("status")
    assert result.exit_code == 1 and "not valid JSON" in result.output
    result = cli("setup", "--provider", "openai", "--api-key-stdin", input="sk-" + "n" * 40)
    assert result.exit_code == 1 and (home / "auth.json").read_text() == "{not json"
