"""Which addresses count as the user's own: trust is granted, never inferred.

An address is the user's when they wrote it in this conversation. Any other address the model
wants to pay, whether from a fetched page, a tool result, a forwarded message, memory, a contact
or the model's own text, is reported to the signer as `recipient_from_untrusted_content`, so the
policy escalates or denies it unless it is in the signer's address book. Scanning untrusted text
for addresses instead would miss any the page spells differently (`0X…`, a zero-width space
inside, no prefix) and the model puts back together.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_ADDRESS = re.compile(r"(?<![0-9a-fA-FxX])0[xX][0-9a-fA-F]{40}(?![0-9a-fA-F])")
# Someone else's words inside the user's message (a forwarded message): fenced by
# bot.workspace.prompt.wrap_untrusted, whose body cannot close the fence early.
_FENCED = re.compile(r"<untrusted\b[^>]*>.*?</untrusted>", re.DOTALL)


def addresses_in(text: str) -> set[str]:
    """Lowercased 0x addresses in `text` (not parts of longer hex strings such as tx hashes),
    read through invisible formatting characters."""
    if not text.isascii():
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return {"0x" + m.group(0)[2:].lower() for m in _ADDRESS.finditer(text)}


@dataclass
class Provenance:
    from_user: set[str] = field(default_factory=set)

    def saw_user_text(self, text: str) -> None:
        self.from_user |= addresses_in(_FENCED.sub(" ", text))

    def user_wrote(self, address: str) -> bool:
        return address.lower() in self.from_user
