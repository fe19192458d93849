"""Fixtures for the auth tests: a live fake OAuth server, a private home, and the `owlia auth` CLI."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import pytest
import typer
from click.testing import CliRunner  # typer's CliRunner only takes str/bytes input, not a stream

from bot.auth.anthropic_oauth import AnthropicOAuth
from bot.auth.openai_device import OpenAIDeviceLogin
from bot.cli import auth_cmd
from tests.fakes.oauth_server import FakeOAuthServer


@pytest.fixture()
def fake():
    with FakeOAuthServer() as server:
        yield server


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    path = tmp_path / "owlhome"
    path.mkdir(mode=0o700)
    return path


def anthropic_for(fake: FakeOAuthServer, **kwargs) -> AnthropicOAuth:
    kwargs.setdefault("token_url", fake.anthropic_token_url)
    return AnthropicOAuth(authorize_url=fake.anthropic_authorize_url, **kwargs)


def openai_for(fake: FakeOAuthServer, **kwargs) -> OpenAIDeviceLogin:
    return OpenAIDeviceLogin(issuer=fake.url, **kwargs)


def _root() -> typer.Typer:
    root = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @root.callback()
    def main(home: Optional[Path] = typer.Option(None, "--home")) -> None:
        """Test root, shaped like bot.cli.app's."""

    root.add_typer(auth_cmd.app, name="auth")
    return root


class LazyInput(io.RawIOBase):
    """Stdin whose first line is computed only when the command reads it (after it printed the URL)."""

    def __init__(self, produce: Callable[[], str]) -> None:
        self._produce = produce
        self._data: bytes | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - io signature
        if len(buffer) == 0:
            return 0
        if self._data is None:
            self._data = (self._produce() + "\n").encode()
        n = min(len(buffer), len(self._data))
        buffer[:n] = self._data[:n]
        self._data = self._data[n:]
        return n


class Cli:
    def __init__(self, home: Path, fake: FakeOAuthServer, monkeypatch: pytest.MonkeyPatch) -> None:
        self.home = home
        self.fake = fake
        self.app = typer.main.get_command(_root())
        self.runner = CliRunner()
        self.started: list = []  # AuthorizationRequests the command made, to play the user's part
        monkeypatch.setattr(auth_cmd, "anthropic_client", self._anthropic)
        monkeypatch.setattr(auth_cmd, "openai_client", lambda: openai_for(fake))

    def _anthropic(self) -> AnthropicOAuth:
        client = anthropic_for(self.fake)
        start = client.start

        def recording_start():
            request = start()
            self.started.append(request)
            return request

        client.start = recording_start  # type: ignore[method-assign]
        return client

    def approve_last(self) -> str:
        """The user opens the URL the command printed and approves: returns the `CODE#STATE` shown."""
        return self.fake.approve_url(self.started[-1].url)

    def __call__(self, *args: str, input=None):  # noqa: ANN001
        stream = io.BufferedReader(LazyInput(input)) if callable(input) else input
        return self.runner.invoke(self.app, ["--home", str(self.home), "auth", *args], input=stream)


@pytest.fixture()
def cli(home: Path, fake: FakeOAuthServer, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return Cli(home, fake, monkeypatch)
