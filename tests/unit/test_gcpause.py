"""The garbage collector pause around a micro-batch's planning, a task's reading and a sink's
task (gcpause.py)."""

from __future__ import annotations

import gc
import inspect
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from pyspark_dynamic_kafka.gcpause import cyclic_gc_paused, freeze_worker_heap
from pyspark_dynamic_kafka.sink import writer
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


def test_a_sink_task_writes_with_the_collector_paused_and_resumes_it_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The producing itself is replaced (it needs a cluster: the sink's integration tests run it
    # under the pause); what is checked is the pause around it, on success and on failure.
    seen: list[bool] = []

    def produce(*args: object) -> None:
        seen.append(gc.isenabled())
        if len(seen) % 2 == 0:
            raise RuntimeError("the cluster is down")

    monkeypatch.setattr(writer, "_produce", produce)
    monkeypatch.setattr(writer.DynamicKafkaStreamWriter, "_write", produce)
    batch = writer.DynamicKafkaBatchWriter.__new__(writer.DynamicKafkaBatchWriter)
    batch.task = SimpleNamespace(dedupe_headers=False)  # type: ignore[assignment]
    stream = writer.DynamicKafkaStreamWriter.__new__(writer.DynamicKafkaStreamWriter)
    gc.enable()
    for task in (batch, stream):
        task.write(iter([]))
        assert gc.isenabled()
        with pytest.raises(RuntimeError, match="the cluster is down"):
            task.write(iter([]))
        assert gc.isenabled()
    assert seen == [False] * 4


def test_outside_a_spark_task_the_heap_is_never_frozen() -> None:
    frozen = gc.get_freeze_count()
    assert freeze_worker_heap() is False
    assert gc.get_freeze_count() == frozen
