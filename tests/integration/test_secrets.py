"""A secret from the metadata never leaves the clients: not in any log line (Spark, py4j, Python
logging of every Python process, worker stderr, librdkafka), error, progress report
(``reportLatestOffset``), checkpoint file, Prometheus scrape or metrics line of the monitoring
listener.

The cluster's metadata holds ``sasl.password: <sentinel>`` with ``security.protocol: PLAINTEXT``,
so the query really connects with properties that include the secret.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml
from tests.integration.faults import leaks, verbose_environment

ROOT = Path(__file__).resolve().parents[2]


def _between(text: str, start: str, end: str) -> str:
    begin = text.index(start) + len(start)
    return text[begin : text.index(end, begin)]


def _metadata(path: Path, bootstrap: str, sentinel: str) -> None:
    document = {
        "clusters": {
            "east": {
                "bootstrap.servers": bootstrap,
                "security.protocol": "PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "reader",
                "sasl.password": sentinel,
                "debug": "conf,security",  # librdkafka logs its configuration too
            }
        },
        "streams": {"orders": [{"cluster": "east", "topics": ["orders"]}]},
    }
    path.write_text(yaml.safe_dump(document))


def test_secret_sentinel_appears_nowhere(kafka_clusters: Any, tmp_path: Path) -> None:
    sentinel = f"SENTINEL-{uuid.uuid4().hex}"
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2)
    east.produce("orders", [(None, f"v{i}") for i in range(10)])
    meta, broken = tmp_path / "streams.yaml", tmp_path / "broken.yaml"
    _metadata(meta, east.bootstrap_servers, sentinel)
    _metadata(broken, "127.0.0.1:1", sentinel)
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    env = verbose_environment(tmp_path / "site")
    app = ROOT / "tests" / "integration" / "secrets_app.py"
    args = [str(meta), str(broken), str(checkpoint), str(output), east.bootstrap_servers]
    result = subprocess.run(
        [sys.executable, str(app), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,  # bounds a hung app only; the app's own waits end sooner
        check=False,
    )
    logs = result.stdout + result.stderr
    (tmp_path / "app.log").write_text(logs)
    assert result.returncode == 0, f"the app failed, see {tmp_path / 'app.log'}"

    # The run did what it should, and its logs were captured from every kind of process.
    assert "STREAMED 10" in logs and "BATCH 10" in logs
    stream_error = _between(logs, "STREAM ERROR <<", ">>")
    assert "Data loss" in stream_error and "east/orders/0" in stream_error
    broken_error = _between(logs, "BROKEN ERROR <<", ">>")
    assert "Cluster 'east' (127.0.0.1:1)" in broken_error
    assert "PROGRESS" in logs and '"latestOffset"' in logs
    scrape = _between(logs, "SCRAPE <<", ">>")
    assert 'dynamic_kafka_records_total{cluster="east",query=' in scrape
    assert '"kafkaClustersCount": 1' in _between(logs, "METRICS <<", ">>")
    assert "'pyspark.worker']" in logs  # Python workers log at DEBUG
    assert "'pyspark.sql.worker.plan_data_source_read']" in logs  # the batch planner too
    # the stream's driver-side Python (its first partitions entering)
    assert "pyspark_dynamic_kafka.source.driver.cluster_view INFO" in logs
    assert "starts at offset" in logs
    assert "INFO MicroBatchExecution" in logs  # Spark's own log
    assert "sasl.password = [redacted]" in logs  # librdkafka's configuration dump (consumers)

    files = [p for p in checkpoint.rglob("*") if p.is_file()]
    assert any("offsets" in p.parts for p in files)
    assert leaks(sentinel, logs, files) == []
