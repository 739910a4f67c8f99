"""The reference metadata server and the ``dynamic-kafka`` command, run as subprocesses."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.helpers import DEADLINE, wait_until

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

WRITE_TOKEN = "cli-write-token-77aa31"
"""The write token of the ``cli_server`` fixture."""
READ_TOKEN = "cli-read-token-4be0c2"
"""The read token of the ``cli_server`` fixture."""


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cli_command() -> list[str]:
    """The installed ``dynamic-kafka`` script (falls back to ``python -m``)."""
    script = BIN / "dynamic-kafka"
    if script.exists():
        return [str(script)]
    found = shutil.which("dynamic-kafka")
    return [found] if found else [sys.executable, "-m", "pyspark_dynamic_kafka"]


def run_cli(args: Sequence[str], command: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``dynamic-kafka ARGS`` (or ``command ARGS``); output captured as text, wide enough for
    tables. The timeout only bounds a hung process."""
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [*(command or cli_command()), *args],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=env,
    )


def token_file(path: Path, token: str) -> Path:
    """Write a token file that only its owner may read (the server insists)."""
    path.write_text(token)
    path.chmod(0o600)
    return path


@dataclass
class MetadataServer:
    """``python -m pyspark_dynamic_kafka serve`` on a fixed loopback port, logging to a file.

    Parameters
    ----------
    metadata:
        The metadata file to serve.
    log:
        Where the server's stdout and stderr go (appended across restarts).
    token_file, read_token_file:
        The write and read tokens' files, if any.
    """

    metadata: Path
    log: Path
    token_file: Path | None = None
    read_token_file: Path | None = None
    port: int = field(default_factory=free_port, init=False)
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MetadataServer:
        """Start the server and wait until it answers its health check."""
        command = [sys.executable, "-m", "pyspark_dynamic_kafka", "serve"]
        command += ["--metadata", str(self.metadata), "--port", str(self.port)]
        if self.token_file is not None:
            command += ["--token-file", str(self.token_file)]
        if self.read_token_file is not None:
            command += ["--read-token-file", str(self.read_token_file)]
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        wait_until(self._healthy, what=f"the server to start; log:\n{self.log}")
        return self

    def _healthy(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise AssertionError(f"the server exited: {self.log_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{self.url}/v1/health", timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(20)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
        """(status, ETag, body) of a GET."""
        request = urllib.request.Request(f"{self.url}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers.get("ETag", ""), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("ETag", ""), exc.read()
