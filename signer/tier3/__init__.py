"""Tier 3: the smart-account lane, delegations the main key granted and the session key redeems
(docs/tier3.md)."""
