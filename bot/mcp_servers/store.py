"""The MCP server registry: `<home>/mcp/servers.json` (0600), written only by `owlia mcp`.

Each server is a declaration (how to start it: a stdio command run in the sandbox, or a
streamable-HTTP URL) plus what the user approved: for each tool its level and a hash of its name,
description and input schema as shown on the approval screen. The agent is offered only approved
tools of enabled servers, with the pinned description and schema, never what the server says now;
a server whose live tool list no longer matches a pin has that tool refused until it is approved
again (a rug pull). No tool the agent can call writes this file.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bot.security.redact import find_secrets
from policies.kernel.locks import locked_beside
from policies.kernel.registry import RegistryCorrupt, read_registry, write_registry
from policies.kernel.text import first_hidden
from skills_runtime.manifest import network_hosts

FILE = "servers.json"
NAME = r"^[a-z][a-z0-9_]{0,23}$"
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
"""What an MCP tool may be called to reach the model as `mcp_<server>_<tool>` (providers allow
`[A-Za-z0-9_-]{1,64}`); a tool named otherwise is shown at approval and never offered."""
Level = Literal["read", "write", "sign"]
MAX_DESCRIPTION = 4000
"""Characters of a tool's description the approval screen shows whole (paged); a longer one is refused."""
MAX_SCHEMA = 20_000
"""Characters of a tool's input schema (as JSON) the approval screen shows whole; a longer one is refused."""


def schema_text(schema: Any) -> str:
    """The input schema as the approval screen shows it (and as its length is counted)."""
    return json.dumps(schema, ensure_ascii=False, sort_keys=True)


def unshowable(description: str | None, schema: Any) -> str | None:
    """Why this tool cannot be approved, or None: the user must be able to read every character that
    is pinned and sent to the model. Text over the limits, or holding a character that does not show
    as itself (an escape on the screen is not something a person reads), is refused, never cut."""
    text, body = description or "", schema_text(schema)
    if len(text) > MAX_DESCRIPTION:
        return (
            f"its description is {len(text)} characters, more than the {MAX_DESCRIPTION} the approval screen "
            "shows whole; ask its author for a shorter one"
        )
    if len(body) > MAX_SCHEMA:
        return (
            f"its input schema is {len(body)} characters of JSON, more than the {MAX_SCHEMA} the approval "
            "screen shows whole; ask its author for a smaller one"
        )
    for part, value in (("description", text), *(("input schema", s) for s in _strings(schema))):
        hidden = first_hidden(value, keep="\n\t")
        if hidden is not None:
            return (
                f"its {part} holds the invisible or control character U+{ord(hidden):04X}, which the model "
                "would read and you could not"
            )
    return None


def _strings(value: Any) -> list[str]:
    """Every key and string in a JSON value (the JSON text escapes control characters; the model gets them raw)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


class McpError(Exception):
    """A server cannot be added, found, approved or loaded; the message is safe to show."""


class ServerDecl(BaseModel):
    """How to reach one server. Only fixed-form fields: nothing here is the server's own text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME)
    transport: Literal["stdio", "http", "sse"]
    """stdio: run in the sandbox; http: streamable HTTP at `url`; sse: the legacy HTTP+SSE transport."""
    command: tuple[str, ...] = ()
    binds: tuple[str, ...] = ()
    """Host paths the server needs, bound read-only at the same path (its venv, node_modules)."""
    env: dict[str, str] = Field(default_factory=dict, max_length=16)
    url: str | None = Field(default=None, max_length=2048)
    sampling: bool = False
    """Answer the server's sampling requests with the bot's model (never with the conversation)."""
    network: tuple[str, ...] = Field(default=(), max_length=16)
    """Hosts a stdio server may reach through the bot's egress proxy (exact, or `*.example.com`)."""
    headers: dict[str, str] = Field(default_factory=dict, max_length=8)
    """A remote server's request headers: header name -> the name of a 0600 file under `<home>/secrets/`
    holding its value (an API key, `Bearer ...`). The value is read at each connection, never stored here."""
    oauth: bool = False
    """Authenticate to a remote server with OAuth 2.1 (`owlia mcp login NAME`; tokens in mcp/oauth/)."""

    @field_validator("headers")
    @classmethod
    def _header_files(cls, value: dict[str, str]) -> dict[str, str]:
        for header, file in value.items():
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]{0,63}", header):
                raise ValueError(f"header name {header!r} must be letters, digits and '-'")
            if header.lower() in (
                "host",
                "content-length",
                "transfer-encoding",
                "connection",
                "mcp-session-id",
            ):
                raise ValueError(f"the {header} header is the transport's own")
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", file):
                raise ValueError(
                    f"{file!r} must be the name of a file in the OwliaBot home's secrets/ folder "
                    "(letters, digits, '.', '_', '-'; no path)"
                )
        return value

    @field_validator("network")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return network_hosts(value)

    @field_validator("command", "binds")
    @classmethod
    def _absolute(cls, value: tuple[str, ...], info: Any) -> tuple[str, ...]:
        paths = value[:1] if info.field_name == "command" else value
        for path in paths:
            if not path.startswith("/") or "\x00" in path or ".." in Path(path).parts:
                raise ValueError(f"{path!r} must be an absolute path without '..'")
        return value

    @field_validator("env")
    @classmethod
    def _plain_env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if not re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", key):
                raise ValueError(f"environment name {key!r} must be [A-Z][A-Z0-9_]*")
            if find_secrets(item) or any(
                w in key for w in ("KEY", "TOKEN", "SECRET", "PASSWORD", "MNEMONIC")
            ):
                raise ValueError(f"{key}: an MCP server never gets secrets")
        return value

    @model_validator(mode="after")
    def _shape(self) -> ServerDecl:
        if self.transport == "stdio" and (not self.command or self.url is not None):
            raise ValueError("a stdio server needs a command and no url")
        if self.transport != "stdio" and (self.url is None or self.command or self.binds):
            raise ValueError("an http server needs a url and no command")
        if self.transport == "stdio" and (self.headers or self.oauth):
            raise ValueError("headers and OAuth are for remote servers (--url)")
        if self.network and self.transport != "stdio":
            raise ValueError("network hosts are for stdio servers (an http server is reached at its url)")
        return self


