"""Secret handling shared by every outbound path: logs, events, replies and HTTP (see redact.py)."""
