"""In-memory adapters: the same contracts as the real ones, for simulation and fast tests."""
