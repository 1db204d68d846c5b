"""Time and identifiers, so tests and simulations control both."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Timezone-aware UTC."""
        ...


class IdGenerator(Protocol):
    def new_id(self) -> str: ...
