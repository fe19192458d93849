"""The signer's wire part: the only thing the bot, the bridge and the companion import from the signer.

Protocol models and the client for the signer's socket, the config file's format (where the socket
is), the approval request the companion is shown, the device and identity message formats both
ends sign and check, and the EIP-1559 encoding the companion signs the main key's transactions
with. Nothing here opens the keystore, the store or the audit log.

Each module names its public API in `__all__` and re-exports nothing (mypy: `implicit_reexport = false`):
import a name from the module that defines it.
"""

__all__: list[str] = []
