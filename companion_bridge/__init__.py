"""Tier 1: the companion bridge (untrusted transport) and the reference companion app."""
