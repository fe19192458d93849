"""Setting one key of one chain in config.yaml's text, so the owner's comments survive.

`owlia chain dev` and `owlia up` record what they deploy (`delegation:`, `swap_market:`) under the dev
chain's entry. Loading the file and dumping it again would drop every comment `owlia init` wrote and
every note the owner added; instead only the chain's own entry is edited, by its position in the text
(PyYAML's node marks). The result is parsed back and must equal the intended document, or nothing is
returned and the caller decides (a whole re-dump, which loses comments but never data).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode


def set_chain_key(text: str, chain_id: int, key: str, value: Any) -> str | None:
    """`text` with `chains[id == chain_id][key] = value`, the rest of the file byte for byte; None when
    the chain is not there or the file is not shaped as expected."""
    root = yaml.compose(text)
    entry = _chain_entry(root, chain_id)
    if entry is None:
        return None
    if entry.flow_style:
        edited = _rewrite_flow_entry(text, entry, key, value)
    else:
        edited = _set_in_block_entry(text, entry, key, value)
    wanted = yaml.safe_load(text)
    for chain in wanted["chains"]:
        if isinstance(chain, dict) and chain.get("id") == chain_id:
            chain[key] = value
    return edited if yaml.safe_load(edited) == wanted else None


def _chain_entry(root: Node | None, chain_id: int) -> MappingNode | None:
    if not isinstance(root, MappingNode):
        return None
    chains = next((v for k, v in root.value if isinstance(k, ScalarNode) and k.value == "chains"), None)
    if not isinstance(chains, SequenceNode):
        return None
    for item in chains.value:
        if not isinstance(item, MappingNode):
            continue
        ids = [v for k, v in item.value if isinstance(k, ScalarNode) and k.value == "id"]
        if ids and isinstance(ids[0], ScalarNode) and ids[0].value == str(chain_id):
            return item
    return None


def _content_end(node: Node) -> int:
    """Where a node's own text ends: a block collection's end mark runs on over the blank and comment
    lines after it, up to the next token; its last scalar's (or flow collection's) does not."""
    if isinstance(node, MappingNode) and not node.flow_style and node.value:
        return _content_end(node.value[-1][1])
    if isinstance(node, SequenceNode) and not node.flow_style and node.value:
        return _content_end(node.value[-1])
    return node.end_mark.index


def _block(mapping: dict[str, Any], column: int) -> str:
    """`mapping` in block style, every line after the first indented to `column`."""
    dumped = yaml.safe_dump(mapping, sort_keys=False, default_flow_style=False).rstrip("\n")
    return dumped.replace("\n", "\n" + " " * column)


def _rewrite_flow_entry(text: str, entry: MappingNode, key: str, value: Any) -> str:
    """`- {id: 1, ...}` becomes a block mapping at the same place (a flow mapping cannot hold a block)."""
    data = yaml.safe_load(text[entry.start_mark.index : entry.end_mark.index])
    data[key] = value
    return (
        text[: entry.start_mark.index] + _block(data, entry.start_mark.column) + text[entry.end_mark.index :]
    )


def _set_in_block_entry(text: str, entry: MappingNode, key: str, value: Any) -> str:
    column = entry.value[0][0].start_mark.column
    block = _block({key: value}, column)
    for key_node, value_node in entry.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            start, end = key_node.start_mark.index, _content_end(value_node)
            return text[:start] + block + text[end:]
    end = _content_end(entry)
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    return text[:line_end] + "\n" + " " * column + block + text[line_end:]
