"""Where each address the model might send funds to first came from.

An address that appears in untrusted content (a fetched page, a tool result, a forwarded message)
and never in the user's own words is reported to the signer as
`recipient_from_untrusted_content`, so the policy escalates or denies it. The model's own text does
not count as the user's: a hostile page can make it repeat anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ADDRESS = re.compile(r"(?<![0-9a-fA-Fx])0x[0-9a-fA-F]{40}(?![0-9a-fA-F])")


def addresses_in(text: str) -> set[str]:
    """Lowercased 0x addresses in `text` (not parts of longer hex strings such as tx hashes)."""
    return {m.group(0).lower() for m in _ADDRESS.finditer(text)}


@dataclass
class Provenance:
    from_user: set[str] = field(default_factory=set)
    from_untrusted: set[str] = field(default_factory=set)

    def saw_user_text(self, text: str) -> None:
        self.from_user |= addresses_in(text)

    def saw_untrusted(self, text: str) -> None:
        self.from_untrusted |= addresses_in(text)

    def is_untrusted(self, address: str) -> bool:
        """True if the address came from untrusted content and the user never wrote it."""
        key = address.lower()
        return key in self.from_untrusted and key not in self.from_user
