"""What differs between the supported PySpark versions (:mod:`pyspark_dynamic_kafka.
spark_versions`), on each: ``make test-matrix`` runs this file in every cell; ``make test``
leaves it out (marker ``matrix``: on the suite's own PySpark, test_admission.py and
test_restart_and_cleanup.py read these ways).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.integration.helpers import DEADLINE, EstateFactory, numbered, produce
from tests.integration.queries import available_now, memory_query, start_memory_query

from pyspark_dynamic_kafka.spark_versions import ADMISSION_CONTROL, pyspark_version

pytestmark = pytest.mark.matrix


def _written(estate: EstateFactory, per_partition: int) -> tuple[Any, list[str]]:
    setup = estate("east", partitions=2)
    expected: list[str] = []
    for p in range(2):
        expected += produce(setup["east"], "orders", numbered(f"p{p}-", per_partition), first=p)
    return setup, expected


def test_read_limits_where_pyspark_passes_them_refused_where_it_does_not(
    spark: Any, estate: EstateFactory
) -> None:
    setup, expected = _written(estate, per_partition=10)
    options = setup.options(maxOffsetsPerTrigger="8")
    if pyspark_version() >= ADMISSION_CONTROL:
        query = available_now(spark, options)
        assert query.values() == sorted(expected)
        assert query.batch_sizes() == [8, 8, 4]
        return
    try:
        query = start_memory_query(spark, options, availableNow=True)
        query.query.awaitTermination(DEADLINE)
        error = f"no error: the query ended with {query.values()}"
    except Exception as exc:  # Spark's error, or Py4J's, by version
        error = str(exc)
    assert "option maxOffsetsPerTrigger needs PySpark 4.2 or newer" in error, error


def test_streams_read_everything_once_on_every_supported_pyspark(
    spark: Any, estate: EstateFactory
) -> None:
    setup, expected = _written(estate, per_partition=5)
    assert available_now(spark, setup.options()).values() == sorted(expected)
    with memory_query(spark, setup.options()) as query:
        query.expect(expected)
        expected += produce(setup["east"], "orders", numbered("more-", 4), first=0)
        query.expect(expected)  # each exactly once, after micro-batches with nothing new
