"""Server-Sent Events: one subscription's lifetime, its frames, and their transport."""
