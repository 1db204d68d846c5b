"""Prometheus text exposition, read back: the samples a scraper would store."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families


class Samples:
    def __init__(self, text: str) -> None:
        self.values: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                self.values[(sample.name, frozenset(sample.labels.items()))] = sample.value

    @property
    def names(self) -> set[str]:
        """Every sample name (a histogram's `_bucket`, `_sum`, `_count`; a counter's
        `_total`), as PromQL queries them."""
        return {name for name, _ in self.values}

    def get(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        return self.values.get((name, frozenset((labels or {}).items())))

    def labels(self, name: str) -> list[dict[str, str]]:
        """The label sets of every sample called `name`."""
        return [dict(labels) for sample, labels in self.values if sample == name]
