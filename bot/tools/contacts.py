"""Local contacts: names the bot may use for addresses, and the address checks they rest on.

A contact is a label in the bot only. The signer never reads this file, so paying a contact is
still paying a new recipient as far as the policy is concerned; only the signer's own address
book (in its policy, edited by the user) makes an address "known". Adding a contact is a write
tool the user confirms, it refuses an address the user did not write in the conversation, and it
refuses a look-alike of an address already known until the user has been warned explicitly.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from bot.tools.base import Level, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from policies.kernel.addresses import ADDRESS_PATTERN, case_ok, is_address, to_checksum
from policies.kernel.files import ensure_private_dir, read_regular_text, write_private_file
from policies.kernel.locks import locked_beside
from policies.units import is_lookalike
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError
from signer.wire.sign_replies import PolicyShowReply

CONTACTS_FILE = "contacts.json"
MAX_CONTACTS = 500
# ASCII only: a Cyrillic "а" in "Alice" would make a second contact that reads the same.
_NAME = re.compile(r"[A-Za-z0-9 _.\-]{1,40}")


# ---- address helpers --------------------------------------------------------------------------


def parse_address(value: str) -> str:
    """Validate and return the checksummed address; mixed case must already be a valid checksum."""
    if not is_address(value):
        raise ValueError("must be an address: 0x followed by 40 hex digits")
    checksummed = to_checksum(value)
    if not case_ok(value):
        raise ValueError(f"{value} has a bad EIP-55 checksum (a typo?)")
    return checksummed


def lookalike(a: str, b: str) -> bool:
    """Different addresses sharing the first and last four hex digits: the ones people check."""
    return is_lookalike(a, b)


def clean_name(value: str) -> str:
    name = " ".join(value.split()) if isinstance(value, str) else ""
    if not _NAME.fullmatch(name):
        raise ValueError("a contact name is 1-40 ASCII letters, digits, spaces and - _ .")
    return name


ChecksumAddress = Annotated[str, AfterValidator(parse_address)]
ContactName = Annotated[str, AfterValidator(clean_name)]


# ---- the store ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contact:
    name: str
    address: str  # checksummed
    added_at: int


class _Stored(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: ContactName
    address: ChecksumAddress
    added_at: int


class _StoredFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: Literal[1] = 1
    contacts: list[_Stored] = Field(default_factory=list)


class ContactStore:
    """contacts.json (0600, replaced atomically) under a lock file, so concurrent runs never lose an edit."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = ensure_private_dir(Path(state_dir))
        self.path = self.dir / CONTACTS_FILE

    def _read(self) -> list[Contact]:
        if not self.path.exists() and not self.path.is_symlink():
            return []
        try:
            stored = _StoredFile.model_validate(json.loads(read_regular_text(self.path)))
        except (ValueError, ValidationError, OSError):
            # Fail closed: never overwrite a file we cannot read with a "fresh" list.
            raise ToolFailure(
                f"{CONTACTS_FILE} is unreadable or malformed; fix or remove it by hand"
            ) from None
        return [Contact(c.name, c.address, c.added_at) for c in stored.contacts]

    def _write(self, contacts: list[Contact]) -> None:
        body = {"version": 1, "contacts": [asdict(c) for c in contacts]}
        write_private_file(self.path, (json.dumps(body, indent=2) + "\n").encode())

    def load(self) -> list[Contact]:
        with locked_beside(self.path):
            return self._read()

    def add(self, name: str, address: str, now: int | None = None) -> Contact:
        name, address = clean_name(name), parse_address(address)
        with locked_beside(self.path):
            contacts = self._read()
            for c in contacts:
                if c.name.casefold() == name.casefold():
                    raise ToolFailure(
                        f"a contact named {c.name!r} already exists ({c.address}); nothing was saved"
                    )
                if c.address.lower() == address.lower():
                    raise ToolFailure(f"{address} is already saved as {c.name!r}; nothing was saved")
            if len(contacts) >= MAX_CONTACTS:
                raise ToolFailure(f"the contact list is full ({MAX_CONTACTS}); remove one first")
            contact = Contact(name, address, int(time.time()) if now is None else now)
            self._write([*contacts, contact])
        return contact

    def remove(self, name: str, address: str) -> Contact:
        """Remove only if name and address both match, so the user confirmed exactly what goes."""
        name, address = clean_name(name), parse_address(address)
        with locked_beside(self.path):
            contacts = self._read()
            match = next((c for c in contacts if c.name.casefold() == name.casefold()), None)
            if match is None or match.address != address:
                raise ToolFailure(f"no contact named {name!r} with address {address}; nothing was removed")
            self._write([c for c in contacts if c is not match])
        return match

    def lookalikes_of(self, address: str) -> list[Contact]:
        return [c for c in self.load() if lookalike(c.address, address)]


def contact_store(ctx: ToolContext) -> ContactStore:
    if ctx.services.state_dir is None:
        raise ToolFailure("contacts are not configured (the bot has no state directory)")
    return ContactStore(ctx.services.state_dir)


# ---- the signer's address book (read-only view) -------------------------------------------------


@dataclass(frozen=True)
class BookEntry:
    chain_id: int
    name: str
    address: str  # checksummed


class _PolicyBookEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")
    chain: int
    address: ChecksumAddress
    name: str = Field(max_length=100)


async def signer_address_book(signer: SignerClient) -> list[BookEntry]:
    """The address book of the policy the signer is running (the only one that counts for paying)."""
    shown = await signer.call_as(PolicyShowReply, "policy.show")
    raw = shown.policy.get("address_book", [])
    try:
        entries = [_PolicyBookEntry.model_validate(e) for e in raw]
    except ValidationError:
        raise ToolFailure("the signer returned an address book this bot cannot read") from None
    return [BookEntry(e.chain, e.name, e.address) for e in entries]


