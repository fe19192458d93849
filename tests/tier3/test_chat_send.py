"""A chat `/send` on a Tier 3 account: inside the limits it lands via redeemDelegations; over what
is left on chain it is denied before broadcast, and the reply names the on-chain rule."""

from __future__ import annotations

import pytest

from policies.kernel.addresses import to_checksum
from signer.wire.delegation import Delegation
from tests.bot.agent.conftest import attach_bot
from tests.bot.readable import assert_readable, full_tx_hash
from tests.conftest import FRIEND, balance, wait_receipt
from tests.fakes.llm_server import FakeLLMServer
from tests.tier3.conftest import new_main_account, nonce, steal_session_key, tier3_stack
from tests.tier3.test_stolen_host import CENT, _stored_delegations, attack, grant

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def test_chat_send_lands_through_the_grant_and_is_denied_over_what_is_left(make_stack, chain3):
    stack = tier3_stack(make_stack, chain3)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    grant(stack, chain3, main, key["address"])
    with FakeLLMServer() as server:
        bot = attach_bot(stack, server)
        friend0, main0 = balance(chain3, FRIEND), balance(chain3, main.address)
        out = bot.chat(f"/send {FRIEND} 0.01eth")
        assert "signed" in out.lower(), out
        tx_hash = full_tx_hash(bot.chat("/details"))  # the card shows a short hash; /details the whole
        receipt = wait_receipt(chain3, tx_hash)
        assert receipt["status"] == "0x1" and receipt["to"] == chain3.contracts["manager"]
        assert balance(chain3, FRIEND) - friend0 == CENT and main0 - balance(chain3, main.address) == CENT
        shown = bot.chat("/balance")  # the main account the grant spends from is listed with its balance
        assert f"main account (Tier 3 grant) {to_checksum(main.address)}" in shown, shown

        # Someone holding the stolen key empties this period on chain; the signer's own ledger knows nothing.
        stolen = steal_session_key(stack, key["key_id"])
        native = Delegation.from_json(_stored_delegations(stack)[0])
        for _ in range(4):
            assert attack(chain3, stolen, native, FRIEND, CENT)[0] == "0x1"
        sent_before = nonce(chain3, key["address"])
        out = bot.chat(f"/send {FRIEND} 0.01eth")
        assert "onchain.native_period" in out or "on-chain period" in out, out
        assert "Refused by your policy" in out and "Signed and sent" not in out, out
        assert_readable(out)
        assert nonce(chain3, key["address"]) == sent_before  # nothing was broadcast
