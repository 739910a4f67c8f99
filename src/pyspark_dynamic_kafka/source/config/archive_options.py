"""The hybrid read's options (``archive.*``): an archive of this source's columns read before
Kafka (:mod:`~pyspark_dynamic_kafka.source.archive`), declared once; the rule that they need
``archive.path`` is :func:`~pyspark_dynamic_kafka.source.config.validation.check_archive`.
"""

from __future__ import annotations

from typing import Any

from pyspark_dynamic_kafka.optionspec import OptionSpec, integer, nonempty

__all__ = ["ARCHIVE_OPTIONS"]

#: The ``archive.*`` options.
ARCHIVE_OPTIONS: tuple[OptionSpec[Any], ...] = (
    OptionSpec(
        "archive.path",
        nonempty,
        None,
        "A Parquet archive of this source's columns (directory, file or glob; local, s3a://, "
        "...) read before Kafka; each partition then switches to Kafka at its largest archived "
        "offset + 1.",
        attr="archive_path",
    ),
    OptionSpec(
        "archive.maxFilesPerTrigger",
        integer(1),
        None,
        "Streams with archive.path: at most this many archive files per micro-batch.",
        scope="stream",
        attr="archive_max_files",
    ),
    OptionSpec(
        "archive.switchTimestamp",
        integer(0),
        None,
        "With archive.path: switch by time instead of by offset: archived records before this "
        "epoch-ms value, then Kafka from its first record at or after it.",
        attr="archive_switch_timestamp",
    ),
)
