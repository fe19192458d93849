"""`owlia policy`: validate a policy file and preview decisions without signing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from policies.kernel.cli import fail, print_json

app = typer.Typer(help="Check policy files and preview decisions.", no_args_is_help=True)


@app.command("validate")
def validate(file: Path = typer.Argument(..., exists=True, dir_okay=False, help="Policy YAML file.")) -> None:
    """Validate a policy file; errors name the bad field."""
    from policies.loader import PolicyError, load_policy  # lazy: 99 ms, 14888 KiB

    try:
        policy = load_policy(file)
    except PolicyError as exc:
        fail(str(exc))
    print_json({"valid": True, "policy_hash": policy.policy_hash()})


@app.command("check")
def check(
    policy_file: Path = typer.Option(..., "--policy", exists=True, dir_okay=False, help="Policy YAML file."),
    intent: str = typer.Option(..., "--intent", help="Intent JSON, as sent to sign.request (or @FILE)."),
    spent: Optional[str] = typer.Option(None, help='Already spent, JSON {"CHAIN:ASSET:SECONDS": amount}.'),
    session_key_ttl: int = typer.Option(3600, help="Seconds the session key has left (0: none)."),
) -> None:
    """Print the decision for an intent without signing anything. Exit 0 allow, 3 escalate, 4 deny."""
    import time  # lazy: 122 ms, 15628 KiB (11 imports)

    from pydantic import ValidationError

    from policies.context import EvalContext
    from policies.decision import Outcome
    from policies.decode import decode
    from policies.evaluate import evaluate
    from policies.loader import PolicyError, load_policy
    from signer.intents import intent_to_call
    from signer.records import decision_to_json
    from signer.summary import Summarizer
    from signer.wire.requests import Intent

    try:
        policy = load_policy(policy_file)
    except PolicyError as exc:
        fail(str(exc))
    text = _intent_text(intent)
    try:
        parsed = Intent.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'intent'}: {e['msg']}"
            for e in exc.errors(include_url=False)[:8]
        )
        fail(f"bad intent: {problems} (see docs/signer-protocol.md for the intent fields)")
    spent_map = _spent(spent)
    now = time.time()
    decoded = decode(intent_to_call(parsed, "cli"))
    ctx = EvalContext(
        now=now, spent=spent_map, session_key_expires_at=now + session_key_ttl if session_key_ttl else None
    )
    decision = evaluate(policy, decoded, ctx)
    print_json({"summary": Summarizer(policy)(decoded), "decision": decision_to_json(decision)})
    raise typer.Exit({Outcome.ALLOW: 0, Outcome.ESCALATE: 3, Outcome.DENY: 4}[decision.outcome])


def _intent_text(intent: str) -> str:
    """`--intent`'s JSON: the text itself, or the file named after `@`."""
    if not intent.startswith("@"):
        return intent
    try:
        return Path(intent[1:]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        fail(
            f"cannot read the intent file {intent[1:]} ({why}): give --intent @FILE naming a JSON file, "
            "or the JSON itself"
        )


def _spent(spent: str | None) -> dict[tuple[int, str, int], int]:
    """`--spent` as the evaluator's map: (chain id, asset, window seconds) -> base units already spent."""
    example = (
        'e.g. --spent \'{"31337:native:86400": "1000"}\' (chain id:asset:window seconds: base units spent)'
    )
    try:
        raw = json.loads(spent or "{}")
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        out: dict[tuple[int, str, int], int] = {}
        for key, value in raw.items():
            chain, asset, seconds = key.split(":")
            amount = int(value)
            if amount < 0 or isinstance(value, (bool, float)):
                raise ValueError(f"{value!r} is not a whole number of base units >= 0")
            out[(int(chain), asset.lower(), int(seconds))] = amount
        return out
    except (ValueError, TypeError) as exc:
        fail(f"bad --spent ({exc}): {example}")
