"""The reference companion app: keystore, device key, bridge client, terminal prompt."""
