"""Build the metadata service named by the ``metadataService`` source option."""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Mapping

from pyspark_dynamic_kafka.errors import DynamicKafkaError, MetadataError, OptionsError
from pyspark_dynamic_kafka.kafka.config import is_secret_key, redact
from pyspark_dynamic_kafka.metadata.file import SUPPORTED_EXTENSIONS, FileMetadataService
from pyspark_dynamic_kafka.metadata.http import DEFAULT_TIMEOUT_MS, HttpMetadataService
from pyspark_dynamic_kafka.metadata.service import KafkaMetadataService
from pyspark_dynamic_kafka.metadata.single_cluster import (
    DEFAULT_CLUSTER_ID,
    DEFAULT_REQUEST_TIMEOUT_MS,
    SingleClusterMetadataService,
)

__all__ = ["FILE", "HTTP", "SINGLE_CLUSTER", "create_metadata_service"]

#: ``metadataService`` value of :class:`FileMetadataService`.
FILE = "file"
#: ``metadataService`` value of :class:`SingleClusterMetadataService`.
SINGLE_CLUSTER = "singleCluster"
#: ``metadataService`` value of :class:`HttpMetadataService`.
HTTP = "http"

_OPTION = "metadataService"
_FILE_OPTIONS = ("path",)
_HTTP_OPTIONS = ("url", "token", "timeoutMs", "caFile")
# Options of singleCluster that are not client properties (client properties are lowercase
# dotted names, so these camelCase keys cannot clash with one).
_CLUSTER_ID = "clusterId"
_REQUEST_TIMEOUT = "requestTimeoutMs"
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_PROTOCOL_METHODS = ("get_all_streams", "describe_streams", "is_cluster_active", "close")


def _valid_values() -> str:
    return f"'{FILE}', '{HTTP}', '{SINGLE_CLUSTER}' or 'package.module:ClassName'"


def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {str(key).lower(): str(value) for key, value in options.items()}


def _check_keys(opts: Mapping[str, str], allowed: tuple[str, ...], kind: str) -> None:
    canonical = {key.lower(): key for key in allowed}
    for key in opts:
        if key not in canonical:
            close = difflib.get_close_matches(key, list(canonical), n=1, cutoff=0.5)
            hint = f" Did you mean '{_OPTION}.{canonical[close[0]]}'?" if close else ""
            raise OptionsError(
                f"Unknown option '{_OPTION}.{key}' for {_OPTION}={kind}.{hint} Valid options: "
                f"{', '.join(f'{_OPTION}.{k}' for k in allowed)}."
            )


def _file_service(options: Mapping[str, str]) -> FileMetadataService:
    opts = _lowered(options)
    _check_keys(opts, _FILE_OPTIONS, FILE)
    path = opts.get("path", "").strip()
    extensions = ", ".join(SUPPORTED_EXTENSIONS)
    if not path:
        raise OptionsError(
            f"Option '{_OPTION}.path' is required with {_OPTION}={FILE}: set it to the metadata "
            f"file ({extensions})."
        )
    try:
        return FileMetadataService(path)
    except MetadataError as exc:
        raise OptionsError(f"Invalid value {path!r} for option '{_OPTION}.path': {exc}") from None


def _positive_ms(raw: str, key: str, default: int) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise OptionsError(
            f"Invalid value {raw!r} for option '{_OPTION}.{key}': it must be a positive number "
            f"of milliseconds (default {default})."
        )
    return value


def _http_service(options: Mapping[str, str]) -> HttpMetadataService:
    opts = _lowered(options)
    _check_keys(opts, _HTTP_OPTIONS, HTTP)
    url = opts.get("url", "").strip()
    if not url:
        raise OptionsError(
            f"Option '{_OPTION}.url' is required with {_OPTION}={HTTP}: set it to the service's "
            "base URL, e.g. https://metadata.example.com."
        )
    timeout_ms = _positive_ms(
        opts.get("timeoutms", str(DEFAULT_TIMEOUT_MS)), "timeoutMs", DEFAULT_TIMEOUT_MS
    )
    return HttpMetadataService(
        url,
        token=opts.get("token"),
        timeout_ms=timeout_ms,
        ca_file=opts.get("cafile", "").strip() or None,
    )


