"""The soak's pure parts (benchmarks/soak_plan.py, benchmarks/resources.py): the mapping schedule,
the expected set, the flatness rule. The soak itself runs with ``make soak``, not here."""

from __future__ import annotations

import pytest
from benchmarks import soak_plan as plan
from benchmarks.resources import Sample, role_of
from benchmarks.soak import group_series


def test_the_schedule_cycles_every_step_and_ends_with_every_pair_mapped() -> None:
    steps = plan.schedule(20 * 60, 20)
    assert len(steps) == 61
    assert [s.at_s for s in steps[:3]] == [0, 20, 40]
    assert [s.pairs for s in steps[:6]] == [pairs for _, pairs in plan.CYCLE]
    assert steps[6].pairs == plan.CYCLE[0][1]
    assert steps[-1] == plan.Step(1200, plan.UNIVERSE, "final: every pair mapped")
    assert plan.schedule(50, 20)[-1].at_s == 50 and len(plan.schedule(50, 20)) == 4


@pytest.mark.parametrize(("total", "step"), [(10, 20), (60, 0), (60, -1)])
def test_a_schedule_needs_at_least_one_step(total: float, step: float) -> None:
    with pytest.raises(ValueError, match="step"):
        plan.schedule(total, step)


def test_the_cycle_removes_and_re_adds_clusters_topics_and_migrates_orders() -> None:
    clusters = [{c for c, _ in pairs} for _, pairs in plan.CYCLE]
    assert {"alpha", "gamma"} <= {
        c for state in clusters for c in {"alpha", "beta", "gamma"} - state
    }
    orders = [{c for c, t in pairs if t == "orders"} for _, pairs in plan.CYCLE]
    assert orders == [{"alpha"}, {"alpha", "beta"}, {"beta"}, {"beta"}, {"alpha"}, {"alpha"}]
    for (
        pair
    ) in plan.UNIVERSE:  # every pair is in the mapping at some point and out of it at another
        states = [pair in pairs for _, pairs in plan.CYCLE]
        assert any(states) and not all(states), pair


def test_the_metadata_lists_only_clusters_with_a_topic_in_the_stream() -> None:
    servers = {"alpha": "h:1", "beta": "h:2", "gamma": "h:3"}
    document = plan.metadata_document({("beta", "orders"), ("beta", "audit")}, servers)
    assert document == {
        "clusters": {"beta": {"bootstrap.servers": "h:2"}},
        "streams": {"soak": [{"cluster": "beta", "topics": ["audit", "orders"]}]},
    }


def test_the_longest_absence_and_the_retention_window() -> None:
    steps = plan.schedule(20 * 60, 20)
    assert plan.longest_absence(steps) == 60  # beta/orders: states 4, 5, 0; gamma/clicks: 5, 0, 1
    plan.check_retention(steps, 600_000)
    with pytest.raises(ValueError, match="longest absence"):
        plan.check_retention(steps, 120_000)
    orders = frozenset({("alpha", "orders")})
    only = [
        plan.Step(0, orders, ""),
        plan.Step(5, frozenset(), ""),
        plan.Step(30, plan.UNIVERSE, ""),
    ]
    assert plan.longest_absence(only) == 25


def _key(offset: int) -> plan.RecordKey:
    return ("alpha", "orders", 0, offset)


def test_compare_is_exact_only_for_every_record_once() -> None:
    produced = {_key(i): f"v{i}".encode() for i in range(5)}
    exact = plan.compare(produced, [(k, v) for k, v in produced.items()])
    assert exact.exact and (exact.produced, exact.read) == (5, 5)
    rows = [(k, v) for k, v in produced.items() if k not in (_key(2), _key(3))]
    rows += [(_key(1), b"v1"), (_key(1), b"v1"), (_key(2), b"other"), (_key(9), b"v9")]
    verdict = plan.compare(produced, rows)
    assert not verdict.exact
    assert (verdict.lost, verdict.duplicated, verdict.unexpected) == (1, 2, 2)
    assert verdict.examples["lost"] == [_key(3)]
    assert verdict.examples["duplicated"] == [_key(1)]
    assert verdict.examples["unexpected"] == [_key(2), _key(9)]


@pytest.mark.parametrize(
    ("series", "counts", "flat"),
    [
        ([500, 520, 530, 531, 529, 532, 530, 531, 533], False, True),  # warm-up, then steady
        ([100, 101, 99, 100, 102, 101, 100, 99, 101], False, True),
        ([100, 110, 120, 130, 140, 150, 160, 170, 180], False, False),  # a leak
        ([40, 41, 40, 42, 40, 41, 40, 42, 41], True, True),  # threads coming and going
        ([40, 42, 44, 46, 48, 50, 52, 54, 56], True, False),  # two more every sample
        ([40, 40, 40, 40, 40, 40, 43, 43, 43], True, False),  # the last third wholly above
        ([40, 40, 40, 40, 40, 40, 42, 42, 42], True, True),  # within the slack
    ],
)
def test_flatness(series: list[float], counts: bool, flat: bool) -> None:
    assert plan.assess_flatness(series, 0.10, 2.0, counts=counts).ok is flat


def test_flatness_needs_samples() -> None:
    with pytest.raises(ValueError, match="at least 6"):
        plan.assess_flatness([1, 2, 3], 0.1, 1)


@pytest.mark.parametrize(
    ("command", "forked", "role"),
    [
        (b"python\0-m\0pyspark.sql.streaming.python_streaming_source_runner", False, "planner"),
        (b"python\0-m\0pyspark.daemon\0pyspark.worker", False, "worker-daemon"),
        (b"python\0-m\0pyspark.daemon\0pyspark.worker\0", True, "worker"),
        (
            b"python\0-m\0pyspark.daemon\0pyspark.sql.worker.create_data_source",
            False,
            "helper-daemon",
        ),
        (b"python\0-m\0pyspark.daemon\0pyspark.sql.worker.plan_data_source_read", True, "helper"),
        (b"python\0-m\0some.module", False, "python"),
    ],
)
def test_roles_of_python_processes(command: bytes, forked: bool, role: str) -> None:
    assert role_of(command, forked) == role


def test_group_series_sums_each_group_per_round() -> None:
    samples = [
        Sample(5.0, "jvm", 1, 500.0, 80, 300, pooled=20),
        Sample(5.0, "worker-daemon", 2, 30.0, 1, 10),
        Sample(5.0, "worker", 3, 90.0, 3, 20),
        Sample(10.0, "jvm", 1, 510.0, 81, 301),
        Sample(10.0, "worker-daemon", 2, 30.0, 1, 10),
    ]
    series = group_series(samples)
    assert series["jvm"] == [
        {"t": 5.0, "n": 1, "rss_mb": 500.0, "threads": 60, "fds": 300, "pooled": 20},
        {"t": 10.0, "n": 1, "rss_mb": 510.0, "threads": 81, "fds": 301, "pooled": 0},
    ]
    assert [(r["n"], r["rss_mb"], r["fds"]) for r in series["workers"]] == [
        (2, 120.0, 30),
        (1, 30.0, 10),
    ]


def test_cycle_peaks_take_the_largest_value_of_each_complete_cycle() -> None:
    times = [0, 5, 10, 15, 20, 25, 30, 35]
    values = [1, 3, 2, 9, 4, 4, 7, 8]
    assert plan.cycle_peaks(times, values, 10) == [3, 9, 4]  # [30, 40) is not complete
    assert plan.cycle_peaks([], [], 10) == []
