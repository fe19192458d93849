"""Is a skill sandbox backend actually usable here? Asked exactly as the runtime asks it.

A binary on PATH is not enough (bubblewrap can be installed yet unable to create namespaces in a
seccomp'd container; a Docker socket can lack the image), so this defers to the runtime's own
`select_backend`, which runs a trial sandbox: doctor and the security audit can never call a
backend usable that the bot would refuse, or the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import SkillSettings


@dataclass(frozen=True, slots=True)
class SandboxProbe:
    backend: str | None  # the backend that works, None if none does
    detail: str


def probe_sandbox(settings: SkillSettings) -> SandboxProbe:
    from skills_runtime.sandbox import select_backend  # lazy: 36 ms, 9548 KiB

    backend, why = select_backend(
        settings.backend, docker_host=settings.docker_host, docker_image=settings.docker_image
    )
    return SandboxProbe(None if backend is None else backend.name, why)
