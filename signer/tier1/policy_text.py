"""The policy file's text after edits made on the phone, with the owner's comments kept.

Each edit changes its own key or address-book line in the file as it is (policies.kernel.yaml_text);
the result must load back to exactly the edited policy (the same hash), or the whole policy is
written out again, which loses the comments but never a limit. The signer decides on the policy,
never on this text: it only chooses how the file the owner reads is written.
"""

from __future__ import annotations

from collections.abc import Sequence

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from policies.kernel import yaml_text
from policies.loader import PolicyError, parse_policy
from policies.model import Policy
from signer.tier1.policy_change import EditRefused
from signer.wire.requests import BookAdd, BookRemove, BookRename, LimitEdit, PolicyEdit

HEADER = (
    "# OwliaBot signer policy, written by the signer after a change made on your companion.\n"
    "# Edit it here or on the phone; every change is in the audit log. Reference: docs/policy.md.\n"
)


def policy_yaml(policy: Policy) -> str:
    """The whole policy written out again: it loads back to exactly this policy (same hash)."""
    text = HEADER + yaml.safe_dump(
        policy.model_dump(mode="json", exclude_none=True), sort_keys=False, allow_unicode=False
    )
    if parse_policy(text).policy_hash() != policy.policy_hash():
        raise EditRefused("the edited policy could not be written faithfully: nothing was changed")
    return text


def edited_policy_text(text: str, edits: Sequence[PolicyEdit], edited: Policy) -> str:
    """`text` with `edits` made where they belong, if that loads back to `edited`; else the whole
    policy written out again."""
    for edit in edits:
        changed = _edit(text, edit)
        if changed is None:
            return policy_yaml(edited)
        text = changed
    try:
        faithful = parse_policy(text).policy_hash() == edited.policy_hash()
    except (PolicyError, yaml.YAMLError):
        faithful = False
    return text if faithful else policy_yaml(edited)


def _edit(text: str, edit: PolicyEdit) -> str | None:
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return None
    if isinstance(edit, LimitEdit):
        return _set_limit(text, root, edit)
    book = yaml_text.child(root, "address_book")
    if not isinstance(book, SequenceNode):
        return None
    if isinstance(edit, BookAdd):
        entry = {"chain": edit.chain, "address": edit.address, "name": edit.name}
        return yaml_text.append_item(text, book, entry)
    at = _index(book, chain=edit.chain, address=edit.address)
    if at is None:
        return None
    if isinstance(edit, BookRename):
        item = book.value[at]
        return yaml_text.set_key(text, item, "name", edit.name) if isinstance(item, MappingNode) else None
    assert isinstance(edit, BookRemove)
    return yaml_text.drop_item(text, book, at)


def _set_limit(text: str, root: Node | None, edit: LimitEdit) -> str | None:
    assets = yaml_text.child(root, "assets")
    if not isinstance(assets, SequenceNode):
        return None
    at = _index(assets, chain=edit.chain, asset=edit.asset)
    asset = assets.value[at] if at is not None else None
    if not isinstance(asset, MappingNode):
        return None
    if edit.limit == "per_tx":
        if edit.amount is None:
            return yaml_text.drop_key(text, asset, "per_tx")
        return yaml_text.set_key(text, asset, "per_tx", edit.amount)
    windows = yaml_text.child(asset, "windows")
    if windows is None:
        if edit.amount is None:
            return text
        return yaml_text.set_key(text, asset, "windows", {edit.limit: edit.amount})
    if not isinstance(windows, MappingNode):
        return None
    if edit.amount is None:
        return yaml_text.drop_key(text, windows, edit.limit)
    return yaml_text.set_key(text, windows, edit.limit, edit.amount)


def _index(sequence: SequenceNode, **wanted: object) -> int | None:
    """The first item whose fields equal `wanted` (addresses and assets compared in lowercase)."""
    for i, node in enumerate(sequence.value):
        item = yaml_text.value_of(node) if isinstance(node, MappingNode) else None
        if isinstance(item, dict) and all(_same(item.get(k), v) for k, v in wanted.items()):
            return i
    return None


def _same(found: object, wanted: object) -> bool:
    if isinstance(found, str) and isinstance(wanted, str):
        return found.lower() == wanted.lower()
    return found == wanted
