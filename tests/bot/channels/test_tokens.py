"""Bot tokens come from the environment or a private file, never config.yaml; unsafe files are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.channels.tokens import TokenError, load_token, token_path
from bot.config import DiscordSettings, TelegramSettings

CHANNELS = [
    ("telegram", TelegramSettings(token_env="OWLIA_TEST_TG")),
    ("discord", DiscordSettings(token_env="OWLIA_TEST_DC")),
]


def write_token(home: Path, name: str, text: str, mode: int = 0o600) -> Path:
    (home / "secrets").mkdir(mode=0o700, exist_ok=True)
    path = token_path(home, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, text.encode())
    os.close(fd)
    os.chmod(path, mode)
    return path


@pytest.mark.parametrize("name,settings", CHANNELS)
def test_env_first_then_private_file_else_none(tmp_path, monkeypatch, name, settings) -> None:
    monkeypatch.delenv(settings.token_env, raising=False)
    assert load_token(tmp_path, settings, name) is None
    write_token(tmp_path, name, "from-file\n")
    assert load_token(tmp_path, settings, name) == "from-file"
    monkeypatch.setenv(settings.token_env, " from-env ")
    assert load_token(tmp_path, settings, name) == "from-env"


@pytest.mark.parametrize("name,settings", CHANNELS)
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660])
def test_a_token_file_others_can_read_is_refused_without_showing_it(
    tmp_path, monkeypatch, name, settings, mode
) -> None:
    monkeypatch.delenv(settings.token_env, raising=False)
    write_token(tmp_path, name, "123:leaky-secret", mode)
    with pytest.raises(TokenError) as info:
        load_token(tmp_path, settings, name)
    assert "chmod 600" in str(info.value) and "leaky-secret" not in str(info.value)


@pytest.mark.parametrize("name,settings", CHANNELS)
def test_symlinked_or_empty_token_files_are_refused(tmp_path, monkeypatch, name, settings) -> None:
    monkeypatch.delenv(settings.token_env, raising=False)
    target = write_token(tmp_path, "elsewhere", "token")
    token_path(tmp_path, name).symlink_to(target)
    with pytest.raises(TokenError, match="symlink"):
        load_token(tmp_path, settings, name)
    token_path(tmp_path, name).unlink()
    write_token(tmp_path, name, "  \n")
    with pytest.raises(TokenError, match="empty"):
        load_token(tmp_path, settings, name)
