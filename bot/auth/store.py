"""`<home>/auth.json`: the stored logins and API keys, one entry per provider.

The file holds live credentials, so it is written atomically with mode 0600 inside a 0700 home,
and read only if it is a regular file we own that nobody else can read: a file someone else could
read is a leaked login, and we would rather stop than keep using it silently. A corrupt file is an
error too; replacing it would throw away a refresh token that cannot be recovered.

Read-modify-write cycles hold an flock on `.auth.json.lock` so the CLI and a running bot cannot
overwrite each other's rotated refresh token; a token refresh holds the same lock across its network
call (`locked_async`), so two processes never spend one rotating refresh token twice.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.auth.errors import AuthStoreError
from policies.kernel.files import PermissionProblem, write_private_file
from policies.kernel.locks import async_file_lock, file_lock, lock_path_for

STORE_VERSION = 1
FILE_NAME = "auth.json"


@dataclass(frozen=True)
class OAuthEntry:
    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    expires_at: float  # epoch seconds
    scopes: tuple[str, ...] = ()
    account: str | None = None
    kind: Literal["oauth"] = "oauth"


@dataclass(frozen=True)
class ApiKeyEntry:
    key: str = field(repr=False)
    kind: Literal["api_key"] = "api_key"


Entry = Union[OAuthEntry, ApiKeyEntry]


# --- on-disk schema (pydantic: this is the boundary) -------------------------------------------
# defer_build: the validators are built when an auth.json is first read, not on import; with the
# key in the environment `owlia start` never builds them on its way to ready.


class _OAuthModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["oauth"]
    access_token: str = Field(min_length=1)
    refresh_token: str = Field(min_length=1)
    expires_at: float
    scopes: list[str] = []
    account: str | None = None


class _ApiKeyModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["api_key"]
    key: str = Field(min_length=1)


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    version: int
    providers: dict[str, Annotated[Union[_OAuthModel, _ApiKeyModel], Field(discriminator="kind")]] = {}


def _to_entry(model: _OAuthModel | _ApiKeyModel) -> Entry:
    if isinstance(model, _ApiKeyModel):
        return ApiKeyEntry(key=model.key)
    return OAuthEntry(
        access_token=model.access_token,
        refresh_token=model.refresh_token,
        expires_at=model.expires_at,
        scopes=tuple(model.scopes),
        account=model.account,
    )


def _to_json(entry: Entry) -> dict:
    if isinstance(entry, ApiKeyEntry):
        return {"kind": "api_key", "key": entry.key}
    return {
        "kind": "oauth",
        "access_token": entry.access_token,
        "refresh_token": entry.refresh_token,
        "expires_at": entry.expires_at,
        "scopes": list(entry.scopes),
        "account": entry.account,
    }


def _describe(exc: ValidationError) -> str:
    """Where the file is wrong, without pydantic's `input_value=` (which would print the secret)."""
    first = exc.errors(include_input=False, include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    return f"{where}: {first['msg']}"


class AuthStore:
    """Reads and writes one auth.json. Missing file = no entries; everything else is strict."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def in_home(cls, home: Path) -> AuthStore:
        return cls(Path(home) / FILE_NAME)

    # -- reading --

    def _read_private(self) -> bytes | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if self.path.is_symlink():
                raise AuthStoreError(f"{self.path} is a symlink; it must be a regular file") from None
            raise AuthStoreError(f"cannot read {self.path}: {exc.strerror}") from None
        info = os.fstat(fd)  # checked on the open file: no swap between check and read
        if not stat.S_ISREG(info.st_mode):  # before fdopen, which refuses a directory with a bare OSError
            os.close(fd)
            raise AuthStoreError(
                f"{self.path} is not a regular file; move it aside, then run `owlia auth setup`"
            )
        with os.fdopen(fd, "rb") as handle:
            if info.st_uid != os.getuid():
                raise AuthStoreError(
                    f"{self.path} belongs to uid {info.st_uid}, not to you ({os.getuid()}); "
                    "refusing to use login tokens another user controls"
                )
            mode = stat.S_IMODE(info.st_mode)
            if mode & 0o077:
                raise AuthStoreError(
                    f"{self.path} has mode {mode:04o}, so other users can read your login "
                    f"tokens; run `chmod 600 {self.path}` (and consider `owlia auth logout "
                    "--all` then setup again if the machine is shared)"
                )
            return handle.read()

    def load(self) -> dict[str, Entry]:
        raw = self._read_private()
        if raw is None:
            return {}
        fix = "fix it or move it aside, then run `owlia auth setup`"
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            where = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
            raise AuthStoreError(f"{self.path} is not valid JSON{where}; {fix}") from None
        version = data.get("version") if isinstance(data, dict) else None
        if isinstance(version, int) and version > STORE_VERSION:
            raise AuthStoreError(
                f"{self.path} was written by a newer OwliaBot (version {version}); upgrade OwliaBot to use it"
            )
        try:
            parsed = _FileModel.model_validate(data)
        except ValidationError as exc:
            raise AuthStoreError(f"{self.path} is not a valid auth file ({_describe(exc)}); {fix}") from None
        if parsed.version != STORE_VERSION:
            raise AuthStoreError(f"{self.path} has unknown version {parsed.version}; {fix}")
        return {name: _to_entry(model) for name, model in parsed.providers.items()}

    def get(self, provider: str) -> Entry | None:
        return self.load().get(provider)

    # -- writing --

    @property
    def _lock_path(self) -> Path:
        try:
            return lock_path_for(self.path)
        except PermissionProblem as exc:
            raise AuthStoreError(str(exc)) from None

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive inter-process lock for a read-modify-write (not re-entrant)."""
        with file_lock(self._lock_path):
            yield

    @asynccontextmanager
    async def locked_async(self) -> AsyncIterator[None]:
        """The same lock, held by a coroutine across awaits; use `put_locked` inside it, not `put`."""
        async with async_file_lock(self._lock_path):
            yield

    def _write(self, entries: dict[str, Entry]) -> None:
        providers = {name: _to_json(entry) for name, entry in sorted(entries.items())}
        doc = {"version": STORE_VERSION, "providers": providers}
        write_private_file(self.path, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))

    def put(self, provider: str, entry: Entry) -> None:
        with self.locked():
            self.put_locked(provider, entry)

    def put_locked(self, provider: str, entry: Entry) -> None:
        """`put` for a caller that already holds the lock (`locked_async`)."""
        entries = self.load()
        entries[provider] = entry
        self._write(entries)

    def remove(self, providers: list[str] | None = None) -> dict[str, Entry]:
        """Delete the named entries (all if None); return what was removed."""
        with self.locked():
            entries = self.load()
            names = list(entries) if providers is None else [p for p in providers if p in entries]
            removed = {name: entries.pop(name) for name in names}
            if removed:
                self._write(entries)
            return removed
