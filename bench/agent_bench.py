"""Bot benchmarks; prints one JSON object. Run: .venv/bin/python bench/agent_bench.py [--dists]

Everything runs the default configuration (control plane on, events and metrics recorded).

- service: the real `owlia start` process as a user runs it, with Telegram configured against the
  local Telegram Bot API server (tests/fakes/telegram_server.py, a thread of this process), an
  anthropic profile against the local LLM server (tests/fakes/llm_server.py, its own process), and
  a real signer process on a real anvil, so /health can answer 200: cold start to the first
  `/health` 200, idle RSS, the first reply after start, per-message latency (update queued on the
  Bot API server -> final reply text received there), RSS every 100 messages (`--rss-every`) and
  how much it still grew over the second half of the run (flat after warm-up: about 0);
- overhead per message in process: inbound message -> reply through BotCore, the agent loop, the
  bot's own Anthropic client and the fake LLM (text only, and with one read-tool round);
- `owlia sign send` (a small allowed transfer to that signer) and `owlia --help` wall time;
- memory search over 10 000 notes (SQLite FTS5); (with --dists) installed distributions in a clean venv.
Peers (nanobot-ai, OpenClaw) are measured by bench/peers/measure_peers.py on its own; this script
never prints their committed figures, which come from another machine and date.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import results
from bench.skills_bench import percentiles
from bot.channels.base import Inbound
from bot.channels.console import ConsoleSink, LineReader
from bot.config import load_bot_config
from bot.memory import bench_search
from bot.runtime.assemble import build_runtime
from bot.runtime.llm_pool import Secret
from tests.processes import stop

KEY = "sk-ant-api03-" + "b" * 40


class FakeInProcess:
    """The fake LLM server in its own process (`python -m tests.fakes.llm_server MODE`)."""

    def __init__(self, mode: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.llm_server", mode],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = self.proc.stdout.readline().strip()

    def __enter__(self) -> FakeInProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def write_home(home: Path, url: str) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    config = {
        "bot": {
            "llm": {"profiles": [{"name": "main", "model": "anthropic/claude-bench", "base_url": url}]},
            "gateway": {"port": 0},
        }
    }  # the default: control plane on (port 0: free)
    (home / "config.yaml").write_text(yaml.safe_dump(config))


async def overhead(home: Path, n: int) -> dict[str, float]:
    async def lookup(name: str) -> Secret | None:
        return Secret("api_key", KEY) if name == "anthropic" else None

    runtime = build_runtime(home, load_bot_config(home), lookup=lookup)
    sink = ConsoleSink(io.StringIO(), LineReader(io.StringIO(""), asyncio.get_running_loop()))
    samples: list[float] = []
    try:
        for i in range(n + 20):
            inbound = Inbound("console", "bench", uuid.uuid4().hex, f"message {i}", received_at=time.time())
            start = time.perf_counter()
            await runtime.core.handle(inbound, sink)
            if i >= 20:  # the first messages warm the client and connection pool
                samples.append((time.perf_counter() - start) * 1000)
    finally:
        await runtime.close()
    return percentiles(samples)


def rss_kb(pid: int) -> int:
    total = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            total += int(line.split()[1])
    return total


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


TG_USER = 10_000
FINAL = "Hi there."  # what the fake LLM in "text" mode answers, streamed as "Hi " + "there."


def _final_after(tg, since: int) -> float | None:
    """When the Bot API server received the final reply text, among calls after index `since`."""
    for call in tg.calls[since:]:
        if (
            call.method in ("sendMessage", "editMessageText")
            and call.status == 200
            and call.params.get("text") == FINAL
        ):
            return call.at
    return None


def _reply_s(tg, text: str, timeout: float = 30.0) -> float:
    since = len(tg.calls)
    start = time.monotonic()
    tg.message(TG_USER, text)
    while (done := _final_after(tg, since)) is None:
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"no reply to {text!r} within {timeout:g} s")
        time.sleep(0.001)  # detection only: the time is the server's own clock
    return done - start


def _health_status(url: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


class ServiceStack:
    """anvil + `owlia signer serve` + the local Telegram and LLM servers, and a home for the bot."""

    def __init__(self, work: Path, llm_url: str) -> None:
        from bot.devchain import DevChain, free_port
        from tests.conftest import SignerStack
        from tests.fakes.telegram_server import FakeTelegramServer

        work.mkdir(mode=0o700)
        self.chain = DevChain(port=free_port()).start()
        self.signer = self.tg = None
        try:
            self.signer = SignerStack(work, self.chain.url).start()
            self.tg = FakeTelegramServer().__enter__()
            self._configure(llm_url)
        except BaseException:
            self.close()  # never leave anvil or the signer running
            raise

    def _configure(self, llm_url: str) -> None:
        """The bot's part of the home: workspace, signer client token, config.yaml."""
        from bot.devchain import free_port
        from bot.workspace import create_workspace
        from policies.kernel.files import write_private_file

        self.home = self.signer.home
        self.port = free_port()
        create_workspace(self.home / "workspace")
        (self.home / "secrets").mkdir(mode=0o700, exist_ok=True)
        write_private_file(self.home / "secrets" / "signer.token", self.signer.client_token("bot").encode())
        config = yaml.safe_load((self.home / "config.yaml").read_text())
        config["bot"] = {
            "llm": {"profiles": [{"name": "main", "model": "anthropic/claude-bench", "base_url": llm_url}]},
            "prices": {"static": {"ETH": "3000"}},
            "gateway": {"port": self.port},
            "channels": {"telegram": {"api_base": self.tg.url, "allow_from": [str(TG_USER)]}},
        }
        (self.home / "config.yaml").write_text(yaml.safe_dump(config))

    def close(self) -> None:
        if self.tg is not None:
            self.tg.__exit__(None, None, None)
        if self.signer is not None:
            self.signer.close()
        self.chain.stop()


