"""The compiled core's column decoder: Avro keys or values decoded by the core's ``AvroDecoder``
(arrow-avro straight into Arrow, no Python object per record), giving what the Python decoder
(:mod:`.decode_python`) gives: the same Arrow type, values, schema ids and failures.

The core holds the writer schemas and never does I/O: a batch whose records name schemas it does
not hold yet is answered with those instead of decoded (one framing pass either way), and
:class:`NativeDecoder` fetches them from the cluster's registry
(:mod:`~pyspark_dynamic_kafka.registry.client`, cached process-wide), hands them over and decodes
the batch again. On a cluster the core reads, the core's reader asks first, as it reads each
batch (:mod:`.read_core`: :attr:`NativeDecoder.core_decoder` is handed to it), and
:meth:`NativeDecoder.finish` takes its answer; :meth:`NativeDecoder.decode_arrow` asks itself.
A schema that could not be fetched fails the records naming it in this batch and is asked for
again in the next (a registry's return is picked up). A reader schema of a type the core
cannot give as Spark's (an Avro ``duration``, a union of several types with a named type
referred to by its name, which arrow-avro 60.1 resolves to the wrong branch) makes
:func:`make_decoder` choose the Python decoder, with a log line naming the type; a writer schema
of that kind met later makes the decoder hand this and later batches to the Python decoder.

Where the two differ, on damaged bytes no serializer writes: a nullable union's branch index out
of range reads in the core as its value branch (arrow-avro's rule), where fastavro fails the
record; a negative enum index fails the record in the core, where fastavro reads it from the end
of the symbols; a negative time of day fails the record in the core, where fastavro reads it
with its own arithmetic. Values Python's ``datetime`` cannot hold (timestamps and dates outside
the years 1 to 9999, a time of day of a day or more) fail their record in both. The reasons of
damaged records other than truncated ones are each library's own words.

Writer schemas are resolved to the reader schema as Apache Avro Java resolves them
(:mod:`~pyspark_dynamic_kafka.avro.resolution`: the writer renamed as Java pairs it, reader aliases
only). A writer schema the Python decoder serves instead, from that batch on: one Java finds an
error in (Java, like the Python decoder, fails only the records whose values reach it, where
arrow-avro would fail them all or read a nullable field the writer lacks as null), one arrow-avro
cannot resolve, one with enum symbols to map, one with a type promoted into a union's branch of a
logical type (an ``int`` into a ``timestamp-millis``, ``bytes`` into a ``uuid``: arrow-avro 60.1
fails such records), one that refers by name to a named type inside a union's branch, or to a record
the reader defines otherwise (arrow-avro 60.1 fails such records, or reads past the record's bytes),
and one lacking a reader field whose default arrow-avro 60.1 reads otherwise than Java
(:func:`_check_defaults`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_dynamic_kafka.avro.decode import Decoded, Decoder, decode_failure
from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.avro.logical import without_logical
from pyspark_dynamic_kafka.avro.names import qualified, with_children
from pyspark_dynamic_kafka.avro.resolution import plain_reader, resolve
from pyspark_dynamic_kafka.avro.spark_types import TIME_OF_DAY, spark_type
from pyspark_dynamic_kafka.engines import core
from pyspark_dynamic_kafka.errors import SchemaRegistryError
from pyspark_dynamic_kafka.registry.client import RegisteredSchema
from pyspark_dynamic_kafka.spark_versions import arrow_type

__all__ = ["Answer", "NativeDecoder", "make_decoder"]

#: What the core's decoder answers when asked (``ask=True``): (values, schema ids, failures as
#: (row, schema or None, reason)), or the schemas it lacks.
Answer = tuple[pa.Array, pa.Array, list[tuple[int, int | str | None, str]]] | list[int | str]

_log = logging.getLogger(__name__)
_NOT_UTF8 = "non UTF-8 data"  # arrow's refusal of a string's bytes
UUID = "uuid"


@dataclass
class NativeDecoder:
    """Decodes one cluster's keys or values into the reader schema's column, in the core.

    Parameters are :class:`~pyspark_dynamic_kafka.avro.decode.Decoder`'s. Raises ``ValueError``
    (saying which type) when the core cannot give the reader schema's Spark type, and
    :class:`~.core.CoreMissingError` (an ``ImportError``) when the core is not installed.
    """

    reader_schema: str
    fetch: Callable[[SchemaRef], RegisteredSchema]
    permissive: bool = False
    key: bool = False
    reader_name: str | None = None
    _core: core.compiled.AvroDecoder = field(init=False, repr=False)
    _python: Decoder | None = field(default=None, init=False, repr=False)
    _fallback: Decoder | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        core.require()
        parsed = json.loads(self.reader_schema)
        self._parsed_reader = parsed
        self.arrow_type = arrow_type(spark_type(parsed).data_type)
        reader = json.dumps(_for_the_core(plain_reader(parsed)))
        self._core = core.compiled.AvroDecoder(reader, self.key, self.arrow_type)

    def decode_arrow(
        self, values: pa.Array, headers: pa.Array | None, where: Callable[[int], str]
    ) -> Decoded:
        """Decode a batch's ``value`` (or ``key``) column with its ``headers`` column (or
        ``None``); ``where(i)`` names record ``i`` in a ``FAILFAST`` error.

        Raises
        ------
        AvroDecodeError
            ``FAILFAST``: at the first record that cannot be decoded.
        SchemaRegistryError
            ``FAILFAST``: at the first record whose schema could not be fetched.
        """
        if self._python is not None:
            return self._python.decode_arrow(values, headers, where)
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        return self.finish(values, headers, where, self._core.decode(values, headers, ask=True))

    @property
    def core_decoder(self) -> core.compiled.AvroDecoder | None:
        """The core's decoder while it decodes this column, for the core's reader to decode each
        batch's column with as it reads (:meth:`finish` then takes its answer); ``None`` once
        the Python decoder decodes this column's batches."""
        return self._core if self._python is None else None

    def finish(
        self,
        values: pa.Array,
        headers: pa.Array | None,
        where: Callable[[int], str],
        result: Answer,
    ) -> Decoded:
        """:meth:`decode_arrow`, given ``result``: what the core's decoder answered for this
        batch's ``values`` (binary) and ``headers`` when asked with ``ask=True``, by
        :meth:`decode_arrow` itself or by the core's reader as it read the batch. Schemas it
        lacks are fetched and handed over and the batch decoded again; raises as
        :meth:`decode_arrow`."""
        if self._python is not None:
            return self._python.decode_arrow(values, headers, where)
        registry_errors: dict[int | str, Exception] = {}
        if isinstance(result, list):  # schemas the core holds no writer schema for
            try:
                registry_errors = self._fetch(result)
            except ValueError as exc:  # a writer schema the core does not decode
                _log.info("The Python decoder reads Avro %ss from here on: %s", self._side, exc)
                self._python = self._python_decoder()
                return self._python.decode_arrow(values, headers, where)
            result = self._core.decode(values, headers)
        decoded, ids, failures = result
        if any(_NOT_UTF8 in reason for _, _, reason in failures):
            # arrow-avro refuses text that is not UTF-8, which Java reads (.text): this batch
            # is the Python decoder's.
            return self._python_decoder().decode_arrow(values, headers, where)
        if failures and not self.permissive:
            row, named, reason = failures[0]
            ref = None if named is None else _ref(named)
            if named in registry_errors:
                raise SchemaRegistryError(f"{where(row)}: {registry_errors[named]}") from None
            raise decode_failure(where(row), ref, reason, self.key, self.reader_name) from None
        return Decoded(decoded, ids, _corrupt(values, [row for row, _, _ in failures]))

    def _python_decoder(self) -> Decoder:
        if self._fallback is None:
            self._fallback = Decoder(
                self.reader_schema, self.fetch, self.permissive, self.key, self.reader_name
            )
        return self._fallback

    def _fetch(self, missing: list[int | str]) -> dict[int | str, Exception]:
        """Fetch the writer schemas the core said it lacks and hand them over (or why not): the
        registry errors of those that could not be fetched, by reference."""
        errors: dict[int | str, Exception] = {}
        for named in missing:
            ref = _ref(named)
            try:
                registered = self.fetch(ref)
            except SchemaRegistryError as exc:
                errors[named] = exc
                self._core.refuse(named, str(exc))
                continue
            if registered.schema_type != "AVRO":
                self._core.refuse(named, f"{ref} is a {registered.schema_type} schema, not Avro")
                continue
            # Named as Java pairs them (.resolution); a pair Java finds errors in is the
            # Python decoder's, which like Java fails only the records that reach them.
            resolution = resolve(json.loads(registered.schema), self._parsed_reader)
            if resolution.errors:
                raise ValueError(
                    f"the writer schema {ref} resolves to the reader schema with errors for some "
                    f"records: {resolution.errors[0]}"
                )
            _check_defaults(ref, resolution.defaulted)
            if _has_single_branch_union(resolution.writer):
                # arrow-avro 60.1 refuses records of a union of null alone, and fails to resolve
                # a one-branch union into a reader union ("int" into ["long", "null"]).
                raise ValueError(f"the writer schema {ref} has a union of one branch")
            misread = _misread_reference(resolution.writer, resolution.reader)
            if misread is not None:
                raise ValueError(
                    f"the writer schema {ref} refers to its {misread[0]} by name {misread[1]}, "
                    "which the core does not read as Java does"
                )
            logical = [p for p in resolution.promoted_into_unions if p[2]]
            if logical:  # arrow-avro 60.1: "Promotion Int->Long target mismatch", and alike
                kind, target, name = logical[0]
                raise ValueError(
                    f"the writer schema {ref} has {kind} read into a union's {target} of logical "
                    f"type {name}, which the core does not promote"
                )
            if resolution.remapped:  # arrow-avro 60.1 read an aliased enum's symbols by index
                raise ValueError(
                    f"the writer schema {ref} has other symbols for the enum "
                    f"{resolution.remapped[0]}, which the core does not map as Java does"
                )
            self._core.add_writer(named, json.dumps(_for_the_core(resolution.writer)))
        return errors

    @property
    def _side(self) -> str:
        return "key" if self.key else "value"


