"""Tier 2: session keys that sign on their own within the policy (docs/architecture.md)."""
