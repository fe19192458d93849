"""Agent tools, tiered read / write / sign; see base.py."""
