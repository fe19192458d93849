"""Runtime plumbing shared by the agent, the channels and the gateway: events and metrics."""
