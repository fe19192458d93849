"""Reading a policy file: YAML that cannot smuggle floats or duplicate keys into the model.

PyYAML would turn `per_tx: 0.1` into a binary float and silently keep the last of two equal
keys; both could change a limit without the user noticing, so this loader refuses to.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from policies.model import Policy

_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_MERGE_TAG = "tag:yaml.org,2002:merge"
MAX_DEPTH = 32  # a real policy nests 4 levels; 30 000 brackets would recurse for seconds, then crash
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class PolicyError(ValueError):
    """A policy that does not load; the message names the file, line or field path at fault."""


class _PolicyLoader(yaml.SafeLoader):
    """SafeLoader that keeps floats (and hex/octal/sexagesimal ints) as the text written, and
    refuses nesting deeper than MAX_DEPTH before composing it (the composer recurses per level)."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"the policy nests deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    duplicate = key in seen
                except TypeError:
                    continue  # unhashable: SafeLoader reports it below
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _scalar_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return loader.construct_scalar(node)


def _int_or_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | str:
    """Plain decimal integers stay ints; `0x...` (an unquoted address), `010`, `1:30` stay text."""
    text = loader.construct_scalar(node)
    return int(text) if _PLAIN_INT.fullmatch(text) else text


_PolicyLoader.add_constructor("tag:yaml.org,2002:float", _scalar_text)
_PolicyLoader.add_constructor("tag:yaml.org,2002:int", _int_or_text)


def _nests_too_deep(brackets: str) -> bool:
    """Do `[` and `{` nest deeper than MAX_DEPTH? (Quoted text counts too: no real policy comes close.)"""
    depth = 0
    for ch in brackets:
        depth = depth + 1 if ch in "[{" else max(depth - 1, 0)
        if depth > MAX_DEPTH:
            return True
    return False


def _format_validation(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        msg = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
        path = ".".join(str(part) for part in error["loc"])
        lines.append(f"{path}: {msg}" if path else msg)
    return "\n".join(lines)


def parse_policy(text: str) -> Policy:
    """YAML text -> validated Policy, or PolicyError."""
    if _nests_too_deep(_NOT_BRACKET.sub("", text)):  # checked first: PyYAML's scanner is quadratic in it
        raise PolicyError(f"invalid YAML: brackets nest deeper than {MAX_DEPTH} levels")
    try:
        data = yaml.load(text, Loader=_PolicyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise PolicyError(f"invalid YAML at {where}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PolicyError("a policy must be a YAML mapping (version:, chains:, assets: ...) at the top level")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(_format_validation(exc)) from None


def load_policy(path: Path) -> Policy:
    """Read and parse a policy file; every failure is a PolicyError naming the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: cannot read policy file: {exc}") from None
    try:
        return parse_policy(text)
    except PolicyError as exc:
        raise PolicyError(f"{path}: {exc}") from None
