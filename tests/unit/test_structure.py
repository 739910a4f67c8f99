"""The package's shape: no import cycle, layers import only downwards, modules under 400 lines.

Imports are read from the source with :mod:`ast` (every ``import`` statement, also inside
functions and ``TYPE_CHECKING`` blocks), so a cycle hidden behind a lazy import is found too.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PACKAGE = "pyspark_dynamic_kafka"
SRC = Path(__file__).resolve().parents[2] / "src" / PACKAGE

#: Layer of each top-level part of the package: a module may import its own layer and lower ones.
LAYERS = {
    "atomic_file": 0,
    "filesystems": 0,
    "errors": 0,
    "spark_versions": 0,
    "events": 0,
    "frozen": 0,
    "logs": 0,
    "gcpause": 0,
    "offset_spec": 0,
    "optionspec": 1,
    "kafka": 1,
    "registry": 1,
    "avro": 1,
    "engines": 2,
    "metadata": 2,
    "source": 3,
    "sink": 3,
    "datasource": 4,
    "server": 4,
    "monitoring": 4,
    "testing": 5,
    "cli": 6,
    "__main__": 7,
    "__init__": 7,
}


#: Sub-layers of ``source/`` (its pipeline by role), each importing only its own and lower ones.
SOURCE_LAYERS = {
    "partition_json": 0,
    "read_limits": 0,
    "checkpoint": 0,
    "contract": 0,
    "schema": 0,
    "config": 1,
    "executor": 2,
    "driver": 3,
    "group": 4,
    "archive": 5,
    "batch": 6,
    "stream": 6,
    "__init__": 8,
}


#: Sub-layers of ``sink/`` (by role), each importing only its own and lower ones.
SINK_LAYERS = {
    "route": 0,
    "config": 1,
    "executor": 2,
    "driver": 3,
    "metrics": 3,
    "rows": 3,
    "writer": 4,
    "__init__": 9,
}


#: Sub-layers of ``metadata/``: the read model, then its editing and HTTP API, then the services
#: over the API and the factory, each importing only its own and lower ones.
METADATA_LAYERS = {
    "model": 0,
    "service": 0,
    "entries": 0,
    "field_checks": 0,
    "document": 0,
    "file": 0,
    "memory": 0,
    "single_cluster": 0,
    "editing": 1,
    "http_api": 1,
    "http": 2,
    "factory": 3,
    "__init__": 4,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """Yield the package modules that ``name`` imports (submodules resolved where they exist)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if t in known else base for t in targets]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith(PACKAGE):
                yield target


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: set(_imports(name, path, known)) for name, path in modules.items()}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports_where(wrong: Callable[[str, str], bool]) -> list[str]:
    """Every ``importer imports imported`` of the package for which ``wrong`` holds, sorted."""
    return sorted(
        f"{name} imports {target}"
        for name, targets in _graph().items()
        for target in targets
        if wrong(name, target)
    )


def test_no_import_cycle() -> None:
    graph = _graph()
    # A package's __init__ re-exporting its submodules is not a cycle through the package.
    edges = {
        name: {t for t in targets if not name.startswith(t + ".")}
        for name, targets in graph.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert cycles == []


def test_layers_import_only_downwards() -> None:
    assert (
        _imports_where(
            lambda name, target: LAYERS.get(_top(target), 0) > LAYERS.get(_top(name), 99)
        )
        == []
    )


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_module_is_under_400_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) < 400


_CRATE = Path(__file__).resolve().parents[2] / "native" / "src"


@pytest.mark.parametrize(
    "path", sorted(_CRATE.rglob("*.rs")), ids=lambda p: str(p.relative_to(_CRATE))
)
def test_rust_module_is_under_400_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) < 400


def _part(module: str, package: str = "source") -> str | None:
    parts = module.split(".")
    if parts[1:2] != [package]:
        return None
    return parts[2] if len(parts) > 2 else "__init__"


@pytest.mark.parametrize(
    ("package", "layers"),
    [("source", SOURCE_LAYERS), ("sink", SINK_LAYERS), ("metadata", METADATA_LAYERS)],
)
def test_sub_layers_import_only_downwards(package: str, layers: dict[str, int]) -> None:
    parts = {_part(name, package) for name in _graph()} - {None}
    assert parts == set(layers), f"a module of {package}/ is in no sub-layer"

    def upwards(name: str, target: str) -> bool:
        part, other = _part(name, package), _part(target, package)
        return part is not None and other is not None and layers[other] > layers[part]

    assert _imports_where(upwards) == []


def test_source_and_sink_do_not_import_each_other() -> None:
    assert (
        _imports_where(lambda name, target: {_top(name), _top(target)} == {"source", "sink"}) == []
    )


def test_monitoring_reads_the_source_through_its_contract_only() -> None:
    def around_the_contract(name: str, target: str) -> bool:
        return (
            _top(name) == "monitoring"
            and _top(target) == "source"
            and target != f"{PACKAGE}.source.contract"
        )

    assert _imports_where(around_the_contract) == []


