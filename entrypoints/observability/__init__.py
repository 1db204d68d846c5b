"""Metrics, tracing and logs of every `runnel` process."""
