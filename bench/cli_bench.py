"""Command-line wall time, as a user runs the commands; prints one JSON object.
Run: .venv/bin/python bench/cli_bench.py [--runs 20] [--against OTHER_CHECKOUT]

- `owlia --help`;
- `owlia sign send` of 1 000 wei to the dev policy's address-book friend, to a real signer on a real
  anvil with a funded session key: auto-signed (exit 0), so each run is the whole command (start,
  imports, config, one signed request, the answer). The policy is `policies/defaults/dev.yaml` with
  its 30 signatures an hour raised, so every run signs;
- `python -c pass` from the same venv, the floor every command starts from.

With `--against`, the same commands of another checkout (its own `.venv`) run against the same
signer, paired: each round runs both trees back to back, alternating which goes first, so a load
change on a shared machine hits both alike. Medians and the ratio of medians are reported, for the
wall time and for the CPU time of the command's own process (the signer's work is not in it).

Bytecode as in a user's install (pip compiles every module when it installs): the commands write
and read their `.pyc` files under a temporary `PYTHONPYCACHEPREFIX`, never in either tree, and a
`PYTHONDONTWRITEBYTECODE` in the caller's environment is dropped for them; otherwise a checkout's
own modules would be compiled from source on every run. The untimed first run of each writes them.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import results

DEV_POLICY = ROOT / "policies" / "defaults" / "dev.yaml"
FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"  # in the dev policy's address book


def bench_policy(work: Path) -> Path:
    policy = yaml.safe_load(DEV_POLICY.read_text(encoding="utf-8"))
    policy["rate_limits"]["tx_per_hour"] = 1_000_000
    path = work / "policy.yaml"
    path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    return path


def commands(tree: Path, home: Path) -> dict[str, list[str]]:
    owlia, python = str(tree / ".venv/bin/owlia"), str(tree / ".venv/bin/python")
    return {
        "python_pass": [python, "-c", "pass"],
        "owlia_help": [owlia, "--help"],
        "owlia_sign_send": [owlia, "--home", str(home), "sign", "send", "--to", FRIEND, "--value", "1000wei"],
    }


def command_env(pycache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time, and the CPU time (user + system) of the command's own process: on a shared machine
    the wall time swings with the load, the CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, timeout=60, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{argv[0]} {' '.join(argv[1:4])}... exited {proc.returncode}: {proc.stderr.decode()[-500:]}"
        )
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    wall = sorted(w for w, _ in samples)
    return {
        "n": len(wall),
        "median_s": round(statistics.median(wall), 4),
        "min_s": round(wall[0], 4),
        "max_s": round(wall[-1], 4),
        "cpu_median_s": round(statistics.median(c for _, c in samples), 4),
    }


def measure(
    trees: dict[str, Path], home: Path, runs: int, env: dict[str, str]
) -> dict[str, dict[str, dict[str, float]]]:
    argvs = {label: commands(tree, home) for label, tree in trees.items()}
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {
        label: {name: [] for name in argvs[label]} for label in trees
    }
    labels = list(trees)
    for name in argvs[labels[0]]:
        for label in labels:  # one untimed run each: page cache and .pyc files warm
            timed(argvs[label][name], env)
        for i in range(runs):
            for label in labels if i % 2 == 0 else labels[::-1]:
                samples[label][name].append(timed(argvs[label][name], env))
    return {label: {name: summary(s) for name, s in by_name.items()} for label, by_name in samples.items()}


def _commit(tree: Path) -> str:
    """The checkout's commit, so a paired run says what it was paired with."""
    try:
        return results.commit(tree)
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20, help="timed runs per command and tree")
    parser.add_argument("--against", type=Path, help="another checkout with its own .venv, run paired")
    results.add_arguments(parser)
    args = parser.parse_args()
    from bot.devchain import DevChain, free_port
    from policies.kernel.files import write_private_file
    from tests.conftest import SignerStack

    trees = {"this": ROOT}
    if args.against:
        trees["against"] = args.against.resolve()
    result: dict[str, object] = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
        },
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "trees": {label: str(tree) for label, tree in trees.items()},
        "commits": {label: _commit(tree) for label, tree in trees.items()},
        "load_average_before": os.getloadavg(),
    }
    chain = DevChain(port=free_port()).start()
    signer = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "s"
            work.mkdir(mode=0o700)
            signer = SignerStack(work, chain.url, policy=bench_policy(Path(tmp))).start()
            signer.funded_session_key()
            (signer.home / "secrets").mkdir(mode=0o700, exist_ok=True)
            write_private_file(signer.home / "secrets" / "signer.token", signer.client_token("cli").encode())
            figures = measure(trees, signer.home, args.runs, command_env(Path(tmp) / "pycache"))
    finally:
        if signer is not None:
            signer.close()
        chain.stop()
    result.update(figures)
    if args.against:
        result["ratio_this_over_against"] = {
            name: round(figures["this"][name]["median_s"] / figures["against"][name]["median_s"], 3)
            for name in figures["this"]
        }
        result["cpu_ratio_this_over_against"] = {
            name: round(figures["this"][name]["cpu_median_s"] / figures["against"][name]["cpu_median_s"], 3)
            for name in figures["this"]
        }
    result["load_average_after"] = os.getloadavg()
    results.emit("cli", result, args)


if __name__ == "__main__":
    main()
