"""The exception hierarchy of pyspark-dynamic-kafka.

Every error raised on purpose by this package is a :class:`DynamicKafkaError`. Messages name the
offending key and value and say what to do; they never contain secrets.

Each class says whether retrying the same operation, unchanged, may succeed
(:attr:`DynamicKafkaError.retryable`): a service that is down may come back, a bad option or a
refused token stays bad. Metadata discovery tolerates retryable failures up to its threshold
and fails the query at once on the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

__all__ = [
    "ArchiveError",
    "ClientPropertyError",
    "ClusterUnreachableError",
    "DataLossError",
    "DiscoveryError",
    "DynamicKafkaError",
    "KafkaClientError",
    "MetadataAccessError",
    "MetadataConflictError",
    "MetadataError",
    "MetadataNotFoundError",
    "MetadataUnavailableError",
    "MetadataValidationError",
    "OffsetsError",
    "OptionsError",
    "ReadError",
    "SchemaRegistryError",
    "SinkIdInUseError",
    "WriteError",
    "WriteRouteError",
]


class DynamicKafkaError(Exception):
    """Root of every error raised by pyspark-dynamic-kafka.

    Attributes
    ----------
    retryable:
        Whether retrying the same operation, with the same options and credentials, may succeed
        (a class attribute: ``False`` for errors that only a change by a person can fix).
    """

    retryable: ClassVar[bool] = True


class OptionsError(DynamicKafkaError, ValueError):
    """A source option is unknown, missing, malformed or conflicts with another option."""

    retryable = False


class OffsetsError(OptionsError):
    """An offsets specification (option value or checkpointed offset JSON) cannot be used."""


class MetadataError(DynamicKafkaError):
    """The Kafka metadata service could not provide usable metadata (it may later)."""


class MetadataValidationError(MetadataError, ValueError):
    """Metadata content is invalid: wrong type, missing key, unknown cluster, syntax error, ...

    Retryable: the metadata may be fixed while a query keeps its last good snapshot.

    Parameters
    ----------
    message:
        The whole message (it lists the problems too).
    problems:
        Each problem as ``path-in-the-document: message``, when known.
    """

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems)


class MetadataNotFoundError(MetadataError, LookupError):
    """A stream or cluster named in a metadata edit is not in the metadata."""


class MetadataConflictError(MetadataError):
    """A metadata write lost a race: the resource changed since it was read (HTTP 412)."""


class MetadataUnavailableError(MetadataError):
    """The metadata file a server serves cannot be read or is invalid (HTTP 503)."""


class MetadataAccessError(MetadataError):
    """The metadata service refused the credentials (HTTP 401 or 403).

    Not retryable: a query fails at once instead of counting it as a tolerated discovery
    failure, since retrying with the same token cannot help.
    """

    retryable = False


class DiscoveryError(MetadataError):
    """Metadata discovery failed more often than the configured threshold tolerates."""

    retryable = False


class KafkaClientError(DynamicKafkaError):
    """A Kafka cluster could not be reached or answered with an error.

    Attributes
    ----------
    answered:
        The cluster answered, with an error about some of its partitions (a leader being
        elected, a replica not available): it is reachable, and only those partitions wait.
    """

    answered: bool = False


class ClientPropertyError(KafkaClientError):
    """A client cannot be built from its properties: a secret reference (``${env:VAR}``,
    ``${file:path:key}``) that does not resolve where the client is built (the variable is not
    set there, the file cannot be read or lacks the key), or a Java client property librdkafka has
    no equivalent for that only its resolved value revealed. The message names the property and
    the reference, never a value.

    Not retryable: the environment or the properties must change.
    """

    retryable = False


class ReadError(KafkaClientError):
    """An executor could not read an exact offset range."""


class WriteError(KafkaClientError):
    """An executor could not produce or commit the records of a write (the message names the
    cluster and the topic, never a secret)."""


class SinkIdInUseError(OptionsError):
    """exactlyOnce: the ``sinkId``'s newest progress marker was written by another streaming
    query (another checkpoint): a new ``sinkId`` or ``sinkIdTakeover=true`` is needed."""


class WriteRouteError(MetadataError, ValueError):
    """Where a write goes cannot be decided: an unknown stream, an ambiguous write route (several
    clusters and none marked ``write: true``), or a row whose ``topic`` is outside the route.

    Not retryable: the metadata or the data must change.
    """

    retryable = False


class ClusterUnreachableError(KafkaClientError):
    """A cluster the metadata lists could not be listed for longer than
    ``unreachableClusterTimeoutMs``: the query gives up on it.

    Not retryable, like :class:`DiscoveryError`: the tolerance it counted is spent.
    """

    retryable = False


class DataLossError(KafkaClientError):
    """Records the query should have read are no longer available."""

    retryable = False


class SchemaRegistryError(DynamicKafkaError):
    """A cluster's schema registry could not be reached, refused the credentials, or does not
    hold a schema asked for. The message names the cluster, the registry's URL and what was
    asked, never a credential.

    Attributes
    ----------
    reachable:
        The registry answered (with an error): asking again will not help until it changes.
    status:
        The HTTP status of the registry's error answer, if it answered one.
    """

    reachable: bool = False
    status: int | None = None


class ArchiveError(DynamicKafkaError):
    """The archive of a hybrid read (``archive.path``) cannot be listed or used: no file, a
    scheme no filesystem serves, a missing column, or files that changed under a checkpoint."""

    retryable = False
