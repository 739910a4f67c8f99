"""The module maps (docs/how-it-works.md, the docstrings of ``source/`` and ``sink/``, and the
compiled core's in docs/core.md and ``lib.rs``) name every module that exists, and no module that
does not; the compiled core's comments (and Cargo.toml's) name only Python modules and Python or
Rust files that exist."""

from __future__ import annotations

import ast
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


NATIVE = ROOT / "native"

#: Kafka client properties that start like one of the package's modules (``metadata.*``).
_CLIENT_PROPERTIES = frozenset({"metadata.broker.list", "metadata.max.age.ms"})

_PYTHON_TOPS = "|".join(
    sorted(p.stem for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists())
)
#: ``pyspark_dynamic_kafka.x.y`` anywhere, or a backticked ``x.y`` whose ``x`` is one of the
#: package's top-level modules (``source.read``); ``avro.rs`` and the like are Rust files.
_DOTTED = re.compile(rf"\bpyspark_dynamic_kafka((?:\.\w+)+)|`((?:{_PYTHON_TOPS})(?:\.\w+)+)`")
#: A path of a file with at least one directory: ``src/read/direct/tls.rs``, ``avro/framing.py``.
_PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:rs|py))\b")


def _comments(path: Path) -> list[tuple[int, str]]:
    """(line number, comment text) of each commented line of a Rust file or of Cargo.toml."""
    marker = re.compile(r"//(.*)") if path.suffix == ".rs" else re.compile(r"(?:^|\s)#(.*)")
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = marker.search(line)
        if match:
            found.append((number, match.group(1)))
    return found


def _defines(module: Path, name: str) -> bool:
    """Whether ``module`` (a Python file) defines or imports ``name`` at its top level."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = {node.name}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            continue
        if name in names:
            return True
    return False


def _python_name_exists(dotted: str) -> bool:
    """Whether ``dotted`` (below the package) is a module, or a name a module defines."""
    path = SRC
    parts = dotted.split(".")
    for index, part in enumerate(parts):
        if (path / part / "__init__.py").exists():
            path = path / part
            continue
        module = path / f"{part}.py"
        if not module.exists():
            return False
        rest = parts[index + 1 :]
        return not rest or _defines(module, rest[0])
    return True


def _path_exists(named: str) -> bool:
    """Whether a named file exists: a Rust one under ``native/`` (``src/...``) or the crate's
    ``src/``, a Python one in the package or the repository."""
    if named.endswith(".rs"):
        return (NATIVE / named).exists() if named.startswith("src/") else (CRATE / named).exists()
    return (SRC / named).exists() or (ROOT / named).exists()


def _commented_files() -> list[Path]:
    return [*sorted(CRATE.rglob("*.rs")), NATIVE / "Cargo.toml"]


@pytest.mark.parametrize("path", _commented_files(), ids=lambda p: str(p.relative_to(NATIVE)))
def test_rust_comments_name_only_modules_that_exist(path: Path) -> None:
    """A Rust comment (or a Cargo.toml one) that names a Python module
    (``pyspark_dynamic_kafka.source.schema``, `` `source.schema` ``), a Python file or a Rust
    file (``src/read/direct/tls.rs``) names one that exists."""
    stale = []
    for number, text in _comments(path):
        for full, short in _DOTTED.findall(text):
            dotted = full.lstrip(".") if full else short
            if short.endswith((".rs", ".py")) or dotted in _CLIENT_PROPERTIES:
                continue
            if not _python_name_exists(dotted):
                stale.append(f"{number}: {full and 'pyspark_dynamic_kafka.'}{dotted}")
        for named in _PATH.findall(text):
            if not _path_exists(named):
                stale.append(f"{number}: {named}")
    assert stale == []
