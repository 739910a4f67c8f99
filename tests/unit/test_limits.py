"""Admission control: proportional maxOffsetsPerTrigger, minOffsetsPerTrigger + maxTriggerDelay."""

from __future__ import annotations

from tests.unit.conftest import BASE

from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.admission import Admission, backlog, rate_limit
from pyspark_dynamic_kafka.source.read_limits import ReadAllAvailable, ReadMaxRows, ReadMinRows


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _admission(**options: str) -> tuple[Admission, _Clock]:
    clock = _Clock()
    return Admission(parse_options({**BASE, **options}), clock=clock), clock


def test_rate_limit_shares_in_proportion_to_backlog() -> None:
    start = {"a": 0, "b": 100, "c": 7}
    end = {"a": 30, "b": 110, "c": 7, "new": 4}
    assert rate_limit(8, start, end) == {"a": 6, "b": 102, "c": 7, "new": 4}


def test_rate_limit_starves_no_partition() -> None:
    start = {"big": 0, "small": 0}
    end = {"big": 10_000, "small": 1}
    limited = rate_limit(10, start, end)
    assert limited == {"big": 9, "small": 1}


def test_rate_limit_keeps_everything_under_the_limit() -> None:
    start = {"a": 0, "b": 0}
    end = {"a": 3, "b": 4}
    assert rate_limit(7, start, end) == end
    assert rate_limit(100, start, end) == end


def test_repeated_rate_limit_reaches_the_end_in_limit_sized_steps() -> None:
    start = {("east", "t", 0): 0, ("east", "t", 1): 0, ("west", "t", 0): 0, ("west", "t", 1): 0}
    end = dict.fromkeys(start, 10)
    steps = []
    while start != end:
        nxt = rate_limit(8, start, end)
        steps.append(backlog(start, nxt))
        start = nxt
    assert steps == [8, 8, 8, 8, 8]


def test_default_limit_reflects_options() -> None:
    assert _admission()[0].default_limit() == ReadAllAvailable()
    assert _admission(maxoffsetspertrigger="5")[0].default_limit() == ReadMaxRows(5)
    assert _admission(minoffsetspertrigger="3")[0].default_limit() == ReadMinRows(3)
    both = _admission(minoffsetspertrigger="3", maxoffsetspertrigger="5")[0]
    assert both.default_limit() == ReadMaxRows(5)


def test_read_all_available_from_the_engine_overrides_options() -> None:
    admission, _ = _admission(maxoffsetspertrigger="1", minoffsetspertrigger="1")
    assert admission.admit(ReadAllAvailable(), {"a": 0}, {"a": 50}) == {"a": 50}


def test_engine_max_rows_caps() -> None:
    admission, _ = _admission(maxoffsetspertrigger="5")
    assert admission.admit(ReadMaxRows(5), {"a": 0}, {"a": 50}) == {"a": 5}
    assert admission.admit(ReadMaxRows(2), {"a": 0}, {"a": 50}) == {"a": 2}


def test_min_offsets_waits_until_enough_data_or_the_delay() -> None:
    admission, clock = _admission(minoffsetspertrigger="10", maxtriggerdelay="20s")
    limit = admission.default_limit()
    # The first call never waits (as in Spark: the delay counts from the last trigger).
    assert admission.admit(limit, {"a": 0}, {"a": 0}) == {"a": 0}
    clock.now += 1
    assert admission.admit(limit, {"a": 0}, {"a": 4}) is None
    clock.now += 10
    assert admission.admit(limit, {"a": 0}, {"a": 9}) is None
    assert admission.admit(limit, {"a": 0}, {"a": 10}) == {"a": 10}  # enough: runs now
    clock.now += 5
    assert admission.admit(limit, {"a": 10}, {"a": 12}) is None
    clock.now += 15  # 20 s since the last trigger
    assert admission.admit(limit, {"a": 10}, {"a": 12}) == {"a": 12}


def test_min_and_max_together() -> None:
    admission, clock = _admission(
        minoffsetspertrigger="4", maxoffsetspertrigger="6", maxtriggerdelay="1m"
    )
    limit = admission.default_limit()
    admission.admit(limit, {"a": 0}, {"a": 0})
    clock.now += 1
    assert admission.admit(limit, {"a": 0}, {"a": 3}) is None
    assert admission.admit(limit, {"a": 0}, {"a": 30}) == {"a": 6}


def test_available_now_never_waits_but_still_caps() -> None:
    admission, clock = _admission(minoffsetspertrigger="100", maxoffsetspertrigger="200")
    limit = admission.default_limit()
    admission.admit(limit, {"a": 0}, {"a": 0})
    clock.now += 1
    assert admission.admit(limit, {"a": 0}, {"a": 3}, available_now=True) == {"a": 3}
    assert admission.admit(limit, {"a": 0}, {"a": 300}, available_now=True) == {"a": 200}