async def address_named(
    signer: SignerClient | None, state_dir: Path | None, chain_id: int, name: str
) -> tuple[str, str] | None:
    """(address, where it was found) for a name the user typed where an address goes (`/send
    dev-friend 0.001eth`): the signer's address book on `chain_id` first (the names that make a
    recipient known), then the local contacts (labels only: paying one is still paying a new recipient,
    so the signer escalates it). None when neither has it; ToolFailure when the book names two."""
    wanted = name.strip().casefold()
    if signer is not None:
        try:
            book = [
                e
                for e in await signer_address_book(signer)
                if e.chain_id == chain_id and e.name.casefold() == wanted
            ]
        except SignerError:
            book = []  # the contacts may still know it; the signer judges the address either way
        if len({e.address.lower() for e in book}) > 1:
            raise ToolFailure(
                f"the signer's address book has more than one {name!r} on chain {chain_id}: "
                "write the address instead"
            )
        if book:
            return book[0].address, "the signer's address book"
    if state_dir is not None:
        match = next((c for c in ContactStore(state_dir).load() if c.name.casefold() == wanted), None)
        if match is not None:
            return to_checksum(
                match.address
            ), "your contacts (a label only: the signer still treats it as new)"
    return None


# ---- tools ----------------------------------------------------------------------------------------

LOCAL_ONLY = "local label only: the signer still treats this address as a new recipient"
POISONING_WARNING = (
    "WARNING: this address resembles one you already know (same first 4 and last 4 hex "
    "digits) - the address-poisoning trick. Compare every character before confirming."
)


class ContactAddArgs(ToolArgs):
    name: ContactName = Field(
        min_length=1, max_length=40, description="1-40 ASCII letters, digits, spaces, - _ ."
    )
    address: ChecksumAddress = Field(
        pattern=ADDRESS_PATTERN, description="0x + 40 hex (EIP-55 if mixed case)"
    )
    lookalike_acknowledged: bool = Field(
        default=False,
        description="set only after contact_add refused a look-alike and the user still wants it",
    )


class ContactRemoveArgs(ToolArgs):
    name: ContactName = Field(min_length=1, max_length=40)
    address: ChecksumAddress = Field(pattern=ADDRESS_PATTERN, description="the contact's full address")


def _confirm_add(args: ContactAddArgs) -> str:
    lines = [f'Save local contact "{args.name}" = {args.address}', f"({LOCAL_ONLY})"]
    if args.lookalike_acknowledged:
        lines.append(POISONING_WARNING)
    return "\n".join(lines)


def _confirm_remove(args: ContactRemoveArgs) -> str:
    return f'Remove local contact "{args.name}" = {args.address}'


async def _known_lookalikes(ctx: ToolContext, store: ContactStore, address: str) -> list[str]:
    """Known addresses this one imitates: local contacts, and the signer's book when reachable."""
    found = [f"contact {c.name!r} {c.address}" for c in store.lookalikes_of(address)]
    if ctx.services.signer is not None:
        try:
            book = await signer_address_book(ctx.services.signer)
        except SignerError:
            book = []  # best effort: the signer runs its own look-alike rule when paying
        found += [f"signer book {e.name!r} {e.address}" for e in book if lookalike(e.address, address)]
    return found


async def _lookalike_note(ctx: ToolContext, args: ContactAddArgs) -> str | None:
    """Name what the new address imitates, so the user compares it with the real one."""
    if not args.lookalike_acknowledged:
        return None
    similar = await _known_lookalikes(ctx, contact_store(ctx), args.address)
    return f"It resembles: {'; '.join(similar)}" if similar else None


@tool(
    "contact_add",
    Level.WRITE,
    ContactAddArgs,
    confirmation=_confirm_add,
    confirmation_note=_lookalike_note,
    description="""
Save a local contact (name -> address) after the user confirms. It is a label in the bot only: the
signer still treats the address as a new recipient. Refuses duplicates and addresses that
the user did not write themselves; look-alikes of known addresses are refused until acknowledged.""",
)
async def contact_add(ctx: ToolContext, args: ContactAddArgs) -> ToolOutput:
    if not ctx.provenance.user_wrote(args.address):
        raise ToolFailure(
            f"{args.address} is not an address the user wrote in this conversation (it came "
            "from a page, a file, a tool result or the model); ask the user to type or paste "
            "it themselves. Nothing was saved."
        )
    store = contact_store(ctx)
    similar = await _known_lookalikes(ctx, store, args.address)
    if similar and not args.lookalike_acknowledged:
        raise ToolFailure(
            f"{args.address} looks like {'; '.join(similar)} (same first and last 4 hex "
            "digits): this is how address poisoning works. Nothing was saved. Only if the user "
            "confirms it really is a different person, call again with "
            "lookalike_acknowledged=true."
        )
    contact = store.add(args.name, args.address)
    text = f"Saved local contact {contact.name!r} = {contact.address} ({LOCAL_ONLY})."
    if similar:
        text += f" It resembles {'; '.join(similar)}."
    return ToolOutput(text, untrusted=False, data={"name": contact.name, "address": contact.address})


@tool(
    "contact_remove",
    Level.WRITE,
    ContactRemoveArgs,
    confirmation=_confirm_remove,
    description="""
Remove a local contact after the user confirms; give its name and its full address (see address_book).""",
)
async def contact_remove(ctx: ToolContext, args: ContactRemoveArgs) -> ToolOutput:
    removed = contact_store(ctx).remove(args.name, args.address)
    return ToolOutput(
        f"Removed local contact {removed.name!r} = {removed.address}.",
        untrusted=False,
        data={"name": removed.name, "address": removed.address},
    )


CONTACT_TOOLS = (contact_add, contact_remove)