def _single_cluster_service(options: Mapping[str, str]) -> SingleClusterMetadataService:
    properties = _lowered(options)
    cluster_id = properties.pop(_CLUSTER_ID.lower(), DEFAULT_CLUSTER_ID).strip()
    if not cluster_id:
        raise OptionsError(
            f"Option '{_OPTION}.{_CLUSTER_ID}' must not be empty: give the cluster an id "
            f"(default {DEFAULT_CLUSTER_ID!r})."
        )
    timeout_raw = properties.pop(_REQUEST_TIMEOUT.lower(), str(DEFAULT_REQUEST_TIMEOUT_MS))
    try:
        timeout_ms = int(timeout_raw.strip())
    except ValueError:
        timeout_ms = 0
    if timeout_ms <= 0:
        raise OptionsError(
            f"Invalid value {timeout_raw!r} for option '{_OPTION}.{_REQUEST_TIMEOUT}': it must be "
            f"a positive number of milliseconds (default {DEFAULT_REQUEST_TIMEOUT_MS})."
        )
    if not properties.get("bootstrap.servers", "").strip():
        raise OptionsError(
            f"Option '{_OPTION}.bootstrap.servers' is required with {_OPTION}={SINGLE_CLUSTER}: "
            "set it to the cluster's host:port list. Every other "
            f"'{_OPTION}.<property>' is a client property of the cluster, except "
            f"'{_OPTION}.{_CLUSTER_ID}' and '{_OPTION}.{_REQUEST_TIMEOUT}'."
        )
    return SingleClusterMetadataService(cluster_id, properties, request_timeout_ms=timeout_ms)


def _custom_service(spec: str, options: Mapping[str, str]) -> KafkaMetadataService:
    module_name, _, attribute = spec.partition(":")
    if not _DOTTED_NAME.match(module_name) or not _DOTTED_NAME.match(attribute):
        raise OptionsError(
            f"Invalid value {spec!r} for option '{_OPTION}': a service of your own is written "
            f"'package.module:ClassName'. Valid values: {_valid_values()}."
        )
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise OptionsError(
            f"Option '{_OPTION}'={spec!r}: cannot import module {module_name!r} ({exc}). Install "
            "the package where the Spark driver runs, or fix the name."
        ) from exc
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise OptionsError(
                f"Option '{_OPTION}'={spec!r}: module {module_name!r} has no attribute "
                f"{attribute!r}. Fix the class name."
            ) from None
    if not callable(target):
        raise OptionsError(
            f"Option '{_OPTION}'={spec!r}: {attribute!r} is not a class (got "
            f"{type(target).__name__})."
        )
    secrets = [value for key, value in options.items() if is_secret_key(str(key))]
    try:
        service = target(dict(options))
    except DynamicKafkaError:
        raise
    except Exception as exc:
        raise MetadataError(
            f"Metadata service {spec!r} could not be created: {type(exc).__name__}: "
            f"{redact(str(exc), secrets)}."
        ) from exc
    if not isinstance(service, KafkaMetadataService):
        missing = [m for m in _PROTOCOL_METHODS if not callable(getattr(service, m, None))]
        raise OptionsError(
            f"Option '{_OPTION}'={spec!r}: {type(service).__qualname__} does not implement "
            f"KafkaMetadataService (missing: {', '.join(missing)}). Implement "
            f"{', '.join(_PROTOCOL_METHODS)} (see pyspark_dynamic_kafka.metadata."
            "KafkaMetadataService)."
        )
    return service


def create_metadata_service(kind: str, options: Mapping[str, str]) -> KafkaMetadataService:
    """Create the metadata service named by the ``metadataService`` option.

    Parameters
    ----------
    kind:
        ``file``, ``http``, ``singleCluster`` (case-insensitive) or ``package.module:ClassName``.
    options:
        The ``metadataService.*`` options with the prefix removed. Keys are matched
        case-insensitively (Spark lowercases them). ``file`` takes ``path``; ``http`` takes
        ``url`` (required), ``token``, ``timeoutMs`` (default 10000) and ``caFile``;
        ``singleCluster`` takes ``clusterId`` (default ``kafka``), ``requestTimeoutMs`` (default
        30000) and client properties (``bootstrap.servers`` required); a class of your own is
        called with a dict of the options.

    Raises
    ------
    OptionsError
        For an unknown ``kind``, a missing or unknown option, a class that cannot be imported or
        does not implement :class:`KafkaMetadataService`.
    MetadataError
        When a class of your own raises while it is created.
    """
    name = kind.strip() if isinstance(kind, str) else ""
    lowered = name.lower()
    if lowered == FILE.lower():
        return _file_service(options)
    if lowered == SINGLE_CLUSTER.lower():
        return _single_cluster_service(options)
    if lowered == HTTP:
        return _http_service(options)
    if ":" in name:
        return _custom_service(name, options)
    builtins = {FILE.lower(): FILE, HTTP: HTTP, SINGLE_CLUSTER.lower(): SINGLE_CLUSTER}
    close = difflib.get_close_matches(lowered, list(builtins), n=1, cutoff=0.6)
    hint = f" Did you mean '{builtins[close[0]]}'?" if close else ""
    raise OptionsError(
        f"Invalid value {kind!r} for option '{_OPTION}'.{hint} Valid values: {_valid_values()} "
        "(your own KafkaMetadataService implementation)."
    )
