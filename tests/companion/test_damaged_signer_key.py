"""A damaged signer key in a pairing link (a stray quote, a lost digit, not hex) is refused by
`owlia companion link` before anything is sent or written; one damaged in companion.json stops the
companion loudly instead of letting it drop every request and keep no audit witness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings, strategies as st

from companion_bridge.companion.pairing import pair_link, signer_key_problem
from policies.kernel.files import write_private_file
from tests.companion.conftest import MAIN_PASS


def owlia(home: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OWLIA_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def good_key() -> str:
    return Ed25519PrivateKey.generate().public_key().public_bytes_raw().hex()


def companion_dir(tmp_path: Path) -> tuple[Path, Path]:
    home, cdir = tmp_path / "home", tmp_path / "phone"
    home.mkdir(mode=0o700)
    passfile = tmp_path / "pass"
    write_private_file(passfile, MAIN_PASS)
    made = owlia(
        home,
        "companion",
        "init",
        "--dir",
        str(cdir),
        "--passphrase-file",
        str(passfile),
        "--scrypt-n",
        "1024",
    )
    assert made.returncode == 0, made.stderr
    return home, cdir


def test_link_refuses_a_damaged_signer_key_and_writes_nothing(tmp_path):
    home, cdir = companion_dir(tmp_path)
    before = snapshot(cdir)
    key = good_key()
    # the bridge address is a closed port: a refusal must come before any connection is tried
    link = pair_link("http://127.0.0.1:9", "pair_0123456789abcdef", "ABCD-EFGH", key)
    damaged = {
        "a stray quote": (link + "'", "65 characters"),  # the link's last field is the signer key
        "a lost digit": (link[:-1], "63 characters"),
        "not hex": (link[:-64] + "g" + key[1:], "not 64 lowercase hex digits"),
        "upper case": (link[:-64] + key.upper(), "not 64 lowercase hex digits"),
        "legacy form, quote": (
            f'owlia-pair://v1?bridge=http://127.0.0.1:9&id=pair_0123456789abcdef&code=ABCD&signer={key}"',
            "65 characters",
        ),
    }
    for name, (uri, why) in damaged.items():
        out = owlia(home, "companion", "link", uri, "--dir", str(cdir))
        assert out.returncode == 1, (name, out.stdout, out.stderr)
        assert "signer key is damaged" in out.stderr and why in out.stderr, (name, out.stderr)
        assert "Copy the whole link again" in out.stderr
        assert "could not reach" not in out.stderr and "cannot reach" not in out.stderr, name
        assert snapshot(cdir) == before, name  # nothing written


def test_a_damaged_stored_signer_key_stops_the_companion_loudly_but_not_a_freeze(tmp_path):
    home, cdir = companion_dir(tmp_path)
    state = json.loads((cdir / "companion.json").read_text())
    state.update(
        device_id="dev_0123456789abcdef", bridge_url="http://127.0.0.1:9", signer_key=good_key() + "'"
    )
    write_private_file(cdir / "companion.json", json.dumps(state).encode())
    for command in (["run", "--once", "--answers", "deny"], ["outstanding"], ["topup", "sk_1"], ["unfreeze"]):
        out = owlia(home, "companion", *command, "--dir", str(cdir))
        assert out.returncode == 1, (command, out.stdout, out.stderr)
        assert "signer key stored in" in out.stderr and "is damaged (it has 65 characters" in out.stderr, (
            command
        )
        assert "Pair again" in out.stderr and "could not reach" not in out.stderr, command
    # the kill switch is signed by the device key alone: it is still tried, with the warning
    out = owlia(home, "companion", "freeze", "--dir", str(cdir))
    assert out.returncode == 1
    assert "WARNING: the signer key stored in" in out.stderr and "could not reach the bridge" in out.stderr


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789abcdefABCDEF'\" g", max_size=70), st.data())
def test_only_a_64_digit_lowercase_hex_key_passes(text, data):
    problem = signer_key_problem(text)
    if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
        assert problem is None or problem == "it is not an Ed25519 public key"
    else:
        assert problem is not None
    key = good_key()
    assert signer_key_problem(key) is None
    at = data.draw(st.integers(0, 63))
    swapped = key[:at] + data.draw(st.sampled_from(["'", '"', " ", "G", "A"])) + key[at + 1 :]
    assert signer_key_problem(swapped) is not None
    assert signer_key_problem(key + data.draw(st.sampled_from(["'", '"', "0", " "]))) is not None