def _for_the_core(schema: Any) -> Any:
    """``schema`` as the core reads it: a ``uuid`` as the string it is (Java's reading; arrow-avro
    parses it, failing other text), on PySpark 4.0 a ``time-micros`` as the long it is."""
    schema = without_logical(schema, UUID)
    return schema if TIME_OF_DAY else without_logical(schema, "time-micros")


def _has_single_branch_union(schema: Any) -> bool:
    """Whether a union of one branch is anywhere in ``schema``."""
    if isinstance(schema, list):
        return len(schema) == 1 or any(_has_single_branch_union(b) for b in schema)
    if not isinstance(schema, dict):
        return False
    if schema.get("type") == "record":
        return any(_has_single_branch_union(f["type"]) for f in schema.get("fields", []))
    if schema.get("type") == "array":
        return _has_single_branch_union(schema.get("items"))
    if schema.get("type") == "map":
        return _has_single_branch_union(schema.get("values"))
    return isinstance(schema.get("type"), list | dict) and _has_single_branch_union(schema["type"])


def _misread_reference(writer: Any, reader: Any) -> tuple[str, str] | None:
    """A named type ``writer`` (resolved, plain) refers to by name where arrow-avro 60.1
    resolves the reference wrongly, and where: inside a union's branch ("Union branch index 1
    not resolvable by reader schema"), read into a reader union's branch (the union read from
    the wrong bytes), or a record the reader defines otherwise (a reader field the writer lacks
    read from the next record's bytes)."""
    w, w_named = qualified(writer)
    r, r_named = qualified(reader)
    referred = _referred(w, w_named, False)
    in_unions = sorted(name for name, in_union in referred if in_union)
    if in_unions:
        return in_unions[0], "inside a union"
    branches = _union_branches(r)
    for name in sorted({name for name, _ in referred}):
        mine, theirs = w_named[name], r_named.get(name)
        if name in branches:
            return name, "where the reader has a union of it"
        if mine["type"] in ("record", "error") and theirs and _fields(mine) != _fields(theirs):
            return name, "where the reader's record of that name differs from it"
    return None


