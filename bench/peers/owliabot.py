"""OwliaBot as the third side of the comparison: the real service, `owlia start`, exactly as
bench/agent_bench.py runs it. The stack (anvil, a real `owlia signer serve`, the local Telegram Bot
API server, the bot's home and config) is agent_bench's own `ServiceStack`, reused rather than copied,
so both benches measure the same configuration: Telegram, an anthropic profile against the shared fake
LLM, the signer, and the control plane on (the default). Ready = the control plane's first
`GET /health` 200, the check the peers get too. Messages go the way a user's do: a Telegram update
queued on the local Bot API server, answered when the bot's final reply text reaches that server.

Needs the repo's venv (it imports the bot, its test fakes and PyYAML); the peers' modules do not.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from fake_llm import REPLY, FakeLLM
from installs import OB_DIR, REPO, base_env
from peers import Peer, http_status

FIRST_USER = 10_000  # agent_bench.TG_USER; the other conversations are the next user ids


def _agent_bench() -> Any:
    if str(REPO / "bench") not in sys.path:
        sys.path.insert(0, str(REPO / "bench"))
    import agent_bench  # noqa: PLC0415 - the bot and its fakes load only when OwliaBot is measured

    return agent_bench


class OwliaBot(Peer):
    name = "owliabot"

    def __init__(self) -> None:
        self.stack: Any = None
        self.work: Path | None = None
        self.ready_method = (
            "spawn `owlia --home H start` from the repo's .venv (bench/agent_bench.py's ServiceStack: Telegram "
            "against the local Bot API server, an anthropic profile against the fake LLM's Messages API, a real "
            "signer on anvil, control plane on, the default configuration) and poll every 10 ms; ready = "
            "GET /health on the control plane returns 200 (it needs the signer reachable). Clock starts just "
            "before Popen."
        )

    def cli(self) -> list[str]:
        return [str(REPO / ".venv" / "bin" / "owlia")]

    def home(self) -> Path:
        assert self.stack is not None, "configure() first"
        return Path(self.stack.home)

    def env(self) -> dict[str, str]:
        env = base_env(OB_DIR / "home")
        if self.stack is not None:
            env.update({"ANTHROPIC_API_KEY": _agent_bench().KEY, "TELEGRAM_BOT_TOKEN": self.stack.tg.token})
        return env

    def configure(self, llm: FakeLLM, sessions: int = 10) -> None:
        self.close()
        OB_DIR.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="stack-", dir=OB_DIR))
        self.stack = _agent_bench().ServiceStack(self.work / "s", llm.url)
        self._allow(sessions)

    def _allow(self, sessions: int) -> None:
        """One Telegram user per conversation, as the peers get one session each: all allowed."""
        import yaml  # noqa: PLC0415 - the repo's venv

        path = Path(self.stack.home) / "config.yaml"
        config = yaml.safe_load(path.read_text())
        config["bot"]["channels"]["telegram"]["allow_from"] = [str(FIRST_USER + k) for k in range(sessions)]
        path.write_text(yaml.safe_dump(config))

    def serve_cmd(self) -> list[str]:
        return [*self.cli(), "--home", str(self.home()), "start"]

    def ready_checks(self, logfile: Path) -> dict[str, Callable[[], bool]]:
        url = f"http://127.0.0.1:{self.stack.port}/health"
        return {"health_200": lambda: http_status(url) == 200}

    def driver(self, sessions: int) -> TelegramDriver:
        return TelegramDriver(self.stack.tg)

    def companion_pids(self) -> dict[str, int]:
        process = self.stack.signer.process if self.stack is not None else None
        return {"signer": process.pid} if process is not None and process.poll() is None else {}

    def close(self) -> None:
        if self.stack is not None:
            self.stack.close()  # anvil, the signer and the Telegram server
            self.stack = None
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None


class TelegramDriver:
    method = (
        "Telegram, the channel users run: the message is queued as an update on the local Bot API server "
        "(tests/fakes/telegram_server.py), which the bot long-polls with getUpdates; answered when the bot's "
        "sendMessage/editMessageText with the fake LLM's full text reaches that server (200). Conversation K "
        "is the private chat of Telegram user 10000+K, all in allow_from."
    )

    def __init__(self, tg: Any, timeout: float = 120.0) -> None:
        self.tg, self.timeout = tg, timeout

    def send(self, session: int, text: str) -> bool:
        since = len(self.tg.calls)
        chat = FIRST_USER + session
        self.tg.message(chat, text)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for call in self.tg.calls[since:]:
                if (
                    call.method in ("sendMessage", "editMessageText")
                    and call.status == 200
                    and str(call.params.get("chat_id")) == str(chat)
                    and call.params.get("text") == REPLY
                ):
                    return True
            time.sleep(0.001)
        return False

    def close(self) -> None:
        pass
