"""The garbage collector pause around a micro-batch's planning and a task's reading
(source/gcpause.py)."""

from __future__ import annotations

import gc
import inspect
from collections.abc import Iterator

import pytest

from pyspark_dynamic_kafka.source.gcpause import cyclic_gc_paused
from pyspark_dynamic_kafka.source.stream import DynamicKafkaStreamReader


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def _during(fail: bool = False, pause: bool = True) -> bool:
    with cyclic_gc_paused(pause):
        if fail:
            raise RuntimeError("planning failed")
        return gc.isenabled()


def test_the_collector_is_paused_during_the_call_and_resumes_after_it() -> None:
    gc.enable()
    assert _during() is False
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="planning failed"):
        _during(fail=True)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_application_stays_off() -> None:
    gc.disable()
    assert _during() is False
    assert not gc.isenabled()


def test_no_pause_when_not_asked() -> None:  # Tuning(pause_gc=False) of the benchmarks
    gc.enable()
    assert _during(pause=False) is True
    assert gc.isenabled()


def test_spark_still_sees_latest_offset_with_its_read_limit_parameter() -> None:
    # python_streaming_source_runner picks the admission-control call by this signature
    parameters = inspect.signature(DynamicKafkaStreamReader.latestOffset).parameters
    assert list(parameters) == ["self", "start", "limit"]
