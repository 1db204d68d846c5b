"""The group-commit engine: concurrent units of work of one process share a transaction."""
