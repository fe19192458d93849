"""The bot's LLM layer: one internal message format, an adapter per provider, profile failover.

Unprivileged by design: nothing here can sign; the signer never imports this package. The
provider SDKs take seconds to import, so nothing here imports them until a provider is built;
import what you need from the submodules (bot.llm.types, bot.llm.failover, bot.llm.providers).
"""
