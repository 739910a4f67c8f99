"""The process handling under start_spark_standalone and start_spark_connect, on small real
processes (the JVMs themselves are started by tests/integration/test_deploy.py)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from pyspark_dynamic_kafka.testing import SparkStartError, spark_home, start_spark_standalone
from pyspark_dynamic_kafka.testing.spark_process import (
    SparkProcess,
    ancestors,
    get_json,
    spark_env,
    wait_ready,
)


def test_spark_env_is_loopback_without_the_tests_python_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.0.0.1")
    env = spark_env({"PYSPARK_PYTHON": "/opt/jobs/bin/python"})
    assert "PYTHONPATH" not in env and "SPARK_CONNECT_MODE_ENABLED" not in env
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert env["PYSPARK_PYTHON"] == "/opt/jobs/bin/python"
    assert (Path(env["SPARK_HOME"]) / "bin" / "spark-class").exists()
    assert Path(env["SPARK_HOME"]) == spark_home()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_ancestors_of_a_child_lead_through_this_process(tmp_path: Path) -> None:
    child = SparkProcess("sleeper", ["sleep", "60"], tmp_path / "s.log", dict(os.environ)).start()
    try:
        chain = ancestors(child.pid)
        # setpriv (when present) execs sleep: the child's parent is this process.
        assert chain[0] == os.getpid()
        assert chain[1:3] == ancestors(os.getpid())[:2]
    finally:
        child.stop(timeout=30)
    assert ancestors(2**22 + 1) == []  # above any pid_max: no such process


def test_a_process_that_exits_fails_the_wait_at_once_with_its_log(tmp_path: Path) -> None:
    process = SparkProcess(
        "master", ["sh", "-c", "echo no java here; exit 3"], tmp_path / "m.log", dict(os.environ)
    ).start()
    started = time.monotonic()
    with pytest.raises(SparkStartError, match=r"(?s)master exited with code 3.*no java here"):
        wait_ready([process], lambda: False, "standalone cluster", timeout=300)
    assert time.monotonic() - started < 60


def test_a_process_not_ready_in_time_fails_with_the_last_error(tmp_path: Path) -> None:
    process = SparkProcess("server", ["sleep", "60"], tmp_path / "c.log", dict(os.environ))
    process.start()
    try:

        def refused() -> bool:
            raise ConnectionRefusedError("nobody listens")

        with pytest.raises(SparkStartError, match=r"not ready after 0.5s.*nobody listens"):
            wait_ready([process], refused, "connect server", timeout=0.5)
    finally:
        process.stop(timeout=30)
    assert process.process is None


def test_stop_kills_what_ignores_sigterm(tmp_path: Path) -> None:
    stubborn = [sys.executable, "-c", "import signal, time; signal.signal(15, signal.SIG_IGN); "
                "print('up', flush=True); time.sleep(600)"]  # fmt: skip
    process = SparkProcess("stubborn", stubborn, tmp_path / "x.log", dict(os.environ)).start()
    wait_ready([process], lambda: "up" in process.log_tail(), "stubborn", timeout=300)
    popen = process.process
    process.stop(timeout=0.5)
    assert popen is not None and popen.returncode == -9


def test_only_loopback_endpoints_are_read() -> None:
    for url in ("http://10.0.0.1:8080/json/", "http://127.0.0.1.example.com:80/json/"):
        with pytest.raises(ValueError, match="only loopback"):
            get_json(url)
    # Any address of 127.0.0.0/8 is loopback (a worker on 127.0.0.2): refused here only
    # because nothing listens on the discard port.
    with pytest.raises(OSError):
        get_json("http://127.0.0.2:9/json/", timeout=5)


@pytest.mark.parametrize(
    "hosts", [("10.0.0.1", "127.0.0.2"), ("127.0.0.1",), ("127.0.0.1", "127.0.0.2", "127.0.0.3")]
)
def test_workers_bind_to_as_many_loopback_addresses_as_there_are_workers(
    hosts: tuple[str, ...], tmp_path: Path
) -> None:
    with (
        pytest.raises(ValueError, match="hosts must be 2 loopback addresses"),
        start_spark_standalone(workers=2, hosts=hosts, log_dir=tmp_path),
    ):
        pass
    assert not list(tmp_path.glob("*.log"))  # nothing was started
