"""What a storage adapter hands the contract tests: its backend, the adapters' bundle
(`adapters.backend.Backend`). Each backend's gap evidence reads back what it recorded
with `gaps.recorded(key)`."""

from __future__ import annotations

from adapters.backend import Backend

StorageHarness = Backend
