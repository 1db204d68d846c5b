"""Runnel in this process for tests: `InMemoryRunnel`, the SDK's test double (ADR 0038)."""

from entrypoints.testing.double import InMemoryRunnel

__all__ = ["InMemoryRunnel"]
