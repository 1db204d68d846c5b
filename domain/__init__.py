"""Runnel's pure rules: aggregates, value objects and decisions. No I/O, no asyncio, no clock."""
