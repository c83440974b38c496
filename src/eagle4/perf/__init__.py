"""Timing and statistics helpers for the perf suites."""
