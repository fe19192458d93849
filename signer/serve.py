"""`owlia signer serve` as its own small program: the daemon without the command-line machinery.

`owlia signer serve` (and `python -m signer.cli ... signer serve`) parse their arguments with typer
and click, which would otherwise stay in the daemon's memory for its whole life (about 6 MB of the
signer's resident size). When the passphrase comes from a file or the environment, that command
replaces its process with this one (`exec`: same pid, same environment, no secret in between, since
nothing has been unlocked yet); a passphrase typed at a prompt is read and used in the command's own
process, as before. Both run `run_daemon`.

    python -m signer.serve --home HOME [--passphrase-file FILE]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from policies.kernel.passphrase import PassphraseError, read_passphrase
from policies.kernel.pydantic_plugins import plugins_off
from signer.socket_probe import SocketPath, probe
from signer.wire.settings import KEYSTORE, ConfigError, SignerConfig, SignerPaths, load_signer_config

# One request at a time: the loop's share of a request did not show in the daemon's latency, and
# asyncio's own loop keeps libuv (and 2 MB) out of the process that holds the keys (docs/benchmarks.md).
DAEMON_LOOP = "asyncio"


class ServeError(Exception):
    """What stops the daemon from starting, said so that the operator knows what to do."""


def locate(home: Path) -> tuple[SignerPaths, SignerConfig]:
    """The signer's layout and settings from HOME's config; `ServeError` without a keystore."""
    try:
        config = load_signer_config(home)
    except ConfigError as exc:
        raise ServeError(str(exc)) from None
    paths = SignerPaths.from_config(home, config)
    if not (paths.home / KEYSTORE).exists():
        raise ServeError(f"no keystore in {paths.home}: run `owlia signer init` first")
    _socket_free(paths.socket)
    return paths, config


def _socket_free(path: Path) -> None:
    """`ServeError` for a socket path a signer could not take, said before the keystore is unlocked.
    The server checks again when it binds (signer/server.py); a stale socket is left for it to replace."""
    try:
        found = probe(path, timeout=2)
    except OSError:  # not reachable, or no answer: the server's own check words that
        return
    if found is SocketPath.NOT_A_SOCKET:
        raise ServeError(f"{path} exists and is not a socket: move it away, then start the signer")
    if found is SocketPath.LIVE:
        raise ServeError(
            f"another signer is already listening on {path}: one signer per home; stop that one "
            "first (`owlia signer status` asks it how it is)"
        )


def run_daemon(paths: SignerPaths, config: SignerConfig, passphrase: bytearray) -> None:
    """Unlock, start and serve until SIGTERM or SIGINT; `ServeError` if it cannot start."""
    # The daemon is imported here, not with this module: `owlia signer serve` imports this module only to
    # locate the home and exec `python -m signer.serve`, whose main turns pydantic's plugins off first.
    import logging  # lazy: 129 ms, 17988 KiB (6 imports)

    from policies.kernel.aio import run as run_loop
    from policies.loader import PolicyError
    from signer.daemon import Daemon, serve_forever
    from signer.keystore import KeystoreError
    from signer.store.guard import IntegrityRefused

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        daemon = Daemon(paths, config, passphrase)
    except (KeystoreError, PolicyError, PermissionError, IntegrityRefused) as exc:
        raise ServeError(str(exc)) from None
    print(f"signer unlocked; serving on {paths.socket}", file=sys.stderr, flush=True)
    run_loop(serve_forever(daemon), prefer=DAEMON_LOOP)


def exec_argv(home: Path, passphrase_file: Path | None) -> list[str]:
    """The command line that replaces `owlia signer serve`'s process: this interpreter with its own
    flags (`-X`, `-I`, ...), this module, the resolved home."""
    flags: list[str] = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    extra = ["--passphrase-file", str(passphrase_file)] if passphrase_file is not None else []
    return [sys.executable, *flags, "-m", "signer.serve", "--home", str(home), *extra]


def load_no_pydantic_plugins() -> None:
    """Before the first model is built: no pydantic plugin (code any installed package can name,
    which then sees every value validated) ever loads into the signer, whatever the environment
    names, and neither does the package-metadata reader pydantic's loader imports (about 1.8 MB
    held for the daemon's whole life; policies/kernel/pydantic_plugins.py)."""
    plugins_off(whatever_the_environment_says=True)


USAGE = "usage: python -m signer.serve --home HOME [--passphrase-file FILE]"
OPTIONS = ("--home", "--passphrase-file")


def parse_args(argv: list[str]) -> dict[str, Path]:
    """`--home HOME` and `--passphrase-file FILE` (either also as `--opt=value`), nothing else.

    Two options do not need argparse, which with gettext, shutil and zlib would stay in the
    daemon's memory for its whole life (about 0.4 MB of resident size, measured). `UsageError`
    says what is wrong; `-h` / `--help` raises `HelpWanted`."""
    found: dict[str, Path] = {}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            raise HelpWanted
        name, has_value, value = arg.partition("=")
        if name not in OPTIONS:
            raise UsageError(f"unknown argument {arg[:64]!r}")
        if name in found:
            raise UsageError(f"{name} given twice")
        if not has_value:
            if not rest or rest[0].startswith("--"):
                raise UsageError(f"{name} needs a value")
            value = rest.pop(0)
        if not value:
            raise UsageError(f"{name} needs a value")
        found[name] = Path(value)
    if "--home" not in found:
        raise UsageError("--home is required")
    return found


class UsageError(Exception):
    """A command line this program does not accept."""


class HelpWanted(Exception):
    """`-h` or `--help`: print the usage and stop."""


def main(argv: list[str] | None = None) -> int:
    load_no_pydantic_plugins()

    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except HelpWanted:
        print(
            f"{USAGE}\n\n{__doc__.splitlines()[0]}\n\n  --home HOME             the OwliaBot home (config.yaml, "
            "signer/)\n  --passphrase-file FILE  0600 file holding the passphrase (else OWLIA_SIGNER_PASSPHRASE; "
            "this program never prompts)"
        )
        return 0
    except UsageError as exc:
        print(f"{USAGE}\nerror: {exc}", file=sys.stderr)
        return 2
    try:
        paths, config = locate(args["--home"])
        run_daemon(paths, config, read_passphrase(file=args.get("--passphrase-file"), prompt=False))
    except (ServeError, PassphraseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
