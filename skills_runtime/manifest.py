"""SKILL.md: what a skill says it is and what it may do, checked before anything runs.

The YAML front matter is the whole contract: the tools the model may call (with a small JSON-schema
subset for their arguments and a tier each), the hosts `core.fetch` may reach, whether `core.chain`
may read the chain, and resource wishes. Anything outside the subset is refused at install time
rather than half understood; the approved form is pinned with the tree hash.

Every string in it is shown to the user when they approve the skill, or to the model, so none may
hold a control, bidi or invisible character (descriptions may span lines). Each tool's argument
model is built here too, so a schema pydantic cannot build is refused at install, not at startup.
YAML anchors and aliases are refused: no manifest needs them, and a few hundred bytes of nested
aliases expand into billions of nodes for anything that walks the parsed tree.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from policies.kernel.files import PathNotAllowed, read_regular_text
from policies.kernel.text import display_safe, display_safe_lines
from skills_runtime.arguments import args_model
from skills_runtime.names import SKILL_TOOL_PREFIX

MAX_MANIFEST_BYTES = 64 * 1024
NAME = r"^[a-z][a-z0-9_]{0,23}$"
"""Skill names: short enough that `skill_<skill>_<tool>` stays within the 64 characters LLM APIs allow."""
TOOL_NAME = r"^[a-z][a-z0-9_]{0,31}$"
MAX_ENUM_VALUES = 32
MAX_VALUE_CHARS = 64
"""An enum value or a default string: the model reads them in the schema, so the user reads them too."""
ShortValue = Annotated[str, Field(max_length=MAX_VALUE_CHARS)] | int
_HOST = re.compile(r"^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


class ManifestError(ValueError):
    """SKILL.md is missing, malformed or asks for something unsupported."""


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors (`&a`) and aliases (`*a`) before composing any node.

    PyYAML shares an aliased node instead of copying it, so the load itself is cheap, but every walk
    of the result (the hidden-character check, pydantic) visits each use: ten levels of ten aliases
    are 10**10 strings from 380 bytes. Refusing them here keeps the cost linear in the file."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # PyYAML's stubs leave the composer untyped
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            line = event.start_mark.line + 2 if event.start_mark is not None else "?"  # after the opening ---
            raise ManifestError(
                f"SKILL.md front matter uses a YAML anchor or alias (SKILL.md line {line}); "
                "write the values out"
            )
        return super().compose_node(parent, index)


def _load_yaml(text: str) -> Any:
    loader = _NoAliasLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def tool_name(skill: str, tool: str) -> str:
    """The name the model calls: `skill_<skill>_<tool>`. Not unique by construction (skill `gas` with
    tool `tracker_price` and skill `gas_tracker` with tool `price` meet), so install and load refuse
    a skill whose names are taken."""
    return f"{SKILL_TOOL_PREFIX}{skill}_{tool}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class PropertySchema(_Strict):
    """One argument. No `number`: amounts travel as strings or integers, never floats."""

    type: Literal["string", "integer", "boolean"]
    description: str = Field(default="", max_length=500)
    enum: tuple[ShortValue, ...] | None = Field(default=None, max_length=MAX_ENUM_VALUES)
    max_length: int | None = Field(default=None, alias="maxLength", ge=1, le=100_000)
    min_length: int | None = Field(default=None, alias="minLength", ge=0, le=100_000)
    pattern: str | None = Field(default=None, max_length=200)
    minimum: int | None = None
    maximum: int | None = None
    default: ShortValue | bool | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        """Both Python's `re` and the Rust engine pydantic checks arguments with must accept it."""
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern does not compile: {exc}") from None
            try:
                TypeAdapter(Annotated[str, Field(pattern=value)])
            except Exception as exc:  # noqa: BLE001 - pydantic's SchemaError is not a ValueError
                detail = " ".join(str(exc).split())[:200]
                raise ValueError(f"pattern is not supported by the argument checker: {detail}") from None
        return value


class InputSchema(_Strict):
    type: Literal["object"] = "object"
    properties: dict[str, PropertySchema] = Field(default_factory=dict, max_length=24)
    required: tuple[str, ...] = ()
    additional_properties: Literal[False] = Field(default=False, alias="additionalProperties")

    @model_validator(mode="after")
    def _names(self) -> InputSchema:
        bad = [n for n in self.properties if not re.fullmatch(TOOL_NAME, n)]
        if bad:
            raise ValueError(f"argument names must match {TOOL_NAME}: {bad}")
        missing = [n for n in self.required if n not in self.properties]
        if missing:
            raise ValueError(f"required names unknown arguments: {missing}")
        return self


class ToolDecl(_Strict):
    name: str = Field(pattern=TOOL_NAME)
    description: str = Field(min_length=1, max_length=1000)
    level: Literal["read", "write", "sign"]
    input_schema: InputSchema = Field(default_factory=InputSchema)


class Resources(_Strict):
    """Wishes, each capped by the bot's `skills` settings (the lower value wins)."""

    memory_mb: int | None = Field(default=None, ge=16, le=8192)
    cpu_seconds: int | None = Field(default=None, ge=1, le=3600)
    timeout: float | None = Field(default=None, gt=0, le=600)


