"""The catalog sources view: each CatalogSource mirrored from its events, for listing the sources a caller sees."""

from __future__ import annotations

import threading

from domain.catalog.source import CatalogSource
from projections.base import Mirror, Projection, on


class CatalogSourcesView(Projection):
    def __init__(self, lock: threading.RLock | None = None) -> None:
        super().__init__(lock)
        self.mirror: Mirror[CatalogSource] = Mirror()

    @on(CatalogSource.Event)
    def _source(self, event: CatalogSource.Event) -> None:
        self.mirror.apply(event)

    def sources(self) -> list[CatalogSource]:
        """Every source ever added, removed ones too (callers filter by `removed` and by who may see them)."""
        with self.lock:
            return [s for s in self.mirror.values() if isinstance(s, CatalogSource)]
