"""Signed audit checkpoints, and the witness that keeps the latest one and never goes back.

The keyed chain stops anyone without the master key from rewriting the log; it cannot stop the key
holder (root on the signer's host while it runs) from putting the log and its anchor back to an
earlier state of their own, or re-keying a shortened history. Only a copy held elsewhere can tell.
So the signer signs checkpoints (record count and head hash) with its companion identity key
(signer.identity), and the witness, kept on the companion's side, stores the latest and refuses any
that goes back: fewer records, or another head at a count it already holds. `owlia audit verify
--against-companion WITNESS` checks the log on disk against the witness the same way.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signer.fsperm import write_private_file
from signer.identity import SignerIdentity, signed_by

CHECKPOINT_DOMAIN = "owliabot-audit-checkpoint-v1"


class WitnessError(Exception):
    """The witness file cannot be read, or a checkpoint is not signed by the paired signer."""


def checkpoint_body(seq: int, head: str) -> dict[str, Any]:
    return {"seq": int(seq), "head": head}


def make_checkpoint(identity: SignerIdentity, seq: int, head: str) -> dict[str, Any]:
    body = checkpoint_body(seq, head)
    return {**body, "signer_sig": identity.sign(CHECKPOINT_DOMAIN, body)}


@dataclass
class Verdict:
    ok: bool
    seq: int
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "seq": self.seq, "problems": self.problems}


class Witness:
    """The companion's copy: one JSON file (0600) holding the latest checkpoint it accepted."""

    def __init__(self, path: Path, signer_key: str) -> None:
        self.path = Path(path)
        self.signer_key = signer_key

    def latest(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise WitnessError(f"{self.path}: unreadable witness file ({type(exc).__name__})") from None
        if not self._authentic(data):
            raise WitnessError(f"{self.path}: the stored checkpoint is not signed by this signer")
        return data

    def _authentic(self, cp: Any) -> bool:
        return (isinstance(cp, dict) and isinstance(cp.get("seq"), int) and isinstance(cp.get("head"), str)
                and signed_by(self.signer_key, CHECKPOINT_DOMAIN, checkpoint_body(cp["seq"], cp["head"]),
                              cp.get("signer_sig")))

    def offer(self, cp: Any) -> Verdict:
        """Keep `cp` if it is authentic and not behind what is held; else say why (the log went back)."""
        if not self._authentic(cp):
            return Verdict(False, -1, ["the checkpoint is not signed by the paired signer"])
        held = self.latest()
        if held is not None:
            if cp["seq"] < held["seq"]:
                return Verdict(False, cp["seq"], [f"the signer's audit log went back: it now ends at record "
                                                  f"{cp['seq']}, the companion saw record {held['seq']} (truncated "
                                                  "or rewritten)"])
            if cp["seq"] == held["seq"] and cp["head"] != held["head"]:
                return Verdict(False, cp["seq"], [f"record {cp['seq']} changed since the companion saw it (rewritten)"])
            if cp["seq"] == held["seq"]:
                return Verdict(True, cp["seq"])  # nothing new
        write_private_file(self.path, json.dumps({k: cp[k] for k in ("seq", "head", "signer_sig")}).encode())
        return Verdict(True, cp["seq"])


def check_against(conn: sqlite3.Connection, witness_path: Path) -> Verdict:
    """The log on disk still holds the record the companion last saw, with the same hash.

    The file is the companion's copy, which the companion only stored after checking the signer's
    signature; it is read here as given. A doctored copy can only raise a false alarm against an
    intact log, or hide a rollback from someone who controls the companion's files as well."""
    try:
        data = json.loads(Path(witness_path).read_text())
        seq, head = int(data["seq"]), str(data["head"])
    except FileNotFoundError:
        raise WitnessError(f"no witness file at {witness_path}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WitnessError(f"{witness_path}: unreadable witness file ({type(exc).__name__})") from None
    row = conn.execute("SELECT hash FROM audit WHERE seq=?", (seq,)).fetchone()
    if row is None:
        return Verdict(False, seq, [f"the companion saw record {seq}; the log no longer holds it (truncated)"])
    if row[0] != head:
        return Verdict(False, seq, [f"record {seq} is not the one the companion saw (rewritten)"])
    return Verdict(True, seq)
