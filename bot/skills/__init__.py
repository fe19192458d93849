"""The bot's side of skills: the host that runs a skill tool through skills_runtime, and what a skill may ask of the bot."""