def test_test_modules_have_unique_basenames() -> None:
    """pytest imports test modules by basename (no packages under tests/): two test files of one
    name in tests/unit and tests/integration stop the whole run at collection."""
    tests = Path(__file__).resolve().parents[1]
    seen: dict[str, list[str]] = {}
    for path in sorted(tests.rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


#: The compiled core's distribution module, and the one module of the package that imports it.
CORE = "pyspark_dynamic_kafka_core"
BOUNDARY = f"{PACKAGE}.engines.core"
#: What ``source/`` and ``sink/`` may import of ``engines/``: the decision, the roles and their
#: implementations by engine, the batches' schema and the decoding of their columns by any
#: engine's decoder; never an implementation itself.
ENGINES_API = {
    f"{PACKAGE}.engines.{name}"
    for name in ("choice", "roles", "implementations", "batches", "columns")
}
#: Engine names, which only ``engines/`` compares a planned engine with.
ENGINE_NAMES = {"DIRECT", "LIBRDKAFKA", "PYTHON", "direct", "librdkafka"}


def _names_the_core(node: ast.AST) -> bool:
    """Whether ``node`` imports the compiled core, or names it as a string (``importlib``,
    ``__import__``)."""
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == CORE for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == CORE and not node.level
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split(".")[0] == CORE and node.value.replace(".", "").isidentifier()
    return False


def test_only_the_boundary_imports_the_compiled_core() -> None:
    importers = sorted(
        name
        for name, path in _modules().items()
        if name != BOUNDARY
        and any(_names_the_core(node) for node in ast.walk(ast.parse(path.read_text())))
    )
    assert importers == []


def test_the_boundary_check_sees_static_lazy_and_string_imports() -> None:
    for code in (
        f"import {CORE}",
        f"from {CORE} import Reader",
        f"from {CORE}._core import Reader",
        f"import importlib\nimportlib.import_module('{CORE}')",
        f"__import__('{CORE}._core')",
    ):
        assert any(_names_the_core(node) for node in ast.walk(ast.parse(code))), code
    docstring = f'"""The compiled core (module ``{CORE}``)."""'
    assert not any(_names_the_core(node) for node in ast.walk(ast.parse(docstring)))


def test_engines_import_nothing_from_source_or_sink() -> None:
    assert (
        _imports_where(
            lambda name, target: _top(name) == "engines" and _top(target) in ("source", "sink")
        )
        == []
    )


def test_source_and_sink_reach_the_engines_through_their_api_only() -> None:
    def around_the_api(name: str, target: str) -> bool:
        return (
            _top(name) in ("source", "sink")
            and _top(target) == "engines"
            and target not in ENGINES_API
        )

    assert _imports_where(around_the_api) == []


def _engine_comparisons(path: Path) -> Iterator[int]:
    """The lines of ``path`` comparing something with an engine's name."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        for operand in (node.left, *node.comparators):
            if (
                (isinstance(operand, ast.Name) and operand.id in ENGINE_NAMES)
                or (isinstance(operand, ast.Attribute) and operand.attr in ENGINE_NAMES)
                or (isinstance(operand, ast.Constant) and operand.value in ENGINE_NAMES)
            ):
                yield node.lineno


def test_source_and_sink_do_not_branch_on_an_engine_name() -> None:
    """Which implementation serves a planned engine is ``engines/``' to say
    (``implementations``, ``choice.on_core``): the source and the sink never compare a planned
    engine with an engine's name."""
    found = [
        f"{name}:{line}"
        for name, path in _modules().items()
        if _top(name) in ("source", "sink")
        for line in _engine_comparisons(path)
    ]
    assert found == []


#: What a name tested in a branch says when it is an engine test: whether the compiled core
#: serves (``task.native``, ``on_core(...)``, ``core``) or which engine (``task.engine``).
ENGINE_WORDS = ("native", "core", "engine")


def _branch_conditions(tree: ast.AST) -> Iterator[tuple[int, ast.expr]]:
    """Every condition a branch tests (``if``/``elif``, a conditional expression, ``while``,
    ``assert``, a comprehension's ``if``, an operand of ``and``/``or``, a ``match``'s subject),
    with its line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.IfExp | ast.While | ast.Assert):
            yield node.lineno, node.test
        elif isinstance(node, ast.comprehension):
            yield from ((node.target.lineno, test) for test in node.ifs)
        elif isinstance(node, ast.BoolOp):
            yield from ((node.lineno, value) for value in node.values)
        elif isinstance(node, ast.Match):
            yield node.lineno, node.subject


def _engine_tests(source: str) -> Iterator[int]:
    """The lines of ``source`` whose branch tests an engine (a name or attribute naming the
    core, ``native`` or an engine, or a call of one)."""
    for line, condition in _branch_conditions(ast.parse(source)):
        for node in ast.walk(condition):
            name = (
                node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else ""
            )
            if any(word in name.lower() for word in ENGINE_WORDS):
                yield line
                break


def test_the_engine_test_check_sees_native_style_branches() -> None:
    for code in (
        "if task.native:\n    pass",
        "opener = NativeTransaction if self.task.native else None",
        "if on_core(task.engine):\n    pass",
        "while not native:\n    pass",
        "ok = task.native and produce()",
        "match task.engine:\n    case _:\n        pass",
        "rows = [r for r in rows if core.INSTALLED]",
    ):
        assert list(_engine_tests(code)) != [], code
    assert list(_engine_tests("reader = range_reader(settings.engine(cluster_id))")) == []


def test_source_and_sink_do_not_branch_on_an_engine() -> None:
    """The source and the sink ask ``engines.implementations`` for the implementation of a
    planned engine and use it: no branch of theirs tests which engine serves (``if
    task.native``, ``x if on_core(engine) else y``)."""
    found = [
        f"{name}:{line}"
        for name, path in _modules().items()
        if _top(name) in ("source", "sink")
        for line in _engine_tests(path.read_text())
    ]
    assert found == []
