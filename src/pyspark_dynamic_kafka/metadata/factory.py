"""Build the metadata service named by the ``metadataService`` source option."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping

from pyspark_dynamic_kafka.errors import DynamicKafkaError, MetadataError, OptionsError
from pyspark_dynamic_kafka.kafka.config import check_client_options, redact_secrets
from pyspark_dynamic_kafka.metadata.file import OPTIONS as FILE_OPTIONS
from pyspark_dynamic_kafka.metadata.file import FileMetadataService
from pyspark_dynamic_kafka.metadata.http import OPTIONS as HTTP_OPTIONS
from pyspark_dynamic_kafka.metadata.http import HttpMetadataService
from pyspark_dynamic_kafka.metadata.service import KafkaMetadataService
from pyspark_dynamic_kafka.metadata.single_cluster import OPTIONS as SINGLE_CLUSTER_OPTIONS
from pyspark_dynamic_kafka.metadata.single_cluster import SingleClusterMetadataService
from pyspark_dynamic_kafka.optionspec import METADATA_SERVICE, did_you_mean

__all__ = ["FILE", "HTTP", "SINGLE_CLUSTER", "create_metadata_service"]

#: ``metadataService`` value of :class:`FileMetadataService`.
FILE = "file"
#: ``metadataService`` value of :class:`SingleClusterMetadataService`.
SINGLE_CLUSTER = "singleCluster"
#: ``metadataService`` value of :class:`HttpMetadataService`.
HTTP = "http"

_OPTION = METADATA_SERVICE
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_PROTOCOL_METHODS = ("get_all_streams", "describe_streams", "is_cluster_active", "close")


def _valid_values() -> str:
    return f"'{FILE}', '{HTTP}', '{SINGLE_CLUSTER}' or 'package.module:ClassName'"


def _file_service(options: Mapping[str, str]) -> FileMetadataService:
    parsed = FILE_OPTIONS.parse(options)
    try:
        return FileMetadataService(**parsed.fields)
    except MetadataError as exc:
        raise FILE_OPTIONS.invalid("path", parsed["path"], str(exc)) from None


def _http_service(options: Mapping[str, str]) -> HttpMetadataService:
    return HttpMetadataService(**HTTP_OPTIONS.parse(options).fields)


def _single_cluster_service(options: Mapping[str, str]) -> SingleClusterMetadataService:
    parsed = SINGLE_CLUSTER_OPTIONS.parse(options, keep_unknown=True)
    properties = {key.lower(): value for key, value in parsed.rest.items()}
    properties["bootstrap.servers"] = parsed["bootstrap.servers"]
    check_client_options(properties, SINGLE_CLUSTER_OPTIONS.prefix, cluster_entry=True)
    return SingleClusterMetadataService(properties=properties, **parsed.fields)


#: The built-in services by ``metadataService`` value (lowercased).
_BUILT_IN: Mapping[str, Callable[[Mapping[str, str]], KafkaMetadataService]] = {
    FILE.lower(): _file_service,
    HTTP.lower(): _http_service,
    SINGLE_CLUSTER.lower(): _single_cluster_service,
}


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
    try:
        service = target(dict(options))
    except DynamicKafkaError:
        raise
    except Exception as exc:
        raise MetadataError(
            f"Metadata service {spec!r} could not be created: {type(exc).__name__}: "
            f"{redact_secrets(str(exc), options)}."
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
        case-insensitively (Spark lowercases them). A built-in service takes the options its
        module declares as ``OPTIONS`` (:mod:`~pyspark_dynamic_kafka.metadata.file`,
        :mod:`~pyspark_dynamic_kafka.metadata.http`,
        :mod:`~pyspark_dynamic_kafka.metadata.single_cluster`, whose other keys are client
        properties); a class of your own is called with a dict of the options.

    Raises
    ------
    OptionsError
        For an unknown ``kind``, a missing or unknown option, a class that cannot be imported or
        does not implement :class:`KafkaMetadataService`.
    MetadataError
        When a class of your own raises while it is created.
    """
    name = kind.strip() if isinstance(kind, str) else ""
    build = _BUILT_IN.get(name.lower())
    if build is not None:
        return build(options)
    if ":" in name:
        return _custom_service(name, options)
    hint = did_you_mean(name, (FILE, HTTP, SINGLE_CLUSTER))
    raise OptionsError(
        f"Invalid value {kind!r} for option '{_OPTION}'.{hint} Valid values: {_valid_values()} "
        "(your own KafkaMetadataService implementation)."
    )
