"""Editing a YAML file's text in place, so the owner's comments and layout outside the edit survive.

Loading a file and dumping it again drops every comment: the notes `owlia init` wrote and those the
owner added. These helpers change one key or one list item at its position in the text (PyYAML's
node marks) and leave every other byte as it was. Each returns the new text, or None where the file
is shaped in a way they do not edit (the caller then falls back to a whole dump, which loses
comments but never data). Callers parse the result back and compare it with what they meant.
"""

from __future__ import annotations

import math
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = [
    "append_item",
    "child",
    "content_end",
    "drop_item",
    "drop_key",
    "set_key",
    "value_of",
]


def value_of(node: Node) -> Any:
    """The Python value a node stands for, as `yaml.safe_load` would make it."""
    return yaml.SafeLoader("").construct_document(node)


def child(node: Node | None, key: str) -> Node | None:
    """A mapping's value under `key`, or None."""
    if not isinstance(node, MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, ScalarNode) and k.value == key), None)


def content_end(node: Node) -> int:
    """Where a node's own text ends: a block collection's end mark runs on over the blank and comment
    lines after it, up to the next token; its last scalar's (or flow collection's) does not."""
    if isinstance(node, MappingNode) and not node.flow_style and node.value:
        return content_end(node.value[-1][1])
    if isinstance(node, SequenceNode) and not node.flow_style and node.value:
        return content_end(node.value[-1])
    return int(node.end_mark.index)


def _flow(value: Any) -> str:
    """`value` on one line, in flow style: a scalar, `{a: 1, b: x}` or `[1, 2]`."""
    dumped = yaml.safe_dump(value, default_flow_style=True, width=math.inf, sort_keys=False).strip()
    return dumped.removesuffix("\n...").removesuffix("...").strip()


def _block(mapping: dict[str, Any], column: int) -> str:
    """`mapping` in block style, every line after the first indented to `column`."""
    dumped = yaml.safe_dump(mapping, sort_keys=False, default_flow_style=False).rstrip("\n")
    return dumped.replace("\n", "\n" + " " * column)


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def set_key(text: str, mapping: MappingNode, key: str, value: Any) -> str:
    """`mapping[key] = value`. A scalar replaced by a scalar changes that scalar's text alone; a key
    added to a flow mapping goes before its `}`; otherwise the key is written in block style (a flow
    mapping holding a collection becomes a block mapping at the same place)."""
    scalar = not isinstance(value, (dict, list))
    for key_node, value_node in mapping.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            if scalar and isinstance(value_node, ScalarNode):
                start, end = value_node.start_mark.index, value_node.end_mark.index
                return text[:start] + _flow(value) + text[end:]
            break
    else:
        if mapping.flow_style and scalar:
            close = mapping.end_mark.index - 1  # the `}`
            joint = ", " if mapping.value else ""
            return text[:close] + f"{joint}{_flow(key)}: {_flow(value)}" + text[close:]
    if mapping.flow_style:
        data = value_of(mapping)
        data[key] = value
        start, end = mapping.start_mark.index, mapping.end_mark.index
        return text[:start] + _block(data, mapping.start_mark.column) + text[end:]
    column: int = mapping.value[0][0].start_mark.column
    block = _block({key: value}, column)
    for key_node, value_node in mapping.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            start, end = key_node.start_mark.index, content_end(value_node)
            return text[:start] + block + text[end:]
    end = _line_end(text, content_end(mapping))
    return text[:end] + "\n" + " " * column + block + text[end:]


def drop_key(text: str, mapping: MappingNode, key: str) -> str | None:
    """The mapping without `key` (the text unchanged when it has none); None for a block key whose
    value is not on its own lines."""
    pairs = mapping.value
    at = next((i for i, (k, _) in enumerate(pairs) if isinstance(k, ScalarNode) and k.value == key), None)
    if at is None:
        return text
    if mapping.flow_style:
        return _cut_flow_entry(text, [(k.start_mark.index, v.end_mark.index) for k, v in pairs], at)
    lines = _own_lines(text, pairs[at][0], pairs[at][1], lead="")
    return None if lines is None else text[: lines[0]] + text[lines[1] :]


def append_item(text: str, sequence: SequenceNode, item: Any) -> str:
    """`sequence` with `item` (written in flow style) at its end."""
    if sequence.flow_style:
        close = sequence.end_mark.index - 1  # the `]`
        if not sequence.value:
            start = sequence.start_mark.index
            while start > 0 and text[start - 1] == " ":
                start -= 1
            indent = " " * (_key_column(text, start) + 2)
            return text[:start] + "\n" + indent + "- " + _flow(item) + text[close + 1 :]
        return text[:close] + ", " + _flow(item) + text[close:]
    column: int = sequence.start_mark.column
    end = _line_end(text, content_end(sequence))
    return text[:end] + "\n" + " " * column + "- " + _flow(item) + text[end:]


def _key_column(text: str, index: int) -> int:
    """The indentation of the line `index` is on."""
    start = _line_start(text, index)
    line = text[start:index]
    return len(line) - len(line.lstrip(" "))


def drop_item(text: str, sequence: SequenceNode, index: int) -> str | None:
    """`sequence` without its item at `index`; None when the item does not own its lines."""
    if sequence.flow_style:
        return _cut_flow_entry(text, [(n.start_mark.index, n.end_mark.index) for n in sequence.value], index)
    node = sequence.value[index]
    lines = _own_lines(text, node, node, lead="-")
    if lines is None:
        return None
    start, end = lines
    if len(sequence.value) > 1:
        return text[:start] + text[end:]
    before = text[:start].rstrip("\n")
    if not before.endswith(":"):
        return None  # comments between the key and its only item: not edited here
    return before + " []\n" + text[end:]  # the last item gone: an empty list, not a null


def _cut_flow_entry(text: str, spans: list[tuple[int, int]], at: int) -> str:
    """Entry `at` of a flow collection (`spans`: where each entry starts and ends) cut out of the
    text, with the comma that joined it to a neighbour."""
    start, end = spans[at]
    if at + 1 < len(spans):  # `entry, ` up to the next one
        end = spans[at + 1][0]
    elif at > 0:  # `, entry` after the previous one
        start = spans[at - 1][1]
    return text[:start] + text[end:]


def _own_lines(text: str, first: Node, last: Node, lead: str) -> tuple[int, int] | None:
    """The whole lines from `first` to the end of `last`'s content, when nothing but `lead` ("" for a
    key, "-" for a list item) comes before `first` on its line; None when it shares that line."""
    start = _line_start(text, first.start_mark.index)
    if text[start : first.start_mark.index].strip() != lead:
        return None
    return start, min(_line_end(text, content_end(last)) + 1, len(text))