def _union_branches(schema: Any) -> set[str]:
    """The named types that are branches of a union in ``schema`` (qualified)."""
    found: set[str] = set()
    if isinstance(schema, list):
        for branch in schema:
            found.add(branch if isinstance(branch, str) else branch.get("name", ""))
            found |= _union_branches(branch)
    elif isinstance(schema, dict):
        with_children(schema, lambda child: found.update(_union_branches(child)))
    return found


def _referred(schema: Any, named: dict[str, Any], in_union: bool) -> set[tuple[str, bool]]:
    """Each named type ``schema`` (qualified) refers to by name, and whether inside a union's
    branch (``in_union``: ``schema`` is)."""
    if isinstance(schema, str):
        return {(schema, in_union)} if schema in named else set()
    if isinstance(schema, list):
        return set().union(*(_referred(b, named, True) for b in schema))
    if not isinstance(schema, dict):
        return set()
    found: set[tuple[str, bool]] = set()
    with_children(schema, lambda child: found.update(_referred(child, named, in_union)))
    return found


def _fields(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["name"], json.dumps(f["type"], sort_keys=True)) for f in record["fields"]]


def make_decoder(
    reader_schema: str,
    fetch: Callable[[SchemaRef], RegisteredSchema],
    permissive: bool = False,
    key: bool = False,
    reader_name: str | None = None,
) -> Decoder | NativeDecoder:
    """The core's decoder when the core is installed and gives the reader schema's type, else
    the Python decoder (logging why, once per decoder made)."""
    try:
        return NativeDecoder(reader_schema, fetch, permissive, key, reader_name)
    except ImportError:
        pass
    except ValueError as exc:
        _log.info(
            "The Python decoder reads Avro %ss: the compiled core cannot: %s",
            "key" if key else "value",
            exc,
        )
    return Decoder(reader_schema, fetch, permissive, key, reader_name)


