"""Files replaced whole (``atomic_file.replace_text``): metadata files, hand-offs, write metrics."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pyspark_dynamic_kafka.atomic_file import replace_text


@pytest.mark.parametrize("durable", [False, True])
def test_a_file_is_created_then_replaced_whole_and_keeps_its_mode(
    tmp_path: Path, durable: bool
) -> None:
    target = tmp_path / "streams.yaml"
    replace_text(target, "first: 1\n", durable=durable)
    assert target.read_text(encoding="utf-8") == "first: 1\n"
    os.chmod(target, 0o640)
    replace_text(target, "second: é\n", durable=durable)
    assert target.read_text(encoding="utf-8") == "second: é\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["streams.yaml"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "batch-3.json"
    replace_text(target, "{}")
    with pytest.raises(UnicodeEncodeError):
        replace_text(target, "\udc80")  # a lone surrogate cannot be encoded as UTF-8
    assert target.read_text(encoding="utf-8") == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batch-3.json"]


def test_a_missing_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        replace_text(tmp_path / "gone" / "x.json", "{}")
