"""Ports: what the use cases need from the outside world, as Protocols, one module per concern.

Each port's docstring is its contract. The in-memory adapters and the Postgres/S3 adapters
implement the same contracts and run the same contract tests in `tests/contracts/`.
"""
