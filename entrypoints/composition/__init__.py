"""The composition root: settings, which adapter plays which port, and what a node runs."""
