"""Setting one key of one chain in config.yaml's text, so the owner's comments survive.

`owlia chain dev` and `owlia up` record what they deploy (`delegation:`, `swap_market:`) under the dev
chain's entry. Loading the file and dumping it again would drop every comment `owlia init` wrote and
every note the owner added; instead only the chain's own entry is edited, by its position in the text
(policies.kernel.yaml_text). The result is parsed back and must equal the intended document, or nothing is
returned and the caller decides (a whole re-dump, which loses comments but never data).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from policies.kernel import yaml_text


def set_chain_key(text: str, chain_id: int, key: str, value: Any) -> str | None:
    """`text` with `chains[id == chain_id][key] = value`, the rest of the file byte for byte; None when
    the chain is not there or the file is not shaped as expected."""
    entry = _chain_entry(yaml.compose(text), chain_id)
    if entry is None:
        return None
    edited = yaml_text.set_key(text, entry, key, value)
    wanted = yaml.safe_load(text)
    for chain in wanted["chains"]:
        if isinstance(chain, dict) and chain.get("id") == chain_id:
            chain[key] = value
    return edited if yaml.safe_load(edited) == wanted else None


def _chain_entry(root: Node | None, chain_id: int) -> MappingNode | None:
    chains = yaml_text.child(root, "chains")
    if not isinstance(chains, SequenceNode):
        return None
    for item in chains.value:
        if not isinstance(item, MappingNode):
            continue
        ids = yaml_text.child(item, "id")
        if isinstance(ids, ScalarNode) and ids.value == str(chain_id):
            return item
    return None
