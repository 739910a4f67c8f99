"""The demo's metadata: the file it starts from, and the reference metadata server
(``dynamic-kafka serve``) that both of its jobs read it from, with ``dynamic-kafka move``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

TOKEN = "demo-write-token"
DEADLINE_S = 300  # waits for a process or a query give up only after this (a loaded machine)


def write_metadata(path: Path, clusters: dict[str, Any], owners: list[str]) -> None:
    """Map stream ``orders`` to topic ``orders`` on ``owners``; rewrite the file atomically."""
    document = {
        "clusters": {n: {"bootstrap.servers": c.bootstrap_servers} for n, c in clusters.items()},
        "streams": {
            "orders": [
                {"cluster": o, "topics": ["orders"], "write": o == owners[0]} for o in owners
            ]
        },
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document, sort_keys=False))
    os.replace(tmp, path)


class MetadataServer:
    """``dynamic-kafka serve`` in a subprocess on a free port, logging to a file."""

    def __init__(self, metadata: Path, workdir: Path) -> None:
        self.token_file = workdir / "token"
        self.token_file.write_text(TOKEN)
        self.token_file.chmod(0o600)
        self.log = workdir / "metadata-server.log"
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        command = [sys.executable, "-m", "pyspark_dynamic_kafka", "serve"]
        command += ["--metadata", str(metadata), "--port", self.url.rsplit(":", 1)[1]]
        command += ["--token-file", str(self.token_file)]
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + DEADLINE_S  # a healthy server answers at once
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/v1/health", timeout=2):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log = self.log.read_text()
                    raise RuntimeError(f"metadata server did not start: {log}") from None
                time.sleep(0.2)

    def move(self, stream: str, source: str, target: str, *, write: bool = False) -> None:
        """``dynamic-kafka move`` (``--write``: only the write marker) against this server."""
        command = [sys.executable, "-m", "pyspark_dynamic_kafka", "move", stream]
        command += ["--write"] if write else []
        command += ["--from", source, "--to", target, "--metadata", self.url]
        command += ["--token-file", str(self.token_file)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE_S)
        print(result.stdout.rstrip() or result.stderr.rstrip(), flush=True)
        if result.returncode != 0:
            raise RuntimeError(f"dynamic-kafka move failed: {result.stderr}")

    def answers(self) -> dict[str, int]:
        """How the server answered the query's metadata reads, by status."""
        statuses = re.findall(
            r'"GET /v1/streams\?id=orders HTTP/1.1" (\d{3})', self.log.read_text()
        )
        return {status: statuses.count(status) for status in sorted(set(statuses))}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(20)