def _check_defaults(ref: SchemaRef, defaulted: list[dict[str, Any]]) -> None:
    """Raise ValueError for a default arrow-avro 60.1 reads otherwise than Java: text of a
    ``bytes`` or ``fixed`` beyond ASCII (Java: ISO-8859-1, arrow-avro: UTF-8), a default of a
    type with a logical type (a ``timestamp-millis`` in a union read as microseconds) or with a
    ``float`` or ``double`` (-9.315219346728235e-90 read with another exponent)."""
    for f in defaulted:
        text = json.dumps(f["default"])
        kinds = json.dumps(f["type"])
        if "\\u" in text or any(k in kinds for k in ('"float"', '"double"', "logicalType")):
            raise ValueError(
                f"the writer schema {ref} lacks the reader's field {f['name']}, whose default "
                f"{text} the core does not read as Java does"
            )


def _ref(named: int | str) -> SchemaRef:
    return SchemaRef(schema_id=named) if isinstance(named, int) else SchemaRef(guid=named)


def _corrupt(values: pa.Array, rows: list[int]) -> pa.Array:
    """The raw bytes of the records at ``rows``, null elsewhere."""
    if not rows:
        return pa.nulls(len(values), pa.binary())
    marked = set(rows)
    mask = pa.array([row in marked for row in range(len(values))], pa.bool_())
    return pc.if_else(mask, values, pa.scalar(None, pa.binary()))