PACKAGES = ("bot", "signer", "policies", "skills_runtime", "companion_bridge")


def ensure_bytecode() -> None:
    """Compile the project's modules, as `pip install` does: with PYTHONDONTWRITEBYTECODE set (CI
    shells often do) every start would otherwise compile them from source (~0.08 s here)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *(str(ROOT / p) for p in PACKAGES)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def service(
    stack: ServiceStack, messages: int, starts: int, idle_wait: float, rss_every: int = 100
) -> dict[str, object]:
    """`owlia start` as a user runs it; `starts` cold starts (median), then one long run."""
    ensure_bytecode()
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "TELEGRAM_BOT_TOKEN": stack.tg.token}
    argv = [str(ROOT / ".venv/bin/owlia"), "--home", str(stack.home), "start"]
    health = f"http://127.0.0.1:{stack.port}/health"
    cold: list[float] = []
    cpu: list[float] = []  # user+sys at the first 200: steadier than wall time on a busy machine
    for run in range(starts):
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        try:
            while (status := _health_status(health)) != 200:
                if proc.poll() is not None or time.perf_counter() - start > 60:
                    raise RuntimeError(f"owlia start gave no /health 200 (last status {status})")
                time.sleep(0.002)
            cold.append(time.perf_counter() - start)
            cpu.append(_cpu_s(proc.pid))
            if run < starts - 1:
                continue
            time.sleep(idle_wait)
            idle = rss_kb(proc.pid)
            first = _reply_s(stack.tg, "first message")
            latencies: list[float] = []
            curve: list[tuple[int, int]] = []  # (messages handled, VmRSS kB)
            for i in range(messages):
                latencies.append(_reply_s(stack.tg, f"message {i}") * 1000)
                if (i + 1) % rss_every == 0:
                    curve.append((i + 1, rss_kb(proc.pid)))
            after = rss_kb(proc.pid)
        finally:
            stop(proc)
    warm = latencies[min(20, len(latencies) // 2) :]
    result: dict[str, object] = {
        "measures": "`owlia start`, Telegram + anthropic profile + signer + control plane, default config",
        "cold_start_to_health_200_s": {
            "median": round(statistics.median(cold), 3),
            "runs": [round(c, 3) for c in cold],
        },
        "cold_start_cpu_s": {"median": round(statistics.median(cpu), 3), "runs": [round(c, 3) for c in cpu]},
        "idle_rss_mb": round(idle / 1024, 1),
        "first_reply_after_start_s": round(first, 3),
        f"rss_after_{messages}_messages_mb": round(after / 1024, 1),
        f"rss_every_{rss_every}_messages_mb": [round(kb / 1024, 1) for _, kb in curve],
    }
    if len(curve) >= 2:  # from the first point at half the run or later to the last: what still grows
        half = next(point for point in curve if point[0] >= messages / 2)
        result["rss_growth_second_half"] = {
            "from_message": half[0],
            "to_message": curve[-1][0],
            "mb": round((curve[-1][1] - half[1]) / 1024, 2),
        }
    if warm:
        result["telegram_reply"] = percentiles(warm)
    return result


def help_time(runs: int = 10, *args: str) -> dict[str, float]:
    samples = []
    for i in range(runs + 1):
        start = time.perf_counter()
        subprocess.run(
            [str(ROOT / ".venv/bin/owlia"), *(args or ("--help",))], capture_output=True, check=True
        )
        if i:
            samples.append(time.perf_counter() - start)
    return {"median_s": round(statistics.median(samples), 3), "max_s": round(max(samples), 3)}


def sign_send_time(stack: ServiceStack, runs: int) -> dict[str, object]:
    """`owlia sign send` of a small transfer the dev policy allows, to the running signer: the whole
    command as a user runs it (start, imports, config, one request, the answer)."""
    argv = [
        str(ROOT / ".venv/bin/owlia"),
        "--home",
        str(stack.home),
        "sign",
        "send",
        "--to",
        "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        "--value",
        "1000wei",
    ]
    samples, codes = [], set()
    for i in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, timeout=60)
        if i:
            samples.append(time.perf_counter() - start)
        codes.add(proc.returncode)
        if proc.returncode not in (0, 3, 4):  # signed, pending approval, denied: all a full round trip
            raise RuntimeError(f"owlia sign send failed: {proc.stderr.decode()[-500:]}")
    return {
        "median_s": round(statistics.median(samples), 3),
        "max_s": round(max(samples), 3),
        "exit_codes": sorted(codes),
    }


def distributions() -> dict[str, int]:
    """Distributions a user installs for the bot: `pip install .[bot]` into a fresh venv."""
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin/pip"), "install", "-q", f"{ROOT}[bot]"], check=True)
        listed = json.loads(
            subprocess.run(
                [str(venv / "bin/pip"), "list", "--format=json"], check=True, capture_output=True, text=True
            ).stdout
        )
    names = {p["name"].lower() for p in listed}
    return {
        "total": len(names),
        "excluding_pip_setuptools_wheel": len(names - {"pip", "setuptools", "wheel"}),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300, help="messages per in-process overhead run")
    parser.add_argument("--service-messages", type=int, default=1000, help="messages through `owlia start`")
    parser.add_argument("--starts", type=int, default=5, help="cold starts of `owlia start` (median)")
    parser.add_argument("--rss-every", type=int, default=100, help="the service's RSS every N messages")
    parser.add_argument(
        "--idle-wait", type=float, default=5.0, help="seconds after /health 200 before idle RSS"
    )
    parser.add_argument("--help-runs", type=int, default=10)
    parser.add_argument("--notes", type=int, default=10_000, help="notes in the memory search benchmark")
    parser.add_argument(
        "--dists", action="store_true", help="also count distributions in a clean venv (~1 min)"
    )
    parser.add_argument(
        "--service-only",
        action="store_true",
        help="only the `owlia start` part (for long RSS curves: --service-messages 3000)",
    )
    results.add_arguments(parser)
    args = parser.parse_args()
    result: dict[str, object] = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
        },
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        with FakeInProcess("text") as fake:
            stack = ServiceStack(Path(tmp) / "s", fake.url)
            try:
                result["service"] = service(
                    stack, args.service_messages, args.starts, args.idle_wait, args.rss_every
                )
                if not args.service_only:
                    result["owlia_sign_send"] = sign_send_time(stack, args.help_runs)
            finally:
                stack.close()
            if args.service_only:
                results.emit("agent", result, args)
                return
            write_home(Path(tmp) / "a", fake.url)
            result["overhead_text_reply"] = asyncio.run(overhead(Path(tmp) / "a", args.messages))
        with FakeInProcess("tool") as fake:
            write_home(Path(tmp) / "c", fake.url)
            result["overhead_one_tool_round"] = asyncio.run(overhead(Path(tmp) / "c", args.messages))
    result["memory_search"] = {
        "notes": args.notes,
        **{k: round(v, 3) for k, v in bench_search(args.notes).items()},
    }
    result["owlia_help"] = help_time(args.help_runs)
    if args.dists:
        result["distributions"] = distributions()
    results.emit("agent", result, args)


if __name__ == "__main__":
    main()
