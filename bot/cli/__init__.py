"""The `owlia` command. Each group imports its heavy modules inside the commands, so `--help` stays fast."""
