"""Async use cases over ports. Speaks only to `application.ports` and the domain."""
