"""A cluster's schema registry, as its metadata entry names it.

A registry is part of a cluster's entry, beside its client properties and under the names
Confluent's clients use (``schema.registry.url``, ``schema.registry.basic.auth.user.info``,
``schema.registry.bearer.auth.token``, ``schema.registry.ssl.ca.location``), in the metadata
file and in the HTTP contract alike. They are not client properties: they are never handed to a
Kafka client (:func:`without_registry`), ``validate`` checks them (:func:`registry_problems`),
secrets among them are masked like every other secret, and since they belong to the cluster's
entry a change to them is a metadata change. Schema ids are local to the registry that issued
them, so each cluster's records are decoded against its own registry; several clusters may name
the same one.

Values may be secret references (``${env:VAR}``, ``${file:path:key}``), resolved where the
registry's client is built, never here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from pyspark_dynamic_kafka.errors import MetadataValidationError
from pyspark_dynamic_kafka.kafka.references import is_reference

__all__ = [
    "REGISTRY_KEYS",
    "REGISTRY_PREFIX",
    "RegistryEndpoint",
    "is_registry_key",
    "registry_problems",
    "without_registry",
]

#: What every registry key starts with.
REGISTRY_PREFIX = "schema.registry."
URL = "schema.registry.url"
USER_INFO = "schema.registry.basic.auth.user.info"
BEARER = "schema.registry.bearer.auth.token"
CA = "schema.registry.ssl.ca.location"
#: The registry keys a cluster's entry may hold (Confluent's clients' names).
REGISTRY_KEYS = (URL, USER_INFO, BEARER, CA)
_MASK = "******"


def is_registry_key(key: str) -> bool:
    """Whether ``key`` names the cluster's schema registry rather than a client property."""
    return key.lower().startswith(REGISTRY_PREFIX)


def without_registry(properties: Mapping[str, str]) -> dict[str, str]:
    """``properties`` without the registry's keys: what a Kafka client may be built from."""
    return {k: v for k, v in properties.items() if not is_registry_key(k)}


def registry_problems(properties: Mapping[str, str]) -> list[tuple[str, str]]:
    """What is wrong with the registry keys of a cluster's ``properties``: (key, message) pairs,
    each message saying what to write instead and never quoting a secret's value."""
    keys = {k: v for k, v in properties.items() if is_registry_key(k)}
    problems: list[tuple[str, str]] = []
    for key in keys:
        if key not in REGISTRY_KEYS:
            near = difflib.get_close_matches(key.lower(), REGISTRY_KEYS, n=1)
            hint = f" Did you mean '{near[0]}'?" if near else ""
            problems.append(
                (key, f"not a schema registry key.{hint} Known: {', '.join(REGISTRY_KEYS)}")
            )
    if not keys:
        return problems
    if URL not in keys:
        problems.append(
            (
                next(iter(keys)),
                f"a registry key without '{URL}': add '{URL}: https://host:port' (several "
                "separated by commas), or remove the registry keys",
            )
        )
    else:
        problems.extend((URL, message) for message in _url_problems(keys[URL], CA in keys))
    user_info = keys.get(USER_INFO)
    if user_info is not None and not is_reference(user_info) and ":" not in user_info:
        problems.append((USER_INFO, "must be 'user:password' (the value, not shown, has no ':')"))
    if USER_INFO in keys and BEARER in keys:
        problems.append(
            (BEARER, f"'{USER_INFO}' is set too: a registry takes one of the two; keep one")
        )
    return problems


def _url_problems(value: str, has_ca: bool) -> list[str]:
    problems: list[str] = []
    urls = [u.strip() for u in value.split(",")]
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problems.append(
                f"{url!r} is not an http:// or https:// URL with a host; write e.g. "
                "'https://registry.example.com:8081'"
            )
        elif parts.username is not None or parts.password is not None:
            problems.append(
                "a URL holds a user name or password, which would be shown wherever the URL "
                f"is; move them to '{USER_INFO}' (as 'user:password')"
            )
    if has_ca and not any(u.startswith("https://") for u in urls):
        problems.append(f"'{CA}' is set but no URL is https://; use https:// or remove it")
    return problems


@dataclass(frozen=True)
class RegistryEndpoint:
    """How to reach one cluster's schema registry.

    Parameters
    ----------
    urls:
        The registry's base URLs, tried in order.
    user_info:
        ``user:password`` for HTTP basic authentication (or a secret reference), if any.
    bearer_token:
        A bearer token (or a secret reference), if any.
    ca_location:
        A CA file that verifies an https:// registry's certificate, if not the system's.
    """

    urls: tuple[str, ...]
    user_info: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)
    ca_location: str | None = None

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> RegistryEndpoint | None:
        """The registry a cluster's ``properties`` name, or ``None`` when they name none.

        Raises
        ------
        MetadataValidationError
            When its keys have a problem (:func:`registry_problems`), naming the first.
        """
        problems = registry_problems(properties)
        if problems:
            key, message = problems[0]
            raise MetadataValidationError(f"Schema registry property '{key}': {message}.")
        if URL not in properties:
            return None
        return cls(
            tuple(u.strip() for u in properties[URL].split(",")),
            properties.get(USER_INFO),
            properties.get(BEARER),
            properties.get(CA),
        )

    def __repr__(self) -> str:
        auth = (
            f", user_info={_MASK!r}"
            if self.user_info
            else f", bearer_token={_MASK!r}"
            if self.bearer_token
            else ""
        )
        return f"RegistryEndpoint(urls={self.urls!r}{auth}, ca_location={self.ca_location!r})"
