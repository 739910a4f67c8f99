"""The module maps (docs/how-it-works.md, the docstrings of ``source/`` and ``sink/``, and the
compiled core's in docs/core.md and ``lib.rs``) name every module that exists, and no module that
does not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pyspark_dynamic_kafka.sink as sink_package
import pyspark_dynamic_kafka.source as source_package

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "pyspark_dynamic_kafka"


def _modules() -> list[Path]:
    return sorted(p.relative_to(SRC) for p in SRC.rglob("*.py") if p.name != "__init__.py")


def _how_it_works() -> str:
    """docs/how-it-works.md, the page of "How it works" and its module map."""
    text = (ROOT / "docs" / "how-it-works.md").read_text()
    assert text.startswith("# How it works\n")
    return text


def test_how_it_works_names_every_module_and_its_package() -> None:
    section = _how_it_works()
    missing = [
        str(path)
        for path in _modules()
        if (f"`{path.name}`" not in section and f"{path}`" not in section)
        or (len(path.parts) > 1 and f"`{'/'.join(path.parts[:-1])}/`" not in section)
    ]
    assert missing == []


def test_how_it_works_names_no_module_that_does_not_exist() -> None:
    named = set(re.findall(r"[\w/]+\.py", _how_it_works()))
    existing = {str(p) for p in SRC.rglob("*.py")} | {p.name for p in SRC.rglob("*.py")}
    existing = {n.removeprefix(str(SRC) + "/") for n in existing}
    stale = [n for n in named if n not in existing and not (ROOT / n).exists()]
    assert sorted(stale) == []


@pytest.mark.parametrize(("name", "package"), [("source", source_package), ("sink", sink_package)])
def test_the_package_map_names_every_module_of_its_package(name: str, package: object) -> None:
    doc = package.__doc__ or ""
    missing = [
        str(path)
        for path in _modules()
        if path.parts[0] == name
        and f"pyspark_dynamic_kafka.{'.'.join(path.with_suffix('').parts)}`" not in doc
    ]
    assert missing == []


CRATE = ROOT / "native" / "src"


def _rust_files() -> list[str]:
    return sorted(str(p.relative_to(CRATE)) for p in CRATE.rglob("*.rs"))


def _core_modules_section() -> str:
    """The section "The core's modules" of docs/core.md, up to its first bold paragraph."""
    text = (ROOT / "docs" / "core.md").read_text()
    start = text.index("## The core's modules\n")
    return text[start : text.index("\n**", start)]


@pytest.mark.parametrize("where", ["lib.rs", "docs/core.md"])
def test_the_crate_maps_name_every_rust_file_and_no_other(where: str) -> None:
    text = (CRATE / "lib.rs").read_text() if where == "lib.rs" else _core_modules_section()
    named = set(re.findall(r"`([\w/]+\.rs)`", text))
    assert sorted(set(_rust_files()) - named) == []
    assert sorted(named - set(_rust_files())) == []
