"""MCP servers as capabilities: declared and approved with `owlia mcp`, run in the skills sandbox."""
