"""The Python of the Spark workers in the cluster tests: an environment of its own that has the
package, so that executors (and a Spark Connect server) can only get it from there.

It is a fresh venv (``--without-pip``, under a second) with a copy of
``src/pyspark_dynamic_kafka`` in its ``site-packages``, laid out and byte-compiled as installing
the wheel does, and a path entry to this test venv's ``site-packages`` for the dependencies
(pyspark, pyarrow, confluent-kafka, PyYAML). Installing those again would copy about 500 MB per
run for nothing the test checks; the package itself is what must come from the workers'
environment. The test venv's own install of the package is an editable one, a path to ``src/``
that a path entry does not follow (``.pth`` files of a directory reached through a path entry
are not read), so executors importing the package import the copy: tests check its
``__file__``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pyspark_dynamic_kafka

PACKAGE = Path(pyspark_dynamic_kafka.__file__).resolve().parent
_WHERE = "import os, pyspark_dynamic_kafka as p; print(os.path.dirname(p.__file__))"


def make_worker_python(target: Path) -> Path:
    """Create the workers' environment in ``target``; returns its ``python``."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=300
    )
    python = target / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout.strip()
    )
    shutil.copytree(PACKAGE, site / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    # Byte-compiled as pip does at install: a Python worker compiling the package on its first
    # import may not connect back to Spark within its 10 s on a loaded machine (docs/deploy.md).
    subprocess.run(
        [str(python), "-m", "compileall", "-q", str(site / PACKAGE.name)], check=True, timeout=300
    )
    (site / "test-venv-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def package_location(python: Path) -> str:
    """Where ``python`` imports the package from (the directory of its ``__init__``)."""
    return subprocess.run(
        [str(python), "-c", _WHERE],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout.strip()
