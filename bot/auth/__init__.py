"""Provider logins for the bot: Anthropic OAuth (PKCE), OpenAI device code, or API keys.

`CredentialResolver` is what the LLM layer uses; `owlia auth` (bot/cli/auth_cmd.py) is how the
user sets them up. Secrets live in `<home>/auth.json` (0600) and are only ever shown masked.
"""

from bot.auth.credentials import Credential, CredentialResolver
from bot.auth.errors import AuthError, AuthStoreError, AuthUnavailable, LoginFailed, ReauthRequired

__all__ = [
    "AuthError",
    "AuthStoreError",
    "AuthUnavailable",
    "Credential",
    "CredentialResolver",
    "LoginFailed",
    "ReauthRequired",
]
