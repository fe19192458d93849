"""The shared kernel: what several processes need, one copy each (see docs/architecture.md).

Private files and locks, addresses and EIP-55, keccak, safe JSON, terminal-safe text, a JSON-RPC
HTTP client. Every process may import it, the signer included, so it imports nothing of ours
beyond this package and nothing heavier than the signer's own dependencies.
"""
