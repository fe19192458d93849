"""The bot's LLM layer: one internal message format, an adapter per provider, profile failover.

Unprivileged by design: nothing here can sign; the signer never imports this package. The
adapters speak each provider's wire format themselves on httpx (bot.llm.transport, bot.llm.sse):
no vendor SDK, so a smaller supply chain and a lighter process. httpx is only imported when a
provider is built; import what you need from the submodules (bot.llm.types, bot.llm.failover,
bot.llm.providers).
"""
