"""An immutable, hashable, picklable mapping with string keys, sorted by key."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

__all__ = ["FrozenMapping"]

V = TypeVar("V")


class FrozenMapping(Mapping[str, V]):
    """A read-only mapping that can be hashed, compared with any mapping and pickled.

    Subclasses may convert the items in ``__init__`` and mask values in ``__repr__``; pickling
    rebuilds an instance of the subclass from its items.

    Parameters
    ----------
    items:
        The items; kept sorted by key.
    """

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, V] | None = None) -> None:
        self._items: dict[str, V] = dict(sorted((items or {}).items()))
        self._hash: int | None = None

    def __getitem__(self, key: str) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._items) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._items)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._items,))
