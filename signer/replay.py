"""Re-run every recorded decision from the audit log alone and report any that differ.

Each `sign.decided` record holds the decoded call, the ledger snapshot and the policy hash; each
policy the signer ever ran is in a `policy.loaded` record. Same inputs, same pure evaluator:
the same decision, or the log (or the evaluator) has been tampered with.
"""

from __future__ import annotations

import json
from typing import NotRequired, TypedDict

from policies.decode import decode
from policies.evaluate import evaluate
from policies.model import Policy
from signer.records import DecidedRecord, call_from_json, context_from_json
from signer.store.audit import records_of_kinds
from signer.store.db import Connection


class Mismatch(TypedDict):
    """A recorded decision the evaluator does not reproduce, or cannot (its policy is not in the log)."""

    seq: int
    problem: NotRequired[str]
    request_id: NotRequired[str]
    recorded: NotRequired[list[str]]  # outcome, rule id
    replayed: NotRequired[list[str]]


def replay_decisions(conn: Connection) -> list[Mismatch]:
    policies: dict[str, Policy] = {}
    mismatches: list[Mismatch] = []
    for seq, kind, body_text in records_of_kinds(conn, ("policy.loaded", "sign.decided")):
        if kind == "policy.loaded":
            loaded = json.loads(body_text)
            policies[loaded["policy_hash"]] = Policy.model_validate(loaded["policy"])
            continue
        body: DecidedRecord = json.loads(body_text)  # as the engine wrote it, in the keyed log
        if body.get("pre_check"):
            continue  # decided before the policy ran (e.g. no RPC for the chain); nothing to replay
        policy = policies.get(body["policy_hash"])
        if policy is None:
            mismatches.append({"seq": seq, "problem": f"policy {body['policy_hash'][:12]} is not in the log"})
            continue
        decision = evaluate(policy, decode(call_from_json(body["call"])), context_from_json(body["context"]))
        recorded = body.get("policy_decision") or body["decision"]  # the policy's own answer, if overridden
        if (decision.outcome.value, decision.rule_id) != (recorded["outcome"], recorded["rule_id"]):
            mismatches.append(
                {
                    "seq": seq,
                    "request_id": body.get("request_id"),
                    "recorded": [recorded["outcome"], recorded["rule_id"]],
                    "replayed": [decision.outcome.value, decision.rule_id],
                }
            )
    return mismatches
