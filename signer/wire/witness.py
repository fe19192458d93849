"""The audit checkpoint as the companion keeps it: its format, and the witness that never goes back.

The signer signs checkpoints (record count and head hash, and the state head's epoch: one more per
commit, signer.store.state_head) with its companion identity key; the companion keeps the latest it
accepted and refuses any that goes back (fewer records, another head at a count it already holds,
or a lower epoch: state put back while the log stayed). This half is a wire format: the companion imports it without
any of the signer's core (signer.tier1.audit_witness makes checkpoints and checks the log against one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Required, TypedDict, cast

from policies.kernel.files import write_private_file
from signer.wire.messages import signed_by

__all__ = [
    "CHECKPOINT_DOMAIN",
    "Checkpoint",
    "CheckpointAt",
    "CheckpointBody",
    "Verdict",
    "VerdictJson",
    "Witness",
    "WitnessError",
    "checkpoint_body",
]

CHECKPOINT_DOMAIN = "owliabot-audit-checkpoint-v1"


class WitnessError(Exception):
    """The witness file cannot be read, or a checkpoint is not signed by the paired signer."""


class CheckpointAt(TypedDict):
    """The record the witness last saw, and the hash the log holds there."""

    seq: int
    hash: str


class CheckpointBody(TypedDict, total=False):
    seq: Required[int]
    head: Required[str]
    at: CheckpointAt
    epoch: int


class Checkpoint(CheckpointBody):
    """A checkpoint as the signer sends it and the witness file keeps it."""

    signer_sig: str


class VerdictJson(TypedDict):
    ok: bool
    seq: int
    problems: list[str]


def checkpoint_body(seq: int, head: str, at: CheckpointAt | None = None, epoch: int = 0) -> CheckpointBody:
    """What the signer signs. `at` is the hash the log holds at the record the witness last saw
    ({"seq", "hash"}): only with it can a longer log be told to extend that record, rather than to be
    a shortened history that grew back past it. `epoch` (0: a signer from before the state head,
    left out of the body) grows with every commit, including those that append no record."""
    body: CheckpointBody = {"seq": int(seq), "head": head}
    if at is not None:
        body["at"] = {"seq": int(at["seq"]), "hash": at["hash"]}
    if epoch:
        body["epoch"] = int(epoch)
    return body


@dataclass
class Verdict:
    ok: bool
    seq: int
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> VerdictJson:
        return {"ok": self.ok, "seq": self.seq, "problems": self.problems}


class Witness:
    """The companion's copy: one JSON file (0600) holding the latest checkpoint it accepted."""

    def __init__(self, path: Path, signer_key: str) -> None:
        self.path = Path(path)
        self.signer_key = signer_key

    def latest(self) -> Checkpoint | None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise WitnessError(f"{self.path}: unreadable witness file ({type(exc).__name__})") from None
        if not isinstance(data, dict) or not self._authentic(data):
            raise WitnessError(f"{self.path}: the stored checkpoint is not signed by this signer")
        return cast(Checkpoint, data)  # its shape checked with its signature

    def held_seq(self) -> int | None:
        """The record count of the checkpoint held, which the signer is asked to bind its next one to."""
        try:
            held = self.latest()
        except WitnessError:
            return None
        return None if held is None else int(held["seq"])

    def _authentic(self, cp: Any) -> bool:
        at = cp.get("at") if isinstance(cp, dict) else None
        if at is not None and not (
            isinstance(at, dict) and isinstance(at.get("seq"), int) and isinstance(at.get("hash"), str)
        ):
            return False
        epoch = cp.get("epoch", 0) if isinstance(cp, dict) else 0
        return (
            isinstance(cp, dict)
            and isinstance(cp.get("seq"), int)
            and isinstance(cp.get("head"), str)
            and type(epoch) is int
            and epoch >= 0
            and signed_by(
                self.signer_key,
                CHECKPOINT_DOMAIN,
                checkpoint_body(
                    cp["seq"],
                    cp["head"],
                    None if at is None else CheckpointAt(seq=at["seq"], hash=at["hash"]),
                    epoch,
                ),
                cp.get("signer_sig"),
            )
        )

    def offer(self, cp: Any) -> Verdict:
        """Keep `cp` if it is authentic and not behind what is held; else say why (the log went back)."""
        if not self._authentic(cp):
            return Verdict(False, -1, ["the checkpoint is not signed by the paired signer"])
        held = self.latest()
        if held is not None:
            if cp.get("epoch", 0) < held.get("epoch", 0):
                return Verdict(
                    False,
                    cp["seq"],
                    [
                        f"the signer's state went back: it is now at commit {cp.get('epoch', 0)}, "
                        f"the companion saw commit {held['epoch']} (an earlier copy of its "
                        "database put back)"
                    ],
                )
            if cp["seq"] < held["seq"]:
                return Verdict(
                    False,
                    cp["seq"],
                    [
                        f"the signer's audit log went back: it now ends at record "
                        f"{cp['seq']}, the companion saw record {held['seq']} (truncated "
                        "or rewritten)"
                    ],
                )
            if cp["seq"] == held["seq"] and cp["head"] != held["head"]:
                return Verdict(
                    False, cp["seq"], [f"record {cp['seq']} changed since the companion saw it (rewritten)"]
                )
            if cp["seq"] == held["seq"]:
                if cp.get("epoch", 0) == held.get("epoch", 0):
                    return Verdict(True, cp["seq"])  # nothing new
                # the same log, later commits (none of them recorded): kept, so they cannot be undone unseen
            elif cp.get("at") != {"seq": held["seq"], "hash": held["head"]}:
                # a longer log that does not show it still holds the record seen: it may be a shortened
                # history grown back past it (truncate, then let the signer append)
                return Verdict(
                    False,
                    cp["seq"],
                    [
                        f"the signer's audit log does not show record {held['seq']} as "
                        "the companion saw it (truncated or rewritten, then grown back)"
                    ],
                )
        write_private_file(
            self.path,
            json.dumps({k: cp[k] for k in ("seq", "head", "at", "epoch", "signer_sig") if k in cp}).encode(),
        )
        return Verdict(True, cp["seq"])
