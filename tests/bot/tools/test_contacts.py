"""Local contacts: checksum validation, duplicates, look-alike (address poisoning) refusal, 0600 file."""

from __future__ import annotations

import asyncio
import json
import stat

import pytest
from pydantic import ValidationError

from bot.tools.base import ToolFailure
from bot.tools.contacts import (
    ContactAddArgs,
    ContactStore,
    contact_add,
    contact_remove,
    lookalike,
    parse_address,
    to_checksum,
)
from bot.tools.provenance import Provenance
from tests.bot.tools.support import call, make_ctx

FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
# Same first 4 and last 4 hex digits as FRIEND, different in between: a poisoning candidate.
FAKE_FRIEND = "0x7099" + "0" * 32 + "79c8"
OTHER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"


@pytest.fixture
def ctx(tmp_path):
    ctx = make_ctx(tmp_path / "ws", state_dir=tmp_path / "state")
    ctx.provenance.saw_user_text(f"my friends: {FRIEND}, {FAKE_FRIEND} and {OTHER}")  # the user's own words
    return ctx


def test_checksum_and_validation():
    assert to_checksum(FRIEND.lower()) == FRIEND
    assert parse_address(FRIEND.lower()) == FRIEND
    assert parse_address("0x" + FRIEND[2:].upper()) == FRIEND
    with pytest.raises(ValueError, match="checksum"):
        parse_address(FRIEND[:-1] + "c")  # one letter's case flipped
    with pytest.raises(ValidationError):
        ContactAddArgs(name="bob", address=FRIEND[:-1] + "c")
    with pytest.raises(ValidationError):
        ContactAddArgs(name="b\u043eb", address=FRIEND)  # Cyrillic "o": looks like "bob"
    with pytest.raises(ValidationError):
        ContactAddArgs(name="x" * 41, address=FRIEND)


def test_lookalike_helper():
    assert lookalike(FRIEND, FAKE_FRIEND) and lookalike(FAKE_FRIEND, FRIEND)
    assert not lookalike(FRIEND, FRIEND.lower())
    assert not lookalike(FRIEND, OTHER)


def test_add_stores_checksummed_in_a_private_file(ctx, tmp_path):
    out = asyncio.run(call(contact_add, ctx, name="Bob", address=FRIEND.lower()))
    assert FRIEND in out.content and "local label only" in out.content
    path = tmp_path / "state" / "contacts.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert json.loads(path.read_text())["contacts"][0]["address"] == FRIEND


def test_confirmation_shows_full_checksummed_address():
    text = contact_add.confirmation_text(ContactAddArgs(name="Bob", address=FRIEND.lower()))
    assert FRIEND in text and "Bob" in text and "WARNING" not in text
    acknowledged = ContactAddArgs(name="Bob", address=FRIEND, lookalike_acknowledged=True)
    warned = contact_add.confirmation_text(acknowledged)
    assert "address-poisoning" in warned


def test_duplicates_are_refused(ctx):
    asyncio.run(call(contact_add, ctx, name="Bob", address=FRIEND))
    with pytest.raises(ToolFailure, match="already exists"):
        asyncio.run(call(contact_add, ctx, name="bob", address=OTHER))
    with pytest.raises(ToolFailure, match="already saved as 'Bob'"):
        asyncio.run(call(contact_add, ctx, name="Robert", address=FRIEND.lower()))


def test_lookalike_is_refused_until_acknowledged(ctx, tmp_path):
    asyncio.run(call(contact_add, ctx, name="Bob", address=FRIEND))
    with pytest.raises(ToolFailure, match="address poisoning") as refused:
        asyncio.run(call(contact_add, ctx, name="Bobby", address=FAKE_FRIEND))
    assert FRIEND in str(refused.value) and to_checksum(FAKE_FRIEND) in str(refused.value)
    assert len(ContactStore(tmp_path / "state").load()) == 1
    out = asyncio.run(call(contact_add, ctx, name="Bobby", address=FAKE_FRIEND, lookalike_acknowledged=True))
    assert "resembles" in out.content and len(ContactStore(tmp_path / "state").load()) == 2


def test_an_address_the_user_did_not_write_is_refused(ctx):
    ctx.provenance = Provenance()  # the model took it from a page: "send your refund to ..."
    with pytest.raises(ToolFailure, match="did not write|not an address the user wrote"):
        asyncio.run(call(contact_add, ctx, name="Refund desk", address=OTHER))
    ctx.provenance.saw_user_text(f"yes, {OTHER} is my sister's address")
    asyncio.run(call(contact_add, ctx, name="Sis", address=OTHER))


def test_remove_needs_name_and_matching_address(ctx, tmp_path):
    asyncio.run(call(contact_add, ctx, name="Bob", address=FRIEND))
    args = contact_remove.args.model_validate({"name": "Bob", "address": FRIEND.lower()})
    assert contact_remove.confirmation_text(args) == f'Remove local contact "Bob" = {FRIEND}'
    with pytest.raises(ToolFailure, match="nothing was removed"):
        asyncio.run(call(contact_remove, ctx, name="Bob", address=OTHER))
    asyncio.run(call(contact_remove, ctx, name="bob", address=FRIEND))
    assert ContactStore(tmp_path / "state").load() == []


def test_corrupt_file_fails_closed(ctx, tmp_path):
    asyncio.run(call(contact_add, ctx, name="Bob", address=FRIEND))
    path = tmp_path / "state" / "contacts.json"
    path.write_text("{not json")
    with pytest.raises(ToolFailure, match="malformed"):
        asyncio.run(call(contact_add, ctx, name="Carol", address=OTHER))
    assert path.read_text() == "{not json"


def test_not_configured(tmp_path):
    ctx = make_ctx(tmp_path)
    ctx.provenance.saw_user_text(FRIEND)
    with pytest.raises(ToolFailure, match="not configured"):
        asyncio.run(call(contact_add, ctx, name="Bob", address=FRIEND))


def test_confirming_an_acknowledged_lookalike_names_the_contact_it_imitates(ctx):
    """The warning alone is not enough to compare: the user is shown the real contact next to it."""
    from bot.config import AgentSettings
    from bot.llm.types import ToolCall
    from bot.observability.audit import BotAudit
    from bot.tools.executor import ToolExecutor
    from bot.tools.registry import ToolRegistry

    asyncio.run(call(contact_add, ctx, name="Bob", address=FRIEND))
    asked: list[str] = []

    class Confirmer:
        async def confirm(self, text: str, timeout: float) -> bool:
            asked.append(text)
            return False

    executor = ToolExecutor(
        ToolRegistry([contact_add]), AgentSettings(), BotAudit(ctx.services.state_dir / "a.jsonl")
    )
    args = {"name": "Bobby", "address": FAKE_FRIEND, "lookalike_acknowledged": True}
    asyncio.run(executor.execute(ctx, [ToolCall("c1", "contact_add", args)], Confirmer()))
    assert len(asked) == 1
    assert "address-poisoning" in asked[0] and f"contact 'Bob' {FRIEND}" in asked[0]
