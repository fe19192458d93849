"""Cron jobs: the job model (schedules, payloads, targets), their store in cron.db and the plan of
which fires to run. The cron tools and `owlia cron` write here; bot.runtime.scheduler runs the jobs
and bot.runtime.heartbeat the heartbeat (see docs/cron.md)."""