class PinnedTool(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    level: Level
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    description: str
    input_schema: dict[str, Any]


class PinnedResource(BaseModel):
    """A resource the user approved for the model to read (always the read level)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str
    name: str
    title: str = ""
    description: str = ""
    mime_type: str = ""
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")


class PinnedPrompt(BaseModel):
    """A prompt the user approved for their own use (never offered to the model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str = ""
    description: str = ""
    arguments: tuple[tuple[str, str, bool], ...] = ()
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")


class ServerEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    decl: ServerDecl
    enabled: bool = False
    tools: dict[str, PinnedTool] = Field(default_factory=dict)
    resources: dict[str, PinnedResource] = Field(default_factory=dict)
    """By URI: what the server's `read_resource` tool (`mcp_<server>-resource`) may read."""
    prompts: dict[str, PinnedPrompt] = Field(default_factory=dict)
    added_at: int = 0
    approved_at: int | None = None


def tool_hash(name: str, description: str | None, schema: Any) -> str:
    """What is pinned: the name, the description and the input schema, canonical JSON."""
    body = json.dumps(
        {"name": name, "description": description or "", "input_schema": schema},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def tool_name(server: str, tool: str) -> str:
    return f"mcp_{server}_{tool}"


def resource_tool_name(server: str) -> str:
    """The one tool that reads a server's approved resources. A `-` never occurs in a server name and
    `tool_name` always puts `_` after it, so this name cannot meet any `mcp_<server>_<tool>`."""
    return f"mcp_{server}-resource"


def _digest(kind: str, body: dict[str, Any]) -> str:
    text = json.dumps({"kind": kind, **body}, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def resource_hash(uri: str, name: str, title: str, description: str, mime_type: str) -> str:
    """What is pinned of a resource: every text of it the model or the user reads."""
    return _digest(
        "resource",
        {"uri": uri, "name": name, "title": title, "description": description, "mime_type": mime_type},
    )


def prompt_hash(name: str, title: str, description: str, arguments: Any) -> str:
    return _digest(
        "prompt",
        {"name": name, "title": title, "description": description, "arguments": [list(a) for a in arguments]},
    )


def resource_texts(item: Any) -> dict[str, str]:
    return {
        "URI": item.uri,
        "name": item.name,
        "title": item.title,
        "description": item.description,
        "MIME type": item.mime_type,
    }


def resource_unshowable(item: Any) -> str | None:
    return unshowable_texts(resource_texts(item), {"URI": 2048, "description": MAX_DESCRIPTION})


def pin_resource(item: Any) -> PinnedResource:
    return PinnedResource(
        uri=item.uri,
        name=item.name,
        title=item.title,
        description=item.description,
        mime_type=item.mime_type,
        hash=resource_hash(item.uri, item.name, item.title, item.description, item.mime_type),
    )


def prompt_texts(item: Any) -> dict[str, str]:
    texts = {"name": item.name, "title": item.title, "description": item.description}
    for arg, text, _ in item.arguments:
        texts[f"argument {arg[:40]!r}"] = arg
        texts[f"description of argument {arg[:40]!r}"] = text
    return texts


def prompt_unshowable(item: Any) -> str | None:
    if len(item.arguments) > 32:
        return f"it takes {len(item.arguments)} arguments, more than 32"
    return unshowable_texts(
        prompt_texts(item),
        {
            "description": MAX_DESCRIPTION,
            **{f"description of argument {a[:40]!r}": MAX_DESCRIPTION for a, _, _ in item.arguments},
        },
    )


def pin_prompt(item: Any) -> PinnedPrompt:
    return PinnedPrompt(
        name=item.name,
        title=item.title,
        description=item.description,
        arguments=item.arguments,
        hash=prompt_hash(item.name, item.title, item.description, item.arguments),
    )


MAX_NAME = 200
"""Characters of a resource's or prompt's name, title, URI or argument shown whole."""


def unshowable_texts(texts: dict[str, str], limits: dict[str, int] | None = None) -> str | None:
    """`unshowable` for a resource or prompt: each named text within its limit (MAX_NAME unless told)
    and holding only characters that show as themselves."""
    for part, value in texts.items():
        limit = (limits or {}).get(part, MAX_NAME)
        if len(value) > limit:
            return f"its {part} is {len(value)} characters, more than the {limit} the approval screen shows whole"
        hidden = first_hidden(value, keep="\n\t")
        if hidden is not None:
            return (
                f"its {part} holds the invisible or control character U+{ord(hidden):04X}, which the model "
                "would read and you could not"
            )
    return None


class McpStore:
    def __init__(self, home: Path) -> None:
        self.root = Path(home) / "mcp"
        self.path = self.root / FILE

    def stamp(self) -> tuple[int, int] | None:
        """Changes whenever the file is replaced (the runtime reloads on a new stamp)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_ino)

    def read(self) -> dict[str, ServerEntry]:
        try:
            raw = read_registry(self.path, "servers")
        except RegistryCorrupt as exc:
            raise McpError(
                f"{self.path} is corrupt; refusing to load any MCP server ({exc}). "
                "Nothing was changed: fix it by hand or restore it from a backup"
            ) from exc
        try:
            return {name: ServerEntry.model_validate(item) for name, item in raw.items()}
        except (ValidationError, AttributeError, TypeError) as exc:
            raise McpError(
                f"{self.path} is not valid; refusing to load any MCP server. "
                "Nothing was changed: fix it by hand or restore it from a backup"
            ) from exc

    def _write(self, servers: dict[str, ServerEntry]) -> None:
        write_registry(self.path, "servers", {n: e.model_dump(mode="json") for n, e in servers.items()})

    def entry(self, name: str) -> ServerEntry:
        return self._in(self.read(), name)

    @staticmethod
    def _in(servers: dict[str, ServerEntry], name: str) -> ServerEntry:
        found = servers.get(name)
        if found is None:
            raise McpError(f"no MCP server named {name!r}; see `owlia mcp list`")
        return found

    def add(self, decl: ServerDecl) -> None:
        with locked_beside(self.path):
            servers = self.read()
            if decl.name in servers:
                raise McpError(f"an MCP server named {decl.name!r} exists; remove it first")
            servers[decl.name] = ServerEntry(decl=decl, added_at=int(time.time()))
            self._write(servers)

    def approve(
        self,
        name: str,
        tools: dict[str, PinnedTool],
        resources: dict[str, PinnedResource] | None = None,
        prompts: dict[str, PinnedPrompt] | None = None,
    ) -> None:
        """Pin exactly the tools (and resources, prompts) the user was shown, with the levels they gave;
        enables the server."""
        with locked_beside(self.path):
            servers = self.read()
            entry = self._in(servers, name)
            servers[name] = entry.model_copy(
                update={
                    "tools": tools,
                    "resources": resources or {},
                    "prompts": prompts or {},
                    "enabled": True,
                    "approved_at": int(time.time()),
                }
            )
            self._write(servers)

    def set_enabled(self, name: str, enabled: bool) -> None:
        with locked_beside(self.path):
            servers = self.read()
            entry = self._in(servers, name)
            if enabled and not (entry.tools or entry.resources or entry.prompts):
                raise McpError(f"{name} has nothing approved; run `owlia mcp approve {name}` first")
            servers[name] = entry.model_copy(update={"enabled": enabled})
            self._write(servers)

    def remove(self, name: str) -> None:
        with locked_beside(self.path):
            servers = self.read()
            self._in(servers, name)
            del servers[name]
            self._write(servers)
