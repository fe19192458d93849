"""What a caller asks the signer to sign, and what the signer decodes it into.

The caller's words are never trusted: an intent is reduced to the raw call (chain, to, value,
data) and `policies.decode` derives every action from those bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

NATIVE = "native"
"""Asset id of a chain's native coin (ETH on Ethereum and anvil)."""


class Flag(str, Enum):
    """Facts the caller reports about where parts of a request came from.

    Flags can only make a decision stricter: the evaluator escalates on them, never relaxes.
    """

    RECIPIENT_FROM_UNTRUSTED = "recipient_from_untrusted_content"
    FROM_SKILL = "from_skill"
    FROM_HEARTBEAT = "from_heartbeat"


@dataclass(frozen=True, slots=True)
class Call:
    """The raw transaction a request reduces to. Addresses are lowercase 0x-hex, 42 chars."""

    chain_id: int
    to: str
    value: int
    data: bytes = b""
    flags: frozenset[Flag] = field(default_factory=frozenset)
    # Set when the request carries an EIP-7702 authorization list or asks for a raw-hash signature.
    authorization_list: bool = False
    raw_hash_signature: bool = False


# ---- decoded actions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Transfer:
    """Value leaving the wallet: native coin or an ERC-20 `transfer` / `transferFrom`."""

    chain_id: int
    asset: str  # NATIVE or the token contract address (lowercase)
    recipient: str
    amount: int


@dataclass(frozen=True, slots=True)
class Approval:
    """A grant of spending power: approve, increaseAllowance, permit, Permit2, setApprovalForAll."""

    chain_id: int
    asset: str  # token contract address
    spender: str
    amount: int  # for setApprovalForAll: 2**256 - 1 (it is unlimited by nature)
    method: str  # "approve" | "increaseAllowance" | "permit" | "permit2" | "setApprovalForAll"


@dataclass(frozen=True, slots=True)
class ContractCall:
    """Any call with calldata, recorded for target/selector allowlisting (nested calls included).

    `decoded` is True when the decoder knows the function (a known function whose arguments do not
    decode exactly is followed by a `decode.malformed` Forbidden, which denies the request); an
    undecoded call is denied unless the policy lists it under `opaque_calls`.
    """

    chain_id: int
    target: str
    selector: bytes  # 4 bytes
    depth: int  # 0 for the top-level call, +1 per nesting level
    value: int = 0  # native coin sent with this call
    decoded: bool = False


@dataclass(frozen=True, slots=True)
class Forbidden:
    """Something the signer refuses whatever the policy says (delegatecall, 7702, raw hash...)."""

    rule_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Swap:
    """A Uniswap v3 SwapRouter `exactInputSingle`, read from its arguments (policies.decode).

    `router` is the contract called; nothing about it is trusted until the policy lists it. When the
    call is paid in ETH, the router wraps the `value` sent to it and `token_in` is its WETH.
    """

    chain_id: int
    router: str
    token_in: str
    token_out: str
    fee: int
    recipient: str
    deadline: int
    amount_in: int
    amount_out_min: int
    sqrt_price_limit: int


@dataclass(frozen=True, slots=True)
class RouterPayout:
    """A router paying out what it holds: `unwrapWETH9`, `sweepToken` or `refundETH` (to msg.sender)."""

    chain_id: int
    router: str
    asset: str  # NATIVE for unwrapWETH9 and refundETH, the token for sweepToken
    recipient: str | None  # None: msg.sender (refundETH)
    method: str


@dataclass(frozen=True, slots=True)
class Wrap:
    """WETH `deposit()` (wrap: ETH in, WETH out) or `withdraw(amount)` (unwrap) on `contract`.

    Decoded on any contract; only a WETH the policy lists makes it a wrap (a vault's `withdraw`
    is checked as the contract call it is)."""

    chain_id: int
    contract: str
    amount: int
    unwrap: bool


@dataclass(frozen=True, slots=True)
class Claim:
    """A merkle distributor's `claim(index, account, amount, proof)`: it pays `amount` of its token to
    `account`, whoever sends it."""

    chain_id: int
    distributor: str
    index: int
    account: str
    amount: int


Action = Transfer | Approval | ContractCall | Forbidden | Swap | RouterPayout | Wrap | Claim


@dataclass(frozen=True, slots=True)
class Decoded:
    """Everything the signer derived from a `Call`, in the order it found it."""

    call: Call
    actions: tuple[Action, ...]

    def transfers(self) -> tuple[Transfer, ...]:
        return tuple(a for a in self.actions if isinstance(a, Transfer))

    def approvals(self) -> tuple[Approval, ...]:
        return tuple(a for a in self.actions if isinstance(a, Approval))

    def swaps(self) -> tuple[Swap, ...]:
        return tuple(a for a in self.actions if isinstance(a, Swap))

    def is_defi(self) -> bool:
        """Does the request swap, wrap, unwrap or claim? Those get a payer, quotes and a simulation."""
        return any(isinstance(a, (Swap, RouterPayout, Wrap, Claim)) for a in self.actions)
