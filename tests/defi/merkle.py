"""A merkle airdrop as Uniswap's merkle-distributor builds it: leaf keccak256(abi.encodePacked(index,
account, amount)), pairs hashed in sorted order (OpenZeppelin MerkleProof), and the claims file its
`generate-merkle-root` script writes ({"merkleRoot", "claims": {account: {index, amount, proof}}})."""

from __future__ import annotations

from policies.kernel.keccak import keccak256


def leaf(index: int, account: str, amount: int) -> bytes:
    return keccak256(index.to_bytes(32, "big") + bytes.fromhex(account[2:]) + amount.to_bytes(32, "big"))


def _pair(a: bytes, b: bytes) -> bytes:
    return keccak256(a + b) if a <= b else keccak256(b + a)


def claims_file(entries: list[tuple[str, int]]) -> dict:
    leaves = [leaf(i, account, amount) for i, (account, amount) in enumerate(entries)]
    layers = [leaves]
    while len(layers[-1]) > 1:
        level = layers[-1]
        layers.append(
            [
                _pair(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                for i in range(0, len(level), 2)
            ]
        )
    claims = {}
    for i, (account, amount) in enumerate(entries):
        proof, position = [], i
        for level in layers[:-1]:
            sibling = position ^ 1
            if sibling < len(level):
                proof.append("0x" + level[sibling].hex())
            position //= 2
        claims[account] = {"index": i, "amount": hex(amount), "proof": proof}
    return {"merkleRoot": "0x" + layers[-1][0].hex(), "claims": claims}
