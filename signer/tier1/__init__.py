"""Tier 1: what the owner's phone decides: pairing, escalations and their answers, the kill switch,
policy changes that wait for approval, and session-key top-ups (docs/architecture.md)."""
