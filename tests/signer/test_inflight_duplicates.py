"""A key sent again while its first request is still in flight (not yet committed).

The engine answers the duplicate from the first request's own outcome once it has one: the same
reply marked `replayed`, a conflict if the body differs, or the first request's error. Driven
through the engine of a real daemon (real SQLite, anvil), the two requests side by side on its loop.
"""

from __future__ import annotations

import asyncio
import shutil
import time

from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from signer.wire.protocol import ErrorCode, RpcError
from signer.wire.requests import SignRequestParams
from tests.conftest import FRIEND, InProcessSigner


def _params(key: str, value: int) -> SignRequestParams:
    return SignRequestParams.model_validate(
        {
            "idempotency_key": f"inflight-{key}",
            "intent": {"chain_id": 31337, "to": FRIEND, "value": str(value)},
        }
    )


def _side_by_side(
    anvil, tmp_path, first: SignRequestParams, second: SignRequestParams, *, broken: bool = False
):
    """Both requests started on the daemon's loop before either commits: the results (or errors), the
    keys in flight afterwards, and the rows the first request's key left."""
    home = InProcessSigner(tmp_path, anvil.url)

    async def run():
        daemon = home.daemon()
        await daemon.start()
        try:
            async with SignerClient(home.paths.socket, home.admin_token) as admin:
                await admin.call(
                    "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
                )
            engine = daemon.engine
            client = daemon.server.registry.authenticate(home.token, time.time())
            await engine.sign_request(client, _params("warm-up", 1))  # the chain's nonce and fees, read once
            engine.sole_connection = lambda: (
                False
            )  # no connection is open: the engine yields before committing
            if broken:
                daemon.writer_conn.execute(
                    "CREATE TEMP TRIGGER no_requests BEFORE INSERT ON requests "
                    "BEGIN SELECT json('injected failure'); END"
                )  # an error, not a constraint
            results = await asyncio.gather(
                engine.sign_request(client, first),
                engine.sign_request(client, second),
                return_exceptions=True,
            )
            rows = daemon.reader.execute(
                "SELECT count(*) FROM requests WHERE idempotency_key=?", (first.idempotency_key,)
            ).fetchone()[0]
            return results, dict(engine._inflight), rows
        finally:
            await daemon.stop()

    try:
        return asyncio.run(run())
    finally:
        shutil.rmtree(home.sockdir, ignore_errors=True)


def test_the_same_request_again_while_in_flight_gets_the_first_ones_reply(anvil, tmp_path):
    (first, again), inflight, rows = _side_by_side(
        anvil, tmp_path, _params("twice", 1000), _params("twice", 1000)
    )
    assert first["status"] == "signed" and "replayed" not in first
    assert again == {**first, "replayed": True}  # the same reply, the same request id and transaction
    assert rows == 1 and inflight == {}


def test_a_different_request_under_a_key_in_flight_is_a_conflict(anvil, tmp_path):
    (first, other), inflight, rows = _side_by_side(
        anvil, tmp_path, _params("clash", 1000), _params("clash", 2000)
    )
    assert first["status"] == "signed"
    assert isinstance(other, RpcError) and other.code is ErrorCode.IDEMPOTENCY_CONFLICT
    assert rows == 1 and inflight == {}


def test_a_duplicate_of_a_request_that_could_not_be_recorded_gets_its_error(anvil, tmp_path):
    (first, again), inflight, rows = _side_by_side(
        anvil, tmp_path, _params("lost", 1000), _params("lost", 1000), broken=True
    )
    for result in (first, again):
        assert isinstance(result, RpcError) and result.code is ErrorCode.UNAVAILABLE, result
    assert rows == 0 and inflight == {}


def test_the_in_flight_reply_is_not_shared_with_the_duplicate(anvil, tmp_path):
    """The duplicate's reply is its own dict: marking it `replayed` leaves the first reply as it was."""
    (first, again), _, _ = _side_by_side(anvil, tmp_path, _params("own", 1000), _params("own", 1000))
    assert again is not first and "replayed" not in first and again["replayed"] is True
