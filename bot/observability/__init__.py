"""What the bot did, for operators and for the record: the event ring (`events`), the Prometheus
metrics (`metrics`) and the audit logs of tool calls (`audit`). A leaf: every other part may write here,
and it imports nothing of the bot but the secret redactor."""
