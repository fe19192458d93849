"""Cron jobs and the heartbeat: persistent schedules in cron.db, timed by APScheduler, run unattended
with read-only tools, results delivered through the Notifier (see docs/cron.md)."""
