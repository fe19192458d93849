"""The pydantic model a skill tool's arguments are checked with, built from its declared schema.

It lives next to the manifest because SKILL.md is checked by building it: a schema that Python
accepts but pydantic cannot build (a `pattern` the Rust regex engine refuses, such as a
backreference) must fail `owlia skill install`, not the bot's startup.

An argument's description reaches the model inside the tool's JSON schema, which providers send
apart from the system prompt and its untrusted fence, so each one carries its own short label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, Field, create_model

if TYPE_CHECKING:
    from skills_runtime.manifest import PropertySchema, ToolDecl

M = TypeVar("M", bound="SkillArgs")
_TYPES: dict[str, type] = {"string": str, "integer": int, "boolean": bool}
AUTHOR_LABEL = "[skill author's text, untrusted] "
"""Starts every argument description the model reads: the skill's author wrote the rest, not us."""


class SkillArgs(BaseModel):
    """Strict: "5" is not 5 and 1 is not True; the skill gets exactly the declared types; unknown fields refused.

    The bot builds its tool models on a subclass that is also its own ToolArgs (bot/skills/tools.py);
    this package stays free of the bot, and the manifest check builds exactly the same schema."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _description(prop: PropertySchema) -> str | None:
    """The labelled description, with its whitespace collapsed (no blank lines to pose as a new section)."""
    text = " ".join(prop.description.split())
    return f"{AUTHOR_LABEL}{text}" if text else None


def _field(prop: PropertySchema, required: bool) -> tuple[Any, Any]:
    kind: Any = Literal[prop.enum] if prop.enum else _TYPES[prop.type]
    constraints: dict[str, Any] = {
        k: v
        for k, v in {
            "max_length": prop.max_length,
            "min_length": prop.min_length,
            "pattern": prop.pattern,
            "ge": prop.minimum,
            "le": prop.maximum,
        }.items()
        if v is not None and not prop.enum
    }
    description = _description(prop)
    if required:
        return kind, Field(description=description, **constraints)
    if prop.default is not None:
        return kind, Field(default=prop.default, description=description, **constraints)
    return kind | None, Field(default=None, description=description, **constraints)


@overload
def args_model(skill: str, decl: ToolDecl) -> type[SkillArgs]: ...
@overload
def args_model(skill: str, decl: ToolDecl, base: type[M]) -> type[M]: ...
def args_model(skill: str, decl: ToolDecl, base: type[SkillArgs] = SkillArgs) -> type[SkillArgs]:
    """A pydantic model for the declared argument schema (unknown fields refused, strict types).
    Raises whatever pydantic raises (SchemaError is not a ValueError) for a schema it cannot build."""
    schema = decl.input_schema
    fields = {name: _field(prop, name in schema.required) for name, prop in schema.properties.items()}
    built = create_model(f"Skill_{skill}_{decl.name}", __base__=base, **fields)  # type: ignore[call-overload]
    return cast("type[SkillArgs]", built)  # create_model's overloads cannot see the fields' types
