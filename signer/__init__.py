"""The signer daemon: the only process that holds keys. See docs/signer-protocol.md."""

__version__ = "0.1.0"
