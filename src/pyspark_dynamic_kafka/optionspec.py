"""How options are declared and parsed: :class:`OptionSpec`, :class:`OptionSet` and value parsers.

Every option of the package is one :class:`OptionSpec` (key, parser, default, doc, scope): the
source options in :mod:`pyspark_dynamic_kafka.source.config.options`, and the ``metadataService.*``
options beside each metadata service (``file``, ``http``, ``singleCluster``). An
:class:`OptionSet` parses a map of them, so all share one behaviour: keys match
case-insensitively (Spark lowercases them), an unknown key is refused naming the closest valid
one, and every message names the key, the value (masked when the key holds a secret) and the fix.

A parser turns the string value into a typed value or raises ``ValueError`` with the reason; the
set adds the key, the value and the option's doc. A parser that already wrote a whole message
raises :class:`~pyspark_dynamic_kafka.errors.OptionsError` instead, which passes unchanged.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import is_secret_key

__all__ = [
    "METADATA_SERVICE",
    "Blank",
    "Mode",
    "OptionSet",
    "OptionSpec",
    "ParsedOptions",
    "Scope",
    "boolean",
    "choice",
    "did_you_mean",
    "duration_ms",
    "integer",
    "nonempty",
    "optional_text",
    "pattern",
    "raw",
    "service_options",
    "split_prefixed",
    "text",
]

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)

#: Which reads an option applies to: ``stream`` (readStream), ``batch`` (read) or ``both``.
Scope = Literal["both", "stream", "batch"]
#: Which read is being parsed for: ``stream``, ``batch`` or ``any`` (not known yet: Spark asks
#: for the schema before it says which reader it wants).
Mode = Literal["any", "stream", "batch"]
#: The source option naming the metadata service; the service's own options are
#: ``metadataService.<key>``.
METADATA_SERVICE = "metadataService"


@dataclass(frozen=True)
class OptionSpec(Generic[T]):
    """One declared option.

    Parameters
    ----------
    key:
        The canonical (camelCase) key, without the prefix of its set.
    parse:
        Turns the string value into the typed value; raises ``ValueError`` with a reason.
    default:
        The string value when the option is absent (``None``: the value is ``None``).
    doc:
        One-line meaning, used in messages; docs/options.md documents the same.
    scope:
        ``both``, ``stream`` or ``batch``: which reads the option applies to.
    required:
        Whether the option must be given (a blank value counts as absent).
    batch_default:
        The default of batch reads when it differs from ``default``.
    attr:
        Name of the attribute (or constructor argument) that receives the parsed value, or
        ``None`` when a rule combines the option with others first.
    """

    key: str
    parse: Callable[[str], T]
    default: str | None
    doc: str
    scope: Scope = "both"
    required: bool = False
    batch_default: str | None = None
    attr: str | None = None

    def default_for(self, mode: Mode) -> str | None:
        """The default string value in a ``mode`` read."""
        if mode == "batch" and self.batch_default is not None:
            return self.batch_default
        return self.default


class Blank(ValueError):
    """Raised by :func:`nonempty`: the option was given an empty value."""


@dataclass(frozen=True)
class ParsedOptions:
    """The result of :meth:`OptionSet.parse`.

    Attributes
    ----------
    values:
        Canonical key -> parsed value of every declared option (defaults applied).
    given:
        Canonical key -> string value of the declared options actually given, in declaration
        order.
    fields:
        Attribute name -> parsed value, for the options that declare an ``attr``.
    rest:
        Keys that are not declared, with their values (only with ``keep_unknown``).
    scopes:
        Canonical key -> scope of the declared options given.
    """

    values: Mapping[str, Any]
    given: Mapping[str, str]
    fields: Mapping[str, Any]
    rest: Mapping[str, str]
    scopes: Mapping[str, Scope]

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def given_in_scope(self, scope: Scope) -> list[str]:
        """Canonical keys of the given options that apply to ``scope`` reads only."""
        return [key for key in self.given if self.scopes[key] == scope]


def did_you_mean(word: str, candidates: Iterable[str], prefix: str = "") -> str:
    """`` Did you mean '<prefix><closest>'?`` for the candidate closest to ``word``, or ``""``.

    Matching is case-insensitive; a candidate must be reasonably close to be suggested.
    """
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" Did you mean '{prefix}{by_lower[close[0]]}'?" if close else ""


class OptionSet:
    """Declared options that are parsed together, and the messages about them.

    Parameters
    ----------
    specs:
        The declarations, in the order messages list them.
    context:
        Where the options are given, ending the message of an unknown or missing key, e.g.
        ``for format dynamic_kafka`` or ``for metadataService=file``.
    prefix:
        Written before every key in messages, e.g. ``metadataService.``.
    others:
        Appended to the list of valid options in the message of an unknown key.
    """

    def __init__(
        self,
        specs: Iterable[OptionSpec[Any]],
        *,
        context: str,
        prefix: str = "",
        others: str = "",
    ) -> None:
        self.specs: Mapping[str, OptionSpec[Any]] = {spec.key: spec for spec in specs}
        self._by_lower = {spec.key.lower(): spec for spec in self.specs.values()}
        self.context = context
        self.prefix = prefix
        self._others = others

    def find(self, key: str) -> OptionSpec[Any] | None:
        """The declaration of ``key`` (any case), or ``None``."""
        return self._by_lower.get(key.lower())

    def name(self, key: str) -> str:
        """The key as messages write it: prefix and canonical spelling."""
        spec = self.find(key)
        return f"{self.prefix}{spec.key if spec is not None else key}"

    def unknown(self, key: str) -> OptionsError:
        """The error for a key that is not declared, naming the closest declared key."""
        hint = did_you_mean(key, self.specs, self.prefix)
        valid = ", ".join(f"{self.prefix}{k}" for k in self.specs)
        return OptionsError(
            f"Unknown option '{self.prefix}{key}' {self.context}.{hint} Valid options: "
            f"{valid}{self._others}."
        )

    def invalid(self, key: str, value: str, reason: str) -> OptionsError:
        """The error for a value of ``key`` that cannot be used, for ``reason``."""
        spec = self.specs[key]
        shown = "******" if is_secret_key(key) else repr(value)
        default = f" Default: {spec.default}." if spec.default is not None else ""
        return OptionsError(
            f"Invalid value {shown} for option '{self.name(key)}': {reason.rstrip('.')}. "
            f"{spec.doc}{default}"
        )

    def _value(self, spec: OptionSpec[Any], value: str | None) -> Any:
        if spec.required and (value is None or not value.strip()):
            raise OptionsError(
                f"Option '{self.name(spec.key)}' is required {self.context}: {spec.doc}"
            )
        if value is None:
            return None
        try:
            return spec.parse(value)
        except OptionsError:
            raise
        except Blank:
            fix = f"remove it (default {spec.default!r}) or set" if spec.default else "set"
            raise OptionsError(
                f"Option '{self.name(spec.key)}' must not be empty: {fix} a value. {spec.doc}"
            ) from None
        except ValueError as exc:
            raise self.invalid(spec.key, value, str(exc)) from None

    def parse(
        self, options: Mapping[str, str], mode: Mode = "any", *, keep_unknown: bool = False
    ) -> ParsedOptions:
        """Parse ``options`` (keys in any case, without the prefix).

        Parameters
        ----------
        options:
            The given options.
        mode:
            The read being parsed for; picks each option's default.
        keep_unknown:
            Return undeclared keys in ``rest`` instead of refusing them.

        Raises
        ------
        OptionsError
            For an unknown key, a missing required option or a value its parser refuses; the
            message names the key and the value.
        """
        given: dict[str, str] = {}
        rest: dict[str, str] = {}
        for raw_key, value in options.items():
            key = str(raw_key)
            spec = self.find(key)
            if spec is not None:
                given[spec.key] = str(value)
            elif keep_unknown:
                rest[key] = str(value)
            else:
                raise self.unknown(key)
        given = {key: given[key] for key in self.specs if key in given}  # declaration order
        values: dict[str, Any] = {}
        fields: dict[str, Any] = {}
        for spec in self.specs.values():
            value = self._value(spec, given.get(spec.key, spec.default_for(mode)))
            values[spec.key] = value
            if spec.attr is not None:
                fields[spec.attr] = value
        scopes = {key: self.specs[key].scope for key in given}
        return ParsedOptions(values, given, fields, rest, scopes)


def service_options(kind: str, *specs: OptionSpec[Any]) -> OptionSet:
    """The ``metadataService.*`` options of the metadata service ``metadataService=<kind>``."""
    return OptionSet(specs, context=f"for {METADATA_SERVICE}={kind}", prefix=f"{METADATA_SERVICE}.")


# --- value parsers ------------------------------------------------------------------------------

_DURATION = re.compile(r"(\d+)\s*(ms|s|sec|secs|m|min|mins|h|d)?", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "sec": 1000, "secs": 1000, "m": 60_000, "min": 60_000}
_UNIT_MS |= {"mins": 60_000, "h": 3_600_000, "d": 86_400_000}


def integer(minimum: int | None = None) -> Callable[[str], int]:
    """An integer, at least ``minimum`` when given."""

    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise ValueError("expected an integer") from None
        if minimum is not None and number < minimum:
            raise ValueError(f"expected an integer >= {minimum}")
        return number

    return parse


def choice(*choices: str) -> Callable[[str], str]:
    """One of ``choices``, case-insensitively; returned lowercased."""

    def parse(value: str) -> str:
        lowered = value.strip().lower()
        if lowered not in choices:
            hint = did_you_mean(lowered, choices).strip().replace("Did", "did")
            raise ValueError(
                f"expected one of {', '.join(choices)}" + (f" ({hint})" if hint else "")
            )
        return lowered

    return parse


def member(enum_type: type[E], *choices: E) -> Callable[[str], E]:
    """One of ``choices`` (members of a ``str`` enum), by value, case-insensitively."""
    check = choice(*(str(c.value) for c in choices))

    def parse(value: str) -> E:
        return enum_type(check(value))

    return parse


def boolean(value: str) -> bool:
    """``true`` or ``false``, case-insensitively."""
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def duration_ms(value: str) -> int:
    """A duration as Spark writes it (``15m``, ``30s``, ``500ms``, ``1h``); a bare number is ms."""
    match = _DURATION.fullmatch(value.strip())
    if match is None:
        raise ValueError("expected a duration such as 500ms, 30s, 15m or 1h")
    unit = (match.group(2) or "ms").lower()
    return int(match.group(1)) * _UNIT_MS[unit]


def text(value: str) -> str:
    """The value, stripped."""
    return value.strip()


def raw(value: str) -> str:
    """The value exactly as given (for tokens and passwords, whose spaces may matter)."""
    return value


def optional_text(value: str) -> str | None:
    """The value, stripped; ``None`` when that leaves nothing."""
    return value.strip() or None


def nonempty(value: str) -> str:
    """The value, stripped; raises :class:`Blank` when that leaves nothing."""
    stripped = value.strip()
    if not stripped:
        raise Blank("must not be empty")
    return stripped


def pattern(value: str) -> re.Pattern[str]:
    """A Python regular expression."""
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid Python regular expression ({exc})") from None
    except (RecursionError, OverflowError) as exc:  # nested too deeply, a{99999999999999999999}
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ValueError(f"not a usable Python regular expression ({reason})") from None


def split_prefixed(
    options: Mapping[str, str], client_prefix: str, service_prefix: str
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Declared keys, ``client_prefix`` keys (prefix removed, case kept: client properties are
    case-sensitive) and ``service_prefix`` keys (prefix removed, lowercased), matched
    case-insensitively."""
    declared: dict[str, str] = {}
    client: dict[str, str] = {}
    service: dict[str, str] = {}
    for raw_key, value in options.items():
        key = str(raw_key)
        lowered = key.lower()
        if lowered.startswith(client_prefix.lower()):
            client[key[len(client_prefix) :]] = str(value)
        elif lowered.startswith(service_prefix.lower()):
            service[lowered[len(service_prefix) :]] = str(value)
        else:
            declared[key] = str(value)
    return declared, client, service
