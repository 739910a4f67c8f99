"""The archive of hybrid reads on real Parquet files: listing, footer survey, switch offsets, read
order, micro-batches and tasks, the phase in the offset JSON, and conforming to the output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_dynamic_kafka.errors import ArchiveError, OffsetsError, OptionsError
from pyspark_dynamic_kafka.source.archive.files import list_files, parse_location
from pyspark_dynamic_kafka.source.archive.plan import check_same_plan, make_plan
from pyspark_dynamic_kafka.source.checkpoint import Cursor, Retained, SourceOffset, decode, encode
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.modes import NoArchive
from pyspark_dynamic_kafka.source.executor.archive import ArchiveRead, ArchiveTask, read_archive
from pyspark_dynamic_kafka.source.schema import arrow_schema


def _write(path: Path, rows: list[tuple[str, int, int]], group: int = 1000, **drop: Any) -> None:
    """Parquet of (cluster, partition, offset) rows with the source's other columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    columns: dict[str, Any] = {
        "key": pa.array([None] * len(rows), pa.binary()),
        "value": pa.array([f"{c}/{p}/{o}".encode() for c, p, o in rows], pa.binary()),
        "topic": ["orders"] * len(rows),
        "partition": pa.array([p for _, p, _ in rows], pa.int32()),
        "offset": pa.array([o for _, _, o in rows], pa.int64()),
        "timestamp": pa.array([1_000_000 * o for _, _, o in rows], pa.timestamp("ns")),
        "timestampType": pa.array([0] * len(rows), pa.int32()),
        "cluster": [c for c, _, _ in rows],
    }
    for name in drop:
        columns.pop(name)
    pq.write_table(pa.table(columns), path, row_group_size=group)


def _run(cluster: str, partition: int, first: int, last: int) -> list[tuple[str, int, int]]:
    return [(cluster, partition, o) for o in range(first, last + 1)]


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """Files whose path order is not the offset order; one row group mixes partitions; east's
    second file takes its cluster from its directory; hidden files around."""
    root = tmp_path / "archive"
    _write(root / "a.parquet", _run("east", 0, 50, 99) + _run("east", 1, 0, 9), group=1000)
    _write(root / "b.parquet", _run("east", 0, 0, 49), group=10)
    _write(root / "cluster=west" / "c.parquet", _run("west", 0, 0, 6), cluster=None)
    (root / "_SUCCESS").write_text("")
    (root / ".a.parquet.crc").write_text("")
    (root / "_temporary").mkdir()
    (root / "_temporary" / "x.parquet").write_text("not parquet")
    return root


def test_listing_skips_hidden_names_and_reads_directory_values(archive: Path) -> None:
    files = list_files(parse_location(str(archive)))
    assert [f.relative for f in files] == ["a.parquet", "b.parquet", "cluster=west/c.parquet"]
    assert files[2].values == (("cluster", "west"),)
    globbed = list_files(parse_location(str(archive / "cluster=*")))
    assert [f.relative for f in globbed] == ["cluster=west/c.parquet"]


def test_a_scheme_pyarrow_does_not_serve_is_read_through_fsspec(tmp_path: Path) -> None:
    import fsspec

    local = tmp_path / "a.parquet"
    _write(local, _run("east", 0, 0, 9))
    memory = fsspec.filesystem("memory")
    memory.put_file(str(local), "/lake-fsspec/archive/a.parquet")
    try:
        files = list_files(parse_location("memory://lake-fsspec/archive"))
        assert [f.relative for f in files] == ["a.parquet"]
        assert make_plan("memory://lake-fsspec/archive", exact=True).rows == (10,)
    finally:
        memory.rm("/lake-fsspec", recursive=True)


@pytest.mark.parametrize(
    ("option", "base", "pattern"),
    [
        ("s3a://lake/archive/", "s3://lake/archive/", ()),
        ("s3a://lake/a/date=2024-*/x", "s3://lake/a", ("date=2024-*", "x")),
        ("/data/a/*.parquet", "/data/a", ("*.parquet",)),
    ],
)
def test_location_base_and_glob(option: str, base: str, pattern: tuple[str, ...]) -> None:
    location = parse_location(option)
    assert (location.base, location.pattern) == (base, pattern)


@pytest.mark.parametrize(
    ("option", "fragment"),
    [("nosuch://bucket/x", "scheme 'nosuch'"), ("/no/such/dir", "nothing exists")],
)
def test_unusable_archive_paths_are_named(option: str, fragment: str) -> None:
    with pytest.raises(ArchiveError, match=fragment):
        make_plan(option, exact=True)


def test_plan_switch_offsets_and_read_order(archive: Path) -> None:
    plan = make_plan(str(archive), exact=True)
    assert dict(plan.switch) == {("east", "orders", 0): 100, ("east", "orders", 1): 10,
                                 ("west", "orders", 0): 7}  # fmt: skip
    # b holds east/0 [0, 49], a holds [50, 99]: b is read first although a sorts first.
    assert [f.relative for f in plan.files] == ["b.parquet", "a.parquet", "cluster=west/c.parquet"]
    assert plan.rows == (50, 60, 7)
    check_same_plan(make_plan(str(archive), True, plan.listed_at_ms), 3, plan.fingerprint)
    with pytest.raises(ArchiveError, match="changed since the query started"):
        check_same_plan(plan, 3, "0" * 16)


def test_plan_batches_and_tasks_are_whole_consecutive_files(archive: Path) -> None:
    plan = make_plan(str(archive), exact=True)
    assert plan.select(0, max_files=2, max_rows=None) == 2
    assert plan.select(0, max_files=None, max_rows=55) == 1  # the first file always goes
    assert plan.select(1, max_files=None, max_rows=67) == 3
    settings = ArchiveRead(plan.base)
    tasks = plan.tasks(0, 3, settings)
    assert [[f.relative for f in t.files] for t in tasks] == [
        ["b.parquet", "a.parquet"],
        ["cluster=west/c.parquet"],
    ]
    assert len(plan.tasks(0, 3, settings, min_tasks=3)) == 3


