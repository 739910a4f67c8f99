"""An executor's Python worker killed (SIGKILL) in the middle of a read task: Spark retries the
task, and the output is exact.

The job runs in a Spark session of its own, ``local[2,4]`` (a subprocess, see ``faults.py``):
the suite's ``local[2]`` session gives every task one attempt only. Its one read task is slow on
purpose, so that it can be caught running: each record is a batch of its own and the consumers
fetch with ``kafka.max.partition.fetch.bytes=1`` and ``kafka.fetch.min.bytes`` at its maximum,
so the broker answers each fetch with one record after ``kafka.fetch.wait.max.ms``. Consumers are
not pooled (``kafkaConsumer.cacheTimeoutMs=0``), so the one Python worker connected to the broker
is the one reading; it is found through ``/proc``, where its memory map also shows which reader
reads (the compiled core under the default reader=auto when it is installed).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from tests.integration.faults import (
    connected_to,
    fault_app,
    loaded_core,
    native_expected,
    python_workers,
)
from tests.integration.helpers import (
    numbered,
    requires_kafka,
    source_options,
    wait_until,
    write_metadata,
)

from pyspark_dynamic_kafka.testing import procfs

RECORDS = 12
FETCH_WAIT_MS = 400


@requires_kafka("a fetch waits for fetch.min.bytes up to fetch.wait.max.ms")
@pytest.mark.skipif(not procfs.available(), reason="finds the Python worker through /proc (Linux)")
def test_a_python_worker_killed_mid_task_is_retried(kafka_clusters: Any, tmp_path: Path) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders")
    expected = numbered("v", RECORDS)
    one_per_batch = {"linger.ms": 0, "batch.num.messages": 1}
    east.produce("orders", [(v, v) for v in expected], config=one_per_batch)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, {"east": east}, {"orders": [("east", ["orders"])]})
    slow = {
        "kafkaConsumer.cacheTimeoutMs": "0",
        "kafka.max.partition.fetch.bytes": "1",
        "kafka.fetch.min.bytes": "100000000",
        "kafka.fetch.wait.max.ms": str(FETCH_WAIT_MS),
    }
    options = source_options(meta, streamIds="orders", **slow)
    with fault_app(tmp_path / "app", options, max_failures=4) as app:
        reading: list[int] = []

        def found() -> bool:
            app.count()  # fails at once if the app exited
            reading[:] = [
                pid for pid in python_workers(app.process.pid) if connected_to(pid, east.port)
            ]
            return bool(reading)

        wait_until(found, what="a Python worker reading from the broker")
        [victim] = reading
        # reader=auto: the worker reads with the compiled core when it is installed.
        assert loaded_core([victim]) == ([victim] if native_expected() else [])
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: not Path(f"/proc/{victim}").exists(), what="the worker to be gone")
        app.wait_rows(RECORDS)
        result = app.finish()
    assert result.error is None
    assert result.values == sorted(expected)  # each record once: the killed attempt left nothing
    assert result.failed_tasks == 1
    assert "Python worker exited unexpectedly (crashed)" in result.logs
