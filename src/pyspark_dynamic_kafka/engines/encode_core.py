"""The compiled core's column encoder: a column of a writer schema's Spark type encoded by the
core's ``AvroEncoder`` (Arrow straight into Confluent-framed Avro, no Python object per value),
giving the bytes of the Python encoder (:mod:`.encode_python`): the same payloads, the same
tombstones, the same errors.

The schema and its id are given (the sink resolved them on the registry of the batch's cluster);
the core does no I/O. The core is given the schema as fastavro parses it with every named type
written out where it is used (:func:`inlined`: a schema with a Spark type holds no record inside
itself), so it resolves no names.

Where the core does not write what the Python encoder writes, the Python encoder does:

- a schema of a type the core does not encode (a logical type on a base type Avro does not define
  it for, a ``uuid`` on a ``fixed``, a union without a branch, a union whose branches share a
  name) makes :func:`make_encoder` choose the Python encoder, logging why;
- a column whose Arrow type is not the schema's Spark type as the core binds it (another time
  unit, a ``local-timestamp`` column in a time zone other than UTC) is the Python encoder's from
  then on, logged once per type, and so is a batch Arrow's Rust validation refuses (a
  non-nullable field null where its struct is not, which no Spark column holds), logged;
- a value the core refuses (one that does not fit the schema, or that the Python encoder might
  write otherwise: a map with a key twice, a fixed of another size, a date or timestamp outside
  the years Python's ``datetime`` holds) hands that column to the Python encoder, whose payloads
  or :class:`~.roles.EncodeFailure` (naming the row and fastavro's reason) are the answer.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import fastavro
import pyarrow as pa

from pyspark_dynamic_kafka.avro.names import NAMED, rebuilt
from pyspark_dynamic_kafka.engines import core
from pyspark_dynamic_kafka.engines.encode_python import PythonColumnEncoder

__all__ = ["NativeColumnEncoder", "inlined", "make_encoder"]

_log = logging.getLogger(__name__)
_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


@dataclass
class NativeColumnEncoder:
    """Encodes columns of one writer schema in the core.

    Parameters
    ----------
    schema:
        The writer schema (Avro JSON text), as registered in the registry.
    key:
        Whether the column is the key (for the log lines only).

    Raises ``ValueError`` (saying why) when the core does not encode the schema as the Python
    encoder does, and :class:`~.core.CoreMissingError` (an ``ImportError``) when the core is not
    installed.
    """

    schema: str
    key: bool = False
    _core: core.compiled.AvroEncoder = field(init=False, repr=False)
    _python: PythonColumnEncoder | None = field(default=None, init=False, repr=False)
    _python_types: set[pa.DataType] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        core.require()
        parsed = fastavro.parse_schema(json.loads(self.schema))
        self._core = core.compiled.AvroEncoder(json.dumps(inlined(parsed)))

    def encode_arrow(self, values: pa.Array, schema_id: int) -> pa.Array:
        """The payloads of ``values`` framed with ``schema_id``, null where a value is null.

        Raises
        ------
        EncodeFailure
            At the first value that does not fit the schema, naming its row and why (the
            Python encoder's words).
        """
        if values.type not in self._python_types:
            try:
                encoded = self._core.encode(values, schema_id)
            except ValueError as exc:  # a column type the core does not bind
                self._python_types.add(values.type)
                _log.info(
                    "The Python encoder writes Avro %ss of type %s: the compiled core cannot: %s",
                    self._side,
                    values.type,
                    exc,
                )
            except pa.ArrowException as exc:  # Arrow's Rust validation refused the column
                _log.info("The Python encoder writes this batch's Avro %ss: %s", self._side, exc)
            else:
                if not isinstance(encoded, int):
                    return encoded
                # A value the core leaves to the Python encoder: its payloads or its error.
        return self._python_encoder().encode_arrow(values, schema_id)

    def _python_encoder(self) -> PythonColumnEncoder:
        if self._python is None:
            self._python = PythonColumnEncoder(self.schema)
        return self._python

    @property
    def _side(self) -> str:
        return "key" if self.key else "value"


def inlined(schema: Any, named: dict[str, Any] | None = None) -> Any:
    """``schema`` (as :func:`fastavro.parse_schema` gives it: every name a full name) with each
    reference to a named type replaced by its definition.

    Raises
    ------
    ValueError
        For a reference to a name the schema does not define before it.
    """
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return schema
        if schema not in named:
            raise ValueError(f"the schema refers to {schema!r} before defining it")
        return named[schema]
    out = rebuilt(schema, lambda child: inlined(child, named))
    if isinstance(out, dict) and out.get("type") in NAMED:
        named[str(out["name"])] = out
    return out


def make_encoder(schema: str, key: bool = False) -> NativeColumnEncoder | PythonColumnEncoder:
    """The core's encoder when the core is installed and encodes the schema as the Python
    encoder does, else the Python encoder (logging why, once per encoder made)."""
    try:
        return NativeColumnEncoder(schema, key)
    except ImportError:
        pass
    except ValueError as exc:
        _log.info(
            "The Python encoder writes Avro %ss: the compiled core cannot: %s",
            "key" if key else "value",
            exc,
        )
    return PythonColumnEncoder(schema)
