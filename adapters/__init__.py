"""Adapters: infrastructure plugged into the application's ports."""
