"""The driver's micro-batch pipeline (:class:`MicroBatches`): the first offset, each micro-batch's
end under the read limits, clusters and partitions entering and leaving, ``Trigger.AvailableNow``,
the exact ranges of the tasks and the status monitoring reads.

Everything is the real pipeline (``assignment=all``, no archive, the stream's
:class:`StartPolicy` on a clock the test sets) on a real metadata file service (a ``tmp_path``
file the tests edit, ``metadataDiscoveryIntervalMs=0``). The cluster side is test_reconcile's
scripted lister (:class:`~tests.unit.test_reconcile._Lister`: logs that grow between two calls by
exact amounts are not produced on demand on the test broker); the integration tests
(tests/integration) run whole queries on real brokers. Named ``test_pipeline_driver``:
tests/integration/test_pipeline.py is the Spark Declarative Pipelines test.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.unit.test_reconcile import _Lister, orders_on_two_clusters, write_orders

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.contract import STATUS_KEY
from pyspark_dynamic_kafka.source.driver.admission import Admission
from pyspark_dynamic_kafka.source.driver.cluster_view import ClusterView
from pyspark_dynamic_kafka.source.driver.discovery import Discovery
from pyspark_dynamic_kafka.source.driver.modes import NoArchive
from pyspark_dynamic_kafka.source.driver.pipeline import MicroBatches, Tuning
from pyspark_dynamic_kafka.source.driver.reconcile import MAX_PARALLEL_CLUSTERS
from pyspark_dynamic_kafka.source.driver.start_policy import StartPolicy
from pyspark_dynamic_kafka.source.driver.status import SourceStatus
from pyspark_dynamic_kafka.source.executor.task import ReadTask
from pyspark_dynamic_kafka.source.group.selection import partition_selection
from pyspark_dynamic_kafka.source.read_limits import ReadAllAvailable, ReadMaxRows, ReadMinRows

EAST = {"cluster": "east", "topics": ["orders"]}
WEST = {"cluster": "west", "topics": ["orders"]}
NOW_MS = 1_700_000_000_000
ALL = ReadAllAvailable()


def _offset(clusters: dict[str, Any], **more: Any) -> dict[str, Any]:
    """An encoded offset (version 1)."""
    return {"version": 1, "clusters": clusters, **more}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """The metadata file: stream ``orders`` on east."""
    path = tmp_path / "streams.yaml"
    write_orders(path, EAST)
    return path


@pytest.fixture
def lister() -> _Lister:
    """:func:`~tests.unit.test_reconcile.orders_on_two_clusters`."""
    return orders_on_two_clusters()


def _batches(path: Path, lister: _Lister, **extra: str) -> MicroBatches:
    """The pipeline a stream reader builds, its clocks fixed: policy and status at
    :data:`NOW_MS`, discovery's wall clock too, admission's at 0 s (tests move it)."""
    options = parse_options(
        {
            "metadataService": "file",
            "metadataService.path": str(path),
            "streamIds": "orders",
            "startingOffsets": "earliest",
            "metadataDiscoveryIntervalMs": "0",
            **extra,
        }
    )
    policy = StartPolicy.of(options, clock=lambda: NOW_MS)
    view = ClusterView(options, lister)
    view.discovery = Discovery(options, wall=lambda: NOW_MS / 1000)
    batches = MicroBatches(view, partition_selection(options, lister, policy), NoArchive(), policy)
    batches.status = SourceStatus("streamIds=orders", 1, wall=lambda: NOW_MS / 1000)
    return batches


def _ranges(tasks: list[Any]) -> dict[tuple[str, str, int], tuple[int, int]]:
    ranges = {}
    for task in tasks:
        assert isinstance(task, ReadTask)
        for r in task.ranges:
            ranges[(r.cluster, r.topic, r.partition)] = (r.start, r.end)
    return ranges


def test_tuning_defaults_are_what_a_query_runs_with() -> None:
    assert Tuning() == Tuning(parallel_clusters=MAX_PARALLEL_CLUSTERS, pause_gc=True)


def test_the_initial_offset_is_resolved_once(path: Path, lister: _Lister) -> None:
    batches = _batches(path, lister)
    first = batches.initial()
    lister.topics["east"]["orders"][0] = (6, 12)  # Spark asks again: the same answer
    assert batches.initial() is first
    assert first == _offset({"east": {"orders": {"0": 2, "1": 0}}})


def test_a_micro_batch_reads_up_to_the_latest_offsets(path: Path, lister: _Lister) -> None:
    batches = _batches(path, lister)
    start = batches.initial()
    end = batches.latest(start, ALL)
    assert end == _offset({"east": {"orders": {"0": 10, "1": 5}}})
    assert batches.latest_offset == end
    assert _ranges(batches.tasks(start, end)) == {
        ("east", "orders", 0): (2, 10),
        ("east", "orders", 1): (0, 5),
    }
    assert batches.latest(end, ALL) == end  # no new data: the same offset, no range
    assert batches.tasks(end, end) == []


def test_max_offsets_per_trigger_caps_the_micro_batch_and_latest_offset_does_not(
    path: Path, lister: _Lister
) -> None:
    batches = _batches(path, lister)
    start = batches.initial()
    lister.topics["east"]["orders"][0] = (2, 14)  # 12 + 5 offsets available
    end = batches.latest(start, ReadMaxRows(6))
    assert end == _offset({"east": {"orders": {"0": 6, "1": 1}}})
    assert batches.latest_offset == _offset({"east": {"orders": {"0": 14, "1": 5}}})
    assert _ranges(batches.tasks(start, end)) == {
        ("east", "orders", 0): (2, 6),
        ("east", "orders", 1): (0, 1),
    }


def test_min_offsets_per_trigger_waits_within_the_max_trigger_delay(
    path: Path, lister: _Lister
) -> None:
    batches = _batches(path, lister, minOffsetsPerTrigger="10", maxTriggerDelay="60000")
    now = [0.0]
    batches.admission = Admission(batches.driver.options, clock=lambda: now[0])
    start = batches.latest(batches.initial(), ReadMinRows(10))  # the first trigger never waits
    assert start == _offset({"east": {"orders": {"0": 10, "1": 5}}})
    lister.topics["east"]["orders"][1] = (0, 9)  # 4 new offsets: fewer than 10
    now[0] = 30.0
    assert batches.latest(start, ReadMinRows(10)) == start  # waits: the same offset
    now[0] = 61.0  # the delay is over: reads what there is
    assert batches.latest(start, ReadMinRows(10)) == _offset(
        {"east": {"orders": {"0": 10, "1": 9}}}
    )


def test_a_cluster_added_enters_at_its_start_and_is_read_from_the_next_micro_batch(
    path: Path, lister: _Lister
) -> None:
    batches = _batches(path, lister)
    first = batches.latest(batches.initial(), ALL)
    write_orders(path, EAST, WEST)
    second = batches.latest(first, ALL)
    assert second == _offset({"east": {"orders": {"0": 10, "1": 5}}, "west": {"orders": {"0": 0}}})
    assert batches.tasks(first, second) == []  # entering: nothing to read yet
    third = batches.latest(second, ALL)
    assert _ranges(batches.tasks(second, third)) == {("west", "orders", 0): (0, 7)}


def test_a_cluster_removed_leaves_its_offsets_retained_and_unread(
    path: Path, lister: _Lister
) -> None:
    write_orders(path, EAST, WEST)
    batches = _batches(path, lister, removedClusterRetentionMs="60000")
    first = batches.latest(batches.initial(), ALL)
    lister.topics["east"]["orders"][0] = (2, 12)  # east grows, then leaves the metadata
    write_orders(path, WEST)
    second = batches.latest(first, ALL)
    assert second == _offset(
        {"west": {"orders": {"0": 7}}},
        retained={"east": {"orders": {"removedAtMs": NOW_MS, "offsets": {"0": 10, "1": 5}}}},
    )
    assert batches.tasks(first, second) == []
    # back within removedClusterRetentionMs: resumes where it stopped
    write_orders(path, EAST, WEST)
    third = batches.latest(second, ALL)
    assert third == _offset({"east": {"orders": {"0": 12, "1": 5}}, "west": {"orders": {"0": 7}}})
    assert _ranges(batches.tasks(second, third)) == {("east", "orders", 0): (10, 12)}


def test_the_pending_ranges_of_a_cluster_that_left_are_not_read(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    write_orders(path, EAST, WEST)
    batches = _batches(path, lister)
    start = batches.initial()
    end = batches.latest(start, ALL)
    write_orders(path, WEST)
    batches.latest(end, ALL)  # the metadata the replayed micro-batch is planned with
    with caplog.at_level(logging.WARNING, "pyspark_dynamic_kafka.source.driver.pipeline"):
        tasks = batches.tasks(start, end)  # e.g. replayed after a restart
    assert _ranges(tasks) == {("west", "orders", 0): (0, 7)}
    pipeline = "pyspark_dynamic_kafka.source.driver.pipeline"
    assert [r.getMessage() for r in caplog.records if r.name == pipeline] == [
        "Clusters ['east'] are no longer in the metadata; their pending ranges are not read."
    ]


def test_available_now_reads_up_to_the_offsets_of_its_start_only(
    path: Path, lister: _Lister
) -> None:
    batches = _batches(path, lister)
    start = batches.initial()
    batches.available_now()
    lister.topics["east"]["orders"][0] = (2, 30)  # written after the trigger started
    lister.topics["east"]["orders"][2] = (0, 4)  # a partition discovered after it started
    end = batches.latest(start, ALL)
    assert end == _offset({"east": {"orders": {"0": 10, "1": 5, "2": 0}}})
    assert batches.latest_offset == _offset({"east": {"orders": {"0": 30, "1": 5, "2": 0}}})
    assert batches.latest(end, ALL) == end  # the target is reached: nothing more
    assert _ranges(batches.tasks(start, end)) == {
        ("east", "orders", 0): (2, 10),
        ("east", "orders", 1): (0, 5),
    }


def test_a_checkpoint_in_the_archive_phase_needs_the_archive(path: Path, lister: _Lister) -> None:
    batches = _batches(path, lister)
    archived = _offset(
        {"east": {"orders": {"0": 2}}},
        phase="archive",
        archive={"done": 0, "files": 3, "fingerprint": "f", "listedAtMs": NOW_MS},
    )
    with pytest.raises(OffsetsError) as info:
        batches.latest(archived, ALL)
    assert str(info.value) == (
        "The checkpoint is in the archive phase of a hybrid read, but the query has no "
        "'archive.path': set it back to the archive the query started with (it switches to Kafka "
        "by itself once the archive is read)."
    )


def test_the_report_holds_the_latest_offset_and_the_status(path: Path, lister: _Lister) -> None:
    batches = _batches(path, lister)
    assert batches.report() is None  # no micro-batch planned yet
    start = batches.initial()
    end = batches.latest(start, ReadMaxRows(6))
    report = batches.report()
    assert report is not None
    assert json.loads(json.dumps(report)) == report  # what Spark shows as JSON
    status = report.pop(STATUS_KEY)
    assert report == batches.latest_offset
    change = {
        "seq": 1,
        "atMs": NOW_MS,
        "clustersAdded": ["east"],
        "clustersRemoved": [],
        "topicsAdded": ["east/orders"],
        "topicsRemoved": [],
        "partitionsEntered": 0,
        "partitionsLeft": 0,
    }
    assert status.pop("readPaths").keys() == {"east"}  # which reader: the build's compiled core
    assert status == {
        "assignment": {"east": ["orders"]},
        "discovery": {"lastSuccessMs": NOW_MS, "consecutiveFailures": 0, "threshold": 1},
        "changes": [change],
        "planned": {"east": {"orders": 5}},  # each share floored: 8 * 6 // 13 + 5 * 6 // 13
    }
    assert end == _offset({"east": {"orders": {"0": 5, "1": 2}}})


def test_a_partition_whose_offsets_went_back_is_read_again_from_its_earliest(
    path: Path, lister: _Lister
) -> None:
    batches = _batches(path, lister, failOnDataLoss="false")
    first = batches.latest(batches.initial(), ALL)
    generation = batches.driver.generation
    lister.topics["east"]["orders"][0] = (0, 3)  # recreated (no topic ids): 10 -> 3
    second = batches.latest(first, ALL)
    assert second == _offset({"east": {"orders": {"0": 3, "1": 5}}})
    assert [loss.describe() for loss in batches.driver.recent_losses] == [
        "east/orders/0: its latest offset went back (next offset to read 10, latest offset now 3)"
    ]
    assert batches.driver.generation == generation + 1  # pooled consumers are not reused
    assert _ranges(batches.tasks(first, second)) == {("east", "orders", 0): (0, 3)}
