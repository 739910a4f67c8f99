"""A task over several clusters interleaves their batches and closes every reader on the way out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pyspark_dynamic_kafka.source.read import _interleaved


class _Stream:
    """A cluster's batches (strings stand in for Arrow batches), recording when it was closed."""

    def __init__(self, items: list[str], fail_after: int | None = None) -> None:
        self.items = items
        self.fail_after = fail_after
        self.closed = False
        self.gen = self._run()

    def _run(self) -> Iterator[str]:
        try:
            for i, item in enumerate(self.items):
                if self.fail_after is not None and i == self.fail_after:
                    raise RuntimeError("broker gone")
                yield item
        finally:
            self.closed = True


def test_one_batch_of_each_stream_in_turn_until_all_end() -> None:
    streams = [_Stream(["a1", "a2", "a3"]), _Stream(["b1"]), _Stream(["c1", "c2"])]
    assert list(_interleaved([s.gen for s in streams])) == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert all(s.closed for s in streams)


def test_an_error_in_one_stream_closes_the_others() -> None:
    streams = [_Stream(["a1", "a2", "a3"]), _Stream(["b1", "b2"], fail_after=1), _Stream(["c1"])]
    seen = []
    with pytest.raises(RuntimeError, match="broker gone"):
        for item in _interleaved([s.gen for s in streams]):
            seen.append(item)
    assert seen == ["a1", "b1", "c1", "a2"]
    assert all(s.closed for s in streams)


def test_stopping_early_closes_every_started_stream() -> None:
    streams = [_Stream(["a1", "a2"]), _Stream(["b1", "b2"])]
    merged = _interleaved([s.gen for s in streams])
    assert next(merged) == "a1"
    assert next(merged) == "b1"
    merged.close()
    assert all(s.closed for s in streams)
