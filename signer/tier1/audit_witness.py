"""Signed audit checkpoints, and the witness that keeps the latest one and never goes back.

The keyed chain stops anyone without the master key from rewriting the log; it cannot stop the key
holder (root on the signer's host while it runs) from putting the log and its anchor back to an
earlier state of their own, or re-keying a shortened history. Only a copy held elsewhere can tell.
So the signer signs checkpoints (record count and head hash) with its companion identity key
(signer.tier1.identity), and the witness, kept on the companion's side, stores the latest and refuses any
that goes back: fewer records, or another head at a count it already holds. `owlia audit verify
--against-companion WITNESS` checks the log on disk against the witness the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

from signer.store.audit import hash_at
from signer.store.db import Connection
from signer.store.state_head import epoch_of
from signer.tier1.identity import SignerIdentity
from signer.wire.witness import (
    CHECKPOINT_DOMAIN,
    Checkpoint,
    CheckpointAt,
    Verdict,
    WitnessError,
    checkpoint_body,
)


def make_checkpoint(
    identity: SignerIdentity, seq: int, head: str, at: CheckpointAt | None = None, epoch: int = 0
) -> Checkpoint:
    body = checkpoint_body(seq, head, at, epoch)
    return {**body, "signer_sig": identity.sign(CHECKPOINT_DOMAIN, body)}


def check_against(conn: Connection, witness_path: Path) -> Verdict:
    """The log on disk still holds the record the companion last saw, with the same hash.

    The file is the companion's copy, which the companion only stored after checking the signer's
    signature; it is read here as given. A doctored copy can only raise a false alarm against an
    intact log, or hide a rollback from someone who controls the companion's files as well."""
    try:
        data = json.loads(Path(witness_path).read_text())
        seq, head, epoch = int(data["seq"]), str(data["head"]), int(data.get("epoch", 0))
    except FileNotFoundError:
        raise WitnessError(f"no witness file at {witness_path}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WitnessError(f"{witness_path}: unreadable witness file ({type(exc).__name__})") from None
    recorded = hash_at(conn, seq)
    if recorded is None:
        return Verdict(
            False, seq, [f"the companion saw record {seq}; the log no longer holds it (truncated)"]
        )
    if recorded != head:
        return Verdict(False, seq, [f"record {seq} is not the one the companion saw (rewritten)"])
    if epoch > epoch_of(conn):
        return Verdict(
            False,
            seq,
            [
                f"the companion saw commit {epoch}; the state on disk is from commit "
                f"{epoch_of(conn)} (an earlier copy of the database put back)"
            ],
        )
    return Verdict(True, seq)
