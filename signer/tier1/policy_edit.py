"""Limits and the address book edited on the phone: what tightens applies at once, what loosens needs the passkey.

Why here and not in the policy file alone: the owner's phone is often the only thing at hand, and its
one link to the signer is the untrusted bridge. So (docs/policy.md, "Editing on the phone"):
1. `policy.view` hands the phone the policy in force, signed by the signer's identity key, so the
   bridge cannot show the owner other limits than the ones the signer enforces;
2. `policy.edit` carries the device's edits over the policy it saw (`base_hash`), signed by the device
   key and used once. The signer applies the edits to the policy in force itself and judges the
   result with `signer.tier1.policy_change.widenings`, never by a flag the phone or the bridge sets: a
   change that only tightens is installed at once; one that loosens needs the main key's EIP-191
   signature over the same bytes (on the phone that key opens only with the passkey, or the key's
   passphrase, as for approving a transaction), and is refused without it;
3. installing rewrites the policy file atomically (0600), audits `policy.edited` in the commit that
   records the new policy, and the engine decides the next request under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from policies.kernel.keccak import keccak256
from policies.model import Policy
from signer.tier1 import policy_change
from signer.tier1.policy_change import EditRefused, StalePolicy
from signer.tier1.policy_text import edited_policy_text
from signer.wire.messages import POLICY_EDIT_DOMAIN, POLICY_VIEW_DOMAIN, policy_edit_body, signed_message
from signer.wire.requests import BookAdd, BookRemove, BookRename, LimitEdit, PolicyEdit, PolicyEditParams

if TYPE_CHECKING:
    from signer.tier1.approvals import Approvals
    from signer.tier1.policy_live import PolicyKeeper

REFUSED = "policy.edit_refused"


def personal_digest(message: bytes) -> bytes:
    """EIP-191 (personal_sign): a main-key signature over it can never be a transaction's."""
    return keccak256(b"\x19Ethereum Signed Message:\n" + str(len(message)).encode() + message)


def apply_edits(policy: Policy, edits: Sequence[PolicyEdit]) -> Policy:
    """The policy with the edits applied, validated like a policy file; EditRefused says what is wrong."""
    data = policy.model_dump(mode="json")
    for edit in edits:
        if isinstance(edit, LimitEdit):
            _set_limit(data, edit)
        else:
            _edit_book(data, edit)
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise EditRefused(
            f"the edited policy is not valid ({where}: {first['msg']}): nothing was changed"
        ) from None


def _set_limit(data: dict[str, Any], edit: LimitEdit) -> None:
    asset = next((a for a in data["assets"] if (a["chain"], a["asset"]) == (edit.chain, edit.asset)), None)
    if asset is None:
        raise EditRefused(f"your policy has no asset {edit.asset} on chain {edit.chain}: nothing was changed")
    if edit.limit == "per_tx":
        asset["per_tx"] = edit.amount
    elif edit.amount is None:
        asset["windows"].pop(edit.limit, None)
    else:
        asset["windows"][edit.limit] = edit.amount


def _edit_book(data: dict[str, Any], edit: BookAdd | BookRename | BookRemove) -> None:
    book: list[dict[str, Any]] = data["address_book"]
    found = next((e for e in book if (e["chain"], e["address"]) == (edit.chain, edit.address)), None)
    if isinstance(edit, BookAdd):
        if found is not None:
            raise EditRefused(
                f"{edit.address} is already in your address book as {found['name']}: nothing was changed"
            )
        book.append({"chain": edit.chain, "address": edit.address, "name": edit.name})
        return
    if found is None:
        raise EditRefused(
            f"{edit.address} is not in your address book on chain {edit.chain}: nothing was changed"
        )
    if isinstance(edit, BookRename):
        found["name"] = edit.name
    else:
        book.remove(found)


class PhoneEdits:
    """`policy.view` and `policy.edit` for paired devices (through the bridge)."""

    def __init__(self, approvals: Approvals, keeper: PolicyKeeper) -> None:
        self.approvals = approvals  # devices, identity key
        self.keeper = keeper

    def view(self) -> dict[str, Any]:
        policy = self.keeper.policy
        body = {"policy_hash": policy.policy_hash(), "policy": policy.model_dump(mode="json")}
        return {**body, "signer_sig": self.approvals.identity.sign(POLICY_VIEW_DOMAIN, body)}

    async def edit(self, params: PolicyEditParams) -> dict[str, Any]:
        devices = self.approvals.devices
        edits = [e.model_dump(mode="json") for e in params.edits]
        message = signed_message(
            POLICY_EDIT_DOMAIN, policy_edit_body(params.device_id, params.base_hash, edits, params.ts)
        )
        evidence = {"device_id": params.device_id, "base_hash": params.base_hash, "edits": edits}
        # Any paired device that may freeze may tighten (it only takes authority away, as a freeze does).
        device = await devices.authorize(
            params.device_id, "freeze", message, params.signature, REFUSED, evidence
        )
        await devices.consume_proof(message, params.ts, REFUSED, evidence)

        def judge(current: Policy, current_text: str) -> tuple[Policy, str, dict[str, Any]]:
            new = apply_edits(current, params.edits)
            if new.policy_hash() == current.policy_hash():
                raise EditRefused("these edits change nothing in the policy in force")
            widens = policy_change.widenings(current, new)
            passkey = self._main_key_signed(message, params.main_signature, device.main_address)
            if widens and not passkey:
                raise EditRefused(
                    "this change loosens your policy (" + "; ".join(widens) + "): approve it with your "
                    "passkey on the phone. Nothing was changed."
                )
            if widens and "approve" not in device.capabilities:
                raise EditRefused("this device may not approve, so it may not loosen the policy")
            record = {
                "device_id": device.device_id,
                "from_hash": current.policy_hash(),
                "policy_hash": new.policy_hash(),
                "edits": edits,
                "loosened": bool(widens),
                "widens": widens,
                "authority": "passkey" if passkey else "device",
            }
            return new, edited_policy_text(current_text, params.edits, new), record

        try:
            record = await self.keeper.install_edited(params.base_hash, judge)
        except (EditRefused, StalePolicy) as exc:
            raise await devices.refuse(REFUSED, evidence, str(exc)) from None
        return {
            "status": "applied",
            "from_hash": record["from_hash"],
            "policy_hash": record["policy_hash"],
            "loosened": record["loosened"],
            "widens": record["widens"],
        }

    @staticmethod
    def _main_key_signed(message: bytes, signature: str | None, main_address: str) -> bool:
        """False without a signature; a signature that is not the main account's is refused outright."""
        if signature is None:
            return False
        # Only a loosening loads the Delegation Framework's codec: the idle daemon keeps it out
        # (tests/signer/test_idle_memory.py; 83 KiB of Python objects, as with Tier 3 in signer.daemon).
        from signer.wire.delegation import DelegationError, recover  # lazy: 4 ms, 1068 KiB

        try:
            signer = recover(personal_digest(message), bytes.fromhex(signature[2:]))
        except DelegationError as exc:
            raise EditRefused(f"the passkey signature is malformed ({exc}): nothing was changed") from None
        if signer != main_address.lower():
            raise EditRefused("the passkey signature is not your main account's: nothing was changed")
        return True
