"""The bot's side of MCP servers: their registry, the sandboxed connection, egress, sampling."""
