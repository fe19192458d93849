"""The agent's workspace: persona/context files, templates and the system prompt built from them."""

from bot.workspace.files import (
    MAX_CONTEXT_CHARS,
    ContextFile,
    context_file_problems,
    create_workspace,
    default_workspace,
    load_context_files,
    trim_text,
)
from bot.workspace.prompt import UNTRUSTED_RULE, build_system_prompt, wrap_untrusted

__all__ = [
    "MAX_CONTEXT_CHARS",
    "UNTRUSTED_RULE",
    "ContextFile",
    "build_system_prompt",
    "context_file_problems",
    "create_workspace",
    "default_workspace",
    "load_context_files",
    "trim_text",
    "wrap_untrusted",
]