def test_an_archive_without_offsets_needs_the_timestamp_switch(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", _run("east", 0, 0, 9), offset=None)
    with pytest.raises(ArchiveError, match=r"no column offset.*archive\.switchTimestamp"):
        make_plan(str(tmp_path), exact=True)
    assert make_plan(str(tmp_path), exact=False).switch == {}


def test_reading_conforms_to_the_output_schema(archive: Path) -> None:
    plan = make_plan(str(archive), exact=True)
    task = ArchiveTask(plan.files, ArchiveRead(plan.base, include_headers=True))
    table = pa.Table.from_batches(list(read_archive(task)))
    assert table.schema == arrow_schema(include_headers=True)
    rows = list(
        zip(*(table.column(c).to_pylist() for c in ("cluster", "partition", "offset")), strict=True)
    )
    assert rows == [*_run("east", 0, 0, 49), *_run("east", 0, 50, 99), *_run("east", 1, 0, 9),
                    *_run("west", 0, 0, 6)]  # fmt: skip
    assert table.column("headers").null_count == table.num_rows
    assert table.column("timestamp").to_pylist()[1].timestamp() == 0.001  # ns -> us, UTC

    before = ArchiveTask(plan.files[2:], ArchiveRead(plan.base, before_ms=3))
    offsets = pa.Table.from_batches(list(read_archive(before))).column("offset").to_pylist()
    assert offsets == [0, 1, 2]  # timestamps 0, 1, 2 ms are before 3 ms


def test_phase_in_the_offset_json_round_trips_and_defaults_to_live() -> None:
    offsets = {("east", "orders", 1): 10, ("east", "orders", 0): 100}
    cursor = Cursor(2, 24, "abc", 1700)
    encoded = encode(SourceOffset(offsets, cursor=cursor, hybrid=True))
    assert list(encoded) == ["version", "phase", "archive", "clusters"]
    assert encoded["clusters"] == {"east": {"orders": {"0": 100, "1": 10}}}
    assert decode(encoded).cursor == cursor
    assert decode({"version": 1, "clusters": {}}).cursor is None
    assert encode(SourceOffset(offsets, hybrid=True)) == {
        "version": 1,
        "phase": "live",
        "clusters": {"east": {"orders": {"0": 100, "1": 10}}},
    }
    with pytest.raises(OffsetsError, match=r"no 'archive\.path'"):
        NoArchive().advance(decode(encoded), None)
    with pytest.raises(OffsetsError, match="phase 'later'"):
        decode({"version": 1, "phase": "later", "clusters": {}})


def test_archived_partitions_not_assigned_are_retained_without_expiry() -> None:
    """Archived partitions the metadata does not assign sit under ``retained`` without
    ``removedAtMs``."""
    kept = Retained({("west", "orders", 0): 7})
    encoded = encode(SourceOffset({}, kept, Cursor(2, 24, "abc", 1700), hybrid=True))
    assert list(encoded) == ["version", "phase", "archive", "clusters", "retained"]
    assert encoded["retained"] == {"west": {"orders": {"offsets": {"0": 7}}}}
    assert decode(encoded).retained == kept


def test_archive_options_need_archive_path() -> None:
    base = {"metadataService": "file", "metadataService.path": "/m.yaml", "streamIds": "s"}
    with pytest.raises(OptionsError, match=r"archive\.maxFilesPerTrigger.*archive\.path"):
        parse_options({**base, "archive.maxFilesPerTrigger": "2"})
    parsed = parse_options({**base, "archive.path": "/a", "archive.switchTimestamp": "5"})
    assert (parsed.archive_path, parsed.archive_switch_timestamp) == ("/a", 5)
    with pytest.raises(OptionsError, match="integer >= 1"):
        parse_options({**base, "archive.path": "/a", "archive.maxFilesPerTrigger": "0"})


def _stamped(path: Path, stamps: list[int]) -> ArchiveTask:
    """A task over one file whose ``timestamp`` column holds ``stamps`` in milliseconds."""
    path.parent.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "offset": pa.array(range(len(stamps)), pa.int64()),
                "timestamp": pa.array(stamps, pa.timestamp("ms")),
            }
        ),
        path,
    )
    plan = make_plan(str(path.parent), exact=False)
    return ArchiveTask(plan.files, ArchiveRead(plan.base, before_ms=2**63 - 1))


def test_millisecond_timestamps_past_sparks_range_fail_as_spark_fails(tmp_path: Path) -> None:
    # Spark's Parquet reader multiplies milliseconds exactly (Math.multiplyExact): the edges of
    # its range read as microseconds, one past either fails naming the file and the value. A
    # switch timestamp past the range keeps every record (all are before it).
    edges = [9_223_372_036_854_775, -9_223_372_036_854_775, -1]
    table = pa.Table.from_batches(list(read_archive(_stamped(tmp_path / "a" / "f.parquet", edges))))
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [ms * 1000 for ms in edges]
    for past in (9_223_372_036_854_776, -9_223_372_036_854_776):
        path = tmp_path / str(past) / "f.parquet"
        with pytest.raises(ArchiveError) as failed:
            list(read_archive(_stamped(path, [0, past])))
        assert f"Reading archive file {str(path)!r} failed: its timestamp[ms] column" in str(
            failed.value
        )
        assert "past Spark's timestamp range (-9223372036854775 to 9223372036854775 ms)" in str(
            failed.value
        )
        assert str(failed.value).endswith(f"out of bounds timestamp: {past}")
