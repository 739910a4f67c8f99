"""Secrets by reference in client properties, in Kafka's config-provider syntax: ``${env:VAR}``
(KIP-887's ``EnvVarConfigProvider``) and ``${file:/path/to/file.properties:key}`` (KIP-297's
``FileConfigProvider``), a whole value or part of one (``password="${env:PW}"`` inside a JAAS
string), in any client property of the metadata and in the query's ``kafka.*`` options.

A reference stays a reference in everything the package keeps or shows: the metadata, the
options, the tasks, checkpoints, progress, metrics, logs and messages (``describe`` and
``validate`` show it). It is resolved where a client is built (:func:`resolve`: on the driver and
on the executors), each time one is built, so a file rewritten with a new password is read again
at the next connection. A variable that is not set, a file that cannot be read or a key it does
not hold is a :class:`~pyspark_dynamic_kafka.errors.ClientPropertyError` naming the property and
the reference, never a value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.errors import ClientPropertyError

__all__ = [
    "PROVIDERS",
    "Reference",
    "has_references",
    "is_reference",
    "read_properties_file",
    "reference_problem",
    "references",
    "resolve",
]

#: Kafka's own pattern (``ConfigTransformer.DEFAULT_PATTERN``): ``${provider:[path:]key}``.
_PATTERN = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
#: The config providers resolved here.
PROVIDERS = ("env", "file")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATORS = "=: \t\f"


@dataclass(frozen=True)
class Reference:
    """One ``${provider:[path:]key}`` in a value, and its parts."""

    #: The reference as written (what messages show).
    text: str
    provider: str
    #: ``None`` when it has none (``${env:VAR}``).
    path: str | None
    key: str


def references(value: str) -> list[Reference]:
    """Every reference in ``value``, in order."""
    return [
        Reference(m.group(0), m.group(1), m.group(3), m.group(4)) for m in _PATTERN.finditer(value)
    ]


def is_reference(value: str) -> bool:
    """Whether ``value`` is one reference and nothing else: no secret, what messages may show."""
    match = _PATTERN.fullmatch(value.strip())
    return match is not None


def has_references(properties: Mapping[str, str]) -> bool:
    """Whether any value of ``properties`` holds a reference."""
    return any("${" in value and _PATTERN.search(value) for value in properties.values())


def reference_problem(value: str) -> str | None:
    """What is wrong with the references of ``value`` (a provider not resolved here, a path where
    none is taken or none where one is needed), or ``None``."""
    for ref in references(value):
        if ref.provider not in PROVIDERS:
            return (
                f"{ref.text} names config provider {ref.provider!r}: only ${{env:VAR}} and "
                "${file:/path/to/file.properties:key} are resolved; write the secret in an "
                "environment variable or a properties file"
            )
        if ref.provider == "env" and ref.path:
            return f"{ref.text} has a path: write ${{env:{ref.key}}}"
        if ref.provider == "file" and not ref.path:
            return f"{ref.text} has no file: write ${{file:/path/to/file.properties:{ref.key}}}"
        if not ref.key:
            return f"{ref.text} names no key"
    return None


def read_properties_file(path: str) -> dict[str, str]:
    """The keys and values of a Java properties file, as ``java.util.Properties.load`` reads it
    (comments, ``=``, ``:`` or blank separators, backslash escapes, continued lines).

    Raises
    ------
    OSError
        When the file cannot be read.
    """
    with open(path, encoding="utf-8") as file:
        lines = re.split(r"\r\n|\r|\n", file.read())
    result: dict[str, str] = {}
    logical = ""
    for line in lines:
        line = line.lstrip(" \t\f")
        if not logical and (not line or line[0] in "#!"):
            continue  # a blank line or a comment (never continued)
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # continued on the next line
            logical += line[:-1]
            continue
        text, logical = logical + line, ""
        key, value = _split(text)
        result[_unescape(key)] = _unescape(value)
    if logical:  # the last line ends with a backslash
        key, value = _split(logical)
        result[_unescape(key)] = _unescape(value)
    return result


def _split(text: str) -> tuple[str, str]:
    """A logical line's key and value: the key ends at the first unescaped separator."""
    index = 0
    while index < len(text) and text[index] not in _SEPARATORS:
        index += 2 if text[index] == "\\" else 1
    key, rest = text[:index], text[index:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 == len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[index + 2 : index + 6]):
            out.append(chr(int(text[index + 2 : index + 6], 16)))
            index += 6
            continue
        out.append(_ESCAPES.get(code, code))
        index += 2
    return "".join(out)


def resolve(properties: Mapping[str, str], cluster_id: str | None = None) -> dict[str, str]:
    """``properties`` with every reference replaced by what it refers to (values without one
    are kept as they are; a file is read once per call).

    Raises
    ------
    ClientPropertyError
        Naming the cluster, the property and the reference, when a reference does not resolve.
    """
    files: dict[str, dict[str, str]] = {}
    where = f"Cluster '{cluster_id}': client" if cluster_id else "Client"
    resolved: dict[str, str] = {}
    for key, value in properties.items():
        if "${" not in value:
            resolved[key] = value
            continue

        def substitute(match: re.Match[str], key: str = key) -> str:
            ref = Reference(match.group(0), match.group(1), match.group(3), match.group(4))
            return _value(ref, files, f"{where} property '{key}' refers to {ref.text}")

        resolved[key] = _PATTERN.sub(substitute, value)
    return resolved


def _value(ref: Reference, files: dict[str, dict[str, str]], said: str) -> str:
    problem = reference_problem(ref.text)
    if problem is not None:
        raise ClientPropertyError(f"{said}, which cannot be resolved: {problem}.")
    where = "where the Spark driver and executors run"
    if ref.provider == "env":
        value = os.environ.get(ref.key)
        if value is None:
            raise ClientPropertyError(
                f"{said}, but the environment variable {ref.key} is not set in this process. "
                f"Set it {where} (on a cluster also spark.executorEnv.{ref.key}), before the "
                "Spark session starts."
            )
        return value
    path = str(ref.path)
    if path not in files:
        try:
            files[path] = read_properties_file(path)
        except OSError as exc:
            raise ClientPropertyError(
                f"{said}, but the file {path} cannot be read ({exc.strerror or exc}). Make it "
                f"readable {where}."
            ) from None
    if ref.key not in files[path]:
        keys = ", ".join(sorted(files[path])) or "none"
        raise ClientPropertyError(
            f"{said}, but {path} has no key '{ref.key}' (its keys: {keys}). Add "
            f"'{ref.key}=...' to the file, or fix the reference."
        )
    return files[path][ref.key]
