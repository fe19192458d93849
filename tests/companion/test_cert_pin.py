"""A bridge with a self-signed certificate: the pairing link carries its sha256 fingerprint and the
CLI companion pins it (instead of failing on an unknown authority, or trusting anything)."""

from __future__ import annotations

import pytest

from bot.devchain import free_port
from companion_bridge.companion.pairing import cert_fingerprint, parse_pair_link
from companion_bridge.server import BridgeOptions
from tests.companion.conftest import MAIN_PASS, BridgeThread
from tests.companion.webapp_support import pair_link_from_cli
from tests.fakes.certificates import self_signed

pytestmark = [pytest.mark.chain]


def test_the_cli_companion_pins_a_self_signed_bridge_by_the_fingerprint_in_the_link(tier1, tmp_path):
    cert, key = self_signed(tmp_path, "owlia-bridge-test", "bridge")
    (tmp_path / "other").mkdir()
    other_cert, _ = self_signed(tmp_path / "other", "owlia-bridge-test", "bridge")
    base = tier1.bridge.options
    options = BridgeOptions(
        home=tmp_path / "tls-bridge",
        signer_socket=base.signer_socket,
        signer_token=base.signer_token,
        host="127.0.0.1",
        port=free_port(),
        tls_cert=cert,
        tls_key=key,
        poll_timeout=2.0,
    )
    bridge = BridgeThread(options).start()
    stack = tier1.stack
    passfile = tmp_path / "pass"
    passfile.write_bytes(MAIN_PASS)
    passfile.chmod(0o600)
    url = f"https://127.0.0.1:{options.port}"
    try:
        out = stack.owlia(
            "companion",
            "init",
            "--dir",
            str(tmp_path / "c"),
            "--passphrase-file",
            str(passfile),
            "--scrypt-n",
            "1024",
        )
        assert out.returncode == 0, out.stderr

        # a link whose fingerprint is another certificate's: refused before anything is sent
        out = stack.owlia("companion", "pair", "--bridge", url, "--tls-cert", str(other_cert))
        wrong = pair_link_from_cli(out.stdout)
        out = stack.owlia("companion", "link", "--dir", str(tmp_path / "c"), wrong)
        assert out.returncode == 1 and "not the one in the pairing link" in out.stderr + out.stdout
        assert "Traceback" not in out.stderr

        out = stack.owlia("companion", "pair", "--bridge", url, "--tls-cert", str(cert))
        link = pair_link_from_cli(out.stdout)
        assert parse_pair_link(link).fingerprint == cert_fingerprint(cert)
        out = stack.owlia("companion", "link", "--dir", str(tmp_path / "c"), link)
        assert out.returncode == 0 and "paired as dev_" in out.stdout, out.stderr
        # and `outstanding` (which connects) goes on pinning it
        out = stack.owlia("companion", "outstanding", "--dir", str(tmp_path / "c"))
        assert out.returncode == 0 and "could not reach" not in out.stdout + out.stderr, (
            out.stdout + out.stderr
        )
        assert (
            "journal as last checked" not in out.stdout
        )  # a fresh signed quote came through the pinned link
    finally:
        bridge.stop()
