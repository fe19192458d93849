"""How the bot reaches a remote MCP server: the HTTP client, with the headers and OAuth the user set up.

A header's value (an API key, `Bearer ...`) lives in a 0600 file of the bot's user under
`<home>/secrets/`, named by the declaration; it is read at each connection, checked to be one line of
visible ASCII (a CR or LF would forge another header), and never written to the registry, the audit
or an error. OAuth tokens come from oauth.py. The URL itself is allowed only when it is listed in
`bot.mcp.allowed_urls` (checked by the callers before anything is sent).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcp.shared._httpx_utils import create_mcp_http_client

from bot.mcp_servers.store import McpError, ServerDecl
from policies.kernel.files import check_private_file, read_regular_text

HEADER_VALUE = re.compile(r"[\x20-\x7e]{1,8192}")


def header_values(decl: ServerDecl, home: Path | None) -> dict[str, str]:
    """The declaration's headers with their values read from `<home>/secrets/`; McpError, naming the
    file and what to do (never the value), when one is missing, not private or not one visible line."""
    if home is None:
        raise McpError(
            f"{decl.name}: its headers come from the OwliaBot home's secrets/, which is not known here"
        )

    values: dict[str, str] = {}
    for header, name in decl.headers.items():
        path = Path(home) / "secrets" / name
        try:
            check_private_file(path)
            value = read_regular_text(path).strip()
        except FileNotFoundError:
            raise McpError(
                f"{decl.name}: the {header} header's value file {path} is missing; write the value to it "
                f"(one line) and `chmod 600 {path}`"
            ) from None
        except (OSError, ValueError) as exc:
            raise McpError(f"{decl.name}: the {header} header's value file cannot be used: {exc}") from None
        if HEADER_VALUE.fullmatch(value) is None:
            raise McpError(
                f"{decl.name}: the {header} header's value in {path} must be one line of visible ASCII "
                "(no line breaks or control characters)"
            )
        values[header] = value
    return values


def http_client(decl: ServerDecl, home: Path | None, auth: Any = None) -> Any:
    """The SDK's HTTP client for this server: its secret headers and its OAuth, nothing else."""
    headers = header_values(decl, home) if decl.headers else None
    return create_mcp_http_client(headers=headers, auth=auth)
