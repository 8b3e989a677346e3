"""The `plant` fixture: plants a bug of the catalogue (fuzz.probe.plants) for one test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from fuzz.probe.plants import Plant, plant_named


@pytest.fixture
def plant() -> Iterator[Callable[[str], Plant]]:
    """`plant(name)` plants the named bug until the test ends and returns its Plant."""
    undo: list[Callable[[], None]] = []

    def apply(name: str) -> Plant:
        found = plant_named(name)
        undo.append(found.apply())
        return found

    yield apply
    for each in reversed(undo):
        each()
