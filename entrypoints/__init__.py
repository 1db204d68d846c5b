"""Entrypoints: the composition root, the HTTP API, the CLI and the workers."""
