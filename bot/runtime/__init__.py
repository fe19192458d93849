"""The assembled bot and what `owlia start` runs: the assembly (assemble, state, reach, llm_pool),
the slash commands, the launcher, the control plane and the services beside the channels (scheduler,
heartbeat, signer, pairing and cut-off notices). The top of the bot's layers: it imports the parts,
no part imports it (the leaf services it once held are bot.observability)."""