class SkillManifest(_Strict):
    name: str = Field(pattern=NAME)
    version: str = Field(pattern=r"^[0-9]+(\.[0-9]+){0,2}([-+][0-9A-Za-z.-]{1,20})?$")
    description: str = Field(min_length=1, max_length=500)
    entrypoint: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_/.-]{0,127}\.py$")
    tools: tuple[ToolDecl, ...] = Field(min_length=1, max_length=32)
    network: tuple[str, ...] = Field(default=(), max_length=16)
    """Hosts `core.fetch` may reach (exact, or `*.example.com`); empty means no network at all."""
    chain_read: bool = False
    """Whether `core.chain` may make allowlisted read-only calls to the bot's chains."""
    resources: Resources = Field(default_factory=Resources)

    @field_validator("entrypoint")
    @classmethod
    def _relative(cls, value: str) -> str:
        if any(part in ("", ".", "..") for part in value.split("/")):
            raise ValueError("entrypoint must be a plain relative path inside the skill")
        return value

    @field_validator("network")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return network_hosts(value)

    @field_validator("tools")
    @classmethod
    def _unique(cls, value: tuple[ToolDecl, ...]) -> tuple[ToolDecl, ...]:
        names = [t.name for t in value]
        if len(set(names)) != len(names):
            raise ValueError("tool names must be unique")
        return value

    @model_validator(mode="after")
    def _buildable(self) -> SkillManifest:
        """Build each tool's argument model and its JSON schema now, exactly as the bot will."""
        for decl in self.tools:
            try:
                args_model(self.name, decl).model_json_schema()
            except Exception as exc:  # noqa: BLE001 - whatever pydantic raises, this schema cannot be used
                detail = " ".join(str(exc).split())[:200]
                raise ValueError(f"tool {decl.name}: its input_schema cannot be built: {detail}") from None
        return self

    def tool_names(self) -> list[str]:
        return [tool_name(self.name, t.name) for t in self.tools]

    def permissions(self) -> dict[str, Any]:
        """What the user approves: compared on every load, so a widened skill needs re-approval."""
        return {
            "tools": {t.name: t.level for t in self.tools},
            "network": list(self.network),
            "chain_read": self.chain_read,
            "resources": self.resources.model_dump(exclude_none=True),
        }


def parse_manifest(text: str) -> SkillManifest:
    if len(text.encode()) > MAX_MANIFEST_BYTES:
        raise ManifestError("SKILL.md is larger than 64 KiB")
    if not text.startswith("---\n"):
        raise ManifestError("SKILL.md must start with YAML front matter ('---' on the first line)")
    end = text.find("\n---", 3)
    if end < 0:
        raise ManifestError("SKILL.md front matter is not closed with '---'")
    try:
        data = _load_yaml(text[4:end])
        if not isinstance(data, dict):
            raise ManifestError("SKILL.md front matter must be a mapping")
        _check_text(data, "")
        return SkillManifest.model_validate(data)
    except yaml.YAMLError as exc:
        raise ManifestError(f"SKILL.md front matter is not valid YAML: {exc}") from None
    except RecursionError:
        raise ManifestError("SKILL.md front matter is nested too deeply") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'manifest'}: {e['msg']}" for e in exc.errors()[:8]
        )
        raise ManifestError(f"SKILL.md: {problems}") from None


def _check_text(value: Any, where: str) -> None:
    """Refuse any string (key or value, anywhere) that would not show as itself: a terminal escape,
    a carriage return or a bidi override could redraw the approval screen. Only a `description`
    may hold newlines and tabs."""
    if isinstance(value, str):
        try:
            (display_safe_lines if where.rsplit(".", 1)[-1] == "description" else display_safe)(value)
        except ValueError as exc:
            raise ManifestError(f"SKILL.md: {where or 'manifest'}: {exc}") from None
        space = next((ch for ch in value if ch != " " and unicodedata.category(ch) == "Zs"), None)
        if space is not None:  # shown as a blank: a skill has no use for it but padding its screen
            raise ManifestError(
                f"SKILL.md: {where or 'manifest'}: holds the space character U+{ord(space):04X}; "
                "use plain spaces"
            )
    elif isinstance(value, (bytes, bytearray)):  # YAML !!binary: pydantic would decode it into a str
        raise ManifestError(f"SKILL.md: {where or 'manifest'}: binary values are not allowed")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, where or "manifest")
            _check_text(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, (list, tuple, set, frozenset)):
        for index, item in enumerate(value):
            _check_text(item, f"{where}.{index}")


def load_manifest(folder: Path) -> SkillManifest:
    path = Path(folder) / "SKILL.md"
    try:
        manifest = parse_manifest(read_regular_text(path))
    except FileNotFoundError:
        raise ManifestError(f"{folder} has no SKILL.md") from None
    except PathNotAllowed as exc:
        raise ManifestError(str(exc)) from None
    entry = Path(folder) / manifest.entrypoint
    if entry.is_symlink() or not entry.is_file():
        raise ManifestError(f"entrypoint {manifest.entrypoint} is not a regular file in the skill")
    return manifest


def network_hosts(value: tuple[str, ...]) -> tuple[str, ...]:
    """Declared network hosts, normalized; one rule for skills and MCP servers."""
    hosts = tuple(h.strip().lower().rstrip(".") for h in value)
    bad = [h for h in hosts if not _HOST.fullmatch(h)]
    if bad:
        raise ValueError(
            f"network entries must be host names or *.domain patterns (no scheme, port or path): {bad}"
        )
    return hosts
