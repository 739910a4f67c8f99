"""The requirements of ``make test-min``, printed: the package's dependencies and every extra's at
the lowest version they declare (``name>=X`` becomes ``name==X``; PySpark at the ``spark`` extra's
floor), and the test tools at their pins in requirements-dev.txt, less those of tests make
test-min does not run and the build and lint tools (the package comes from its wheels).

Run as ``python tests/min_requirements.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Not needed by the tests make test-min runs: the build and lint tools, the server contract's
#: fuzzer (test_server_contract_fuzz.py) and the Spark Connect client (test_deploy.py).
LEFT_OUT = {"maturin", "mypy", "ruff", "types-pyyaml", "schemathesis", "grpcio", "grpcio-status"}
LEFT_OUT |= {"googleapis-common-protos", "protobuf", "zstandard"}


def requirement_name(requirement: str) -> str:
    """A requirement's distribution name, normalized: ``fastavro>=1.9`` -> ``fastavro``."""
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def floors() -> dict[str, str]:
    """Each declared requirement's floor, ``name==X``, by name."""
    import tomllib  # Python 3.11's; the module's other helpers serve 3.10's tests too

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"])
    for requirements in project["optional-dependencies"].values():
        declared += requirements
    found = {}
    for requirement in declared:
        floor = re.search(r">=\s*([^,;\s]+)", requirement)
        if floor is None:
            raise SystemExit(f"{requirement!r} in pyproject.toml names no lowest version (>=)")
        version = floor.group(1)
        if requirement_name(requirement) == "pyspark" and version.count(".") == 1:
            version += ".0"
        found[requirement_name(requirement)] = f"{requirement_name(requirement)}=={version}"
    return found


def requirements() -> list[str]:
    """The floors, then requirements-dev.txt's other pins."""
    lowest = floors()
    lines = list(lowest.values())
    for line in (ROOT / "requirements-dev.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if requirement_name(line) not in lowest and requirement_name(line) not in LEFT_OUT:
            lines.append(line)
    return lines


if __name__ == "__main__":
    print("\n".join(requirements()))
