"""The filesystem of a location an option names (``archive.path``, ``schemaTrackingLocation``).

A location is a local path or a URI. pyarrow serves local paths, ``file://``, ``s3://`` (also
Hadoop's ``s3a://`` and ``s3n://``, what Spark users write), ``gs://``, ``hdfs://`` and
``abfs://`` (:func:`pyarrow.fs.FileSystem.from_uri`); a scheme pyarrow does not serve goes
through ``fsspec`` (``memory://`` built in, others with their fsspec package), and is otherwise
refused naming the option, the scheme and the fix. Driver and executors resolve a location the
same way, so a task carries paths, never a filesystem object.
"""

from __future__ import annotations

import functools
import os

import pyarrow as pa
import pyarrow.fs as pafs

from pyspark_dynamic_kafka.errors import DynamicKafkaError

__all__ = ["filesystem", "location_uri"]

#: Hadoop's names of S3 -> pyarrow's.
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


def location_uri(option: str) -> str:
    """``option`` as a URI pyarrow reads: a local path made absolute, Hadoop's S3 schemes
    renamed."""
    scheme, sep, rest = option.partition("://")
    if not sep:
        return os.path.abspath(os.path.expanduser(option))
    return f"{_SCHEME_ALIASES.get(scheme.lower(), scheme.lower())}://{rest}"


@functools.lru_cache(maxsize=16)
def filesystem(
    base: str, option: str, error: type[DynamicKafkaError]
) -> tuple[pafs.FileSystem, str]:
    """The filesystem serving ``base`` (a :func:`location_uri`) and the path of ``base`` in it,
    cached per process.

    Parameters
    ----------
    base:
        The location.
    option:
        The option that names it (for the message).
    error:
        The error to raise.

    Raises
    ------
    DynamicKafkaError
        ``error``, when neither pyarrow nor fsspec serves the scheme.
    """
    try:
        fs, path = pafs.FileSystem.from_uri(base)
        return fs, str(path)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        scheme = base.partition("://")[0] if "://" in base else "file"
        return _fsspec(base, scheme, exc, option, error)


def _fsspec(
    base: str, scheme: str, cause: Exception, option: str, error: type[DynamicKafkaError]
) -> tuple[pafs.FileSystem, str]:
    import fsspec  # imported only for a scheme pyarrow does not serve

    try:
        handler = fsspec.filesystem(scheme)
    except (ImportError, ValueError) as exc:
        raise error(
            f"{option}: no filesystem for the scheme '{scheme}' of {base!r} (pyarrow: "
            f"{cause}; fsspec: {exc}). Use a scheme pyarrow serves (a local path, file, s3/s3a, "
            f"gs, hdfs, abfs), or install the fsspec package for '{scheme}' on the driver and "
            "every executor."
        ) from None
    wrapped = pafs.PyFileSystem(pafs.FSSpecHandler(handler))
    return wrapped, str(handler._strip_protocol(base))
