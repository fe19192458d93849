"""The Tier 3 grants table, apart from signer.tier3.grants: the integrity triggers name it in every signer,
while the code that fills it (and its delegation parsing) loads only where a chain has Tier 3."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS tier3_grants(
    grant_id TEXT PRIMARY KEY, chain_id INTEGER NOT NULL, account TEXT NOT NULL, delegate TEXT NOT NULL,
    delegations TEXT NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL, ended_at REAL);
"""
