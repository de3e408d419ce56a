"""Dagster definitions, checks, sensors, schedules and jobs, plus the `engram` command that drives them."""
