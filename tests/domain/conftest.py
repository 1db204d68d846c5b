"""Hypothesis settings for the domain suite.

The `ci` profile runs every property at least 200 times with no per-example
deadline (the CI machine has 2 cores and timing is never what we test).
Randomised on purpose: each run explores new inputs; failures are replayed
from the local example database.
"""

from hypothesis import settings

settings.register_profile("ci", max_examples=200, deadline=None, derandomize=False)
settings.load_profile("ci")
