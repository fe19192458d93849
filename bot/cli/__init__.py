"""The `owlia` command: `bot.cli.app` mounts every command lazily, so each command imports only its own modules."""
