"""Values a step's last run made, by the inputs they were made from: the next run in the same process (a resident
builder, ``engram watch``) takes the values whose inputs it meets again and makes the others.

One rule for every such memo: a value is looked up by everything it is a function of (so a hit is the value a fresh
computation gives), and only what the last finished run used is kept (memory stays the size of one run's values; a
run that raised keeps the run before it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RunMemo(Generic[K, V]):
    def __init__(self) -> None:
        self._kept: dict[K, V] = {}

    @contextmanager
    def run(self) -> Iterator[Callable[[K, Callable[[], V]], V]]:
        """One run: call what it yields with a value's inputs and how to make it."""
        before, made = self._kept, {}

        def value(inputs: K, make: Callable[[], V]) -> V:
            if inputs in made:
                return made[inputs]
            found = made[inputs] = before[inputs] if inputs in before else make()
            return found

        yield value
        self._kept = made
