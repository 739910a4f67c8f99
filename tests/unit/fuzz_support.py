"""Strategies and checks shared by the property-based tests (tests/unit/test_fuzz_*.py).

Secrets are sentinel values: each is long and unique, so finding one in a message can only mean
that the secret leaked (the redaction masks values of three characters or more).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from pyspark_dynamic_kafka.errors import DynamicKafkaError

#: Secret client property -> the sentinel value the strategies give it.
SECRETS: Mapping[str, str] = {
    "sasl.password": "SENTINEL-sasl-password-5b1f0c",
    "ssl.keystore.password": "SENTINEL-keystore-password-e93a27",
    "ssl.key.password": "SENTINEL-ssl-key-password-04d8",
    "sasl.oauthbearer.client.secret": "SENTINEL-oauth-secret-7c2e",
    "ssl.key.pem": "SENTINEL-ssl-key-pem-a61b",
}
#: The bearer token of the HTTP metadata service in the tests.
TOKEN = "SENTINEL-bearer-token-3f9d"
ALL_SENTINELS = (*SECRETS.values(), TOKEN)

# Integers around the edges that matter: int32/int64 limits and Python's 4,300-digit limit of
# int <-> str conversion (a longer literal makes json and yaml raise a bare ValueError).
EDGE_INTEGERS = st.one_of(
    st.sampled_from([0, 1, -1, -2, -3, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63), 10**30]),
    st.just(4400).map(lambda digits: 10**digits),  # built lazily: such an int has no repr
)
integers = st.one_of(st.integers(), EDGE_INTEGERS)
# Short text over a small alphabet (collisions with ids and keywords happen often) or any text.
short_text = st.one_of(
    st.text(alphabet="abcxyz-_. :", max_size=6),
    st.sampled_from(["", " ", "earliest", "latest", "timestamp", "east", "west", "orders"]),
    st.text(max_size=12),
)
scalars = st.one_of(st.none(), st.booleans(), integers, st.floats(), short_text)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Any JSON value (lists and string-keyed objects of scalars, nested)."""
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(short_text, inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def deep_nesting() -> st.SearchStrategy[str]:
    """JSON text nested deeper than Python's recursion limit, or nearly so."""
    return st.builds(
        lambda depth, opener, inner: opener * depth + inner,
        st.sampled_from([50, 900, 1000, 5000, 100_000]),
        st.sampled_from(["[", '{"a":', '{"clusters":']),
        st.sampled_from(["", "1", "]" * 10]),
    )


def mutated(text: str, data: st.DataObject, alphabet: str) -> str:
    """``text`` with a few random edits: deletions, insertions, truncation, duplicated lines."""
    edits = data.draw(st.integers(0, 4), label="edits")
    for _ in range(edits):
        kind = data.draw(st.sampled_from(["delete", "insert", "truncate", "duplicate"]))
        at = data.draw(st.integers(0, len(text)), label="at")
        if kind == "delete":
            size = data.draw(st.integers(1, 8))
            text = text[:at] + text[at + size :]
        elif kind == "insert":
            text = (
                text[:at]
                + data.draw(st.text(alphabet=alphabet, min_size=1, max_size=6))
                + text[at:]
            )
        elif kind == "truncate":
            text = text[:at]
        else:
            lines = text.splitlines(keepends=True)
            if lines:
                index = data.draw(st.integers(0, len(lines) - 1))
                lines.insert(index, lines[index])
                text = "".join(lines)
    return text


def assert_no_secret(message: str) -> None:
    """No sentinel secret (nor the bearer token) appears in ``message``."""
    for secret in ALL_SENTINELS:
        assert secret not in message, f"secret {secret!r} leaked into: {message}"


def secrets_still_secret(text: str) -> bool:
    """Whether every sentinel in a (mutated) text still sits right after its secret key.

    An edit may cut a sentinel loose from its key (``sasl.passwordSENTINEL...``); it is then no
    longer a secret value of the document, and quoting it is not a leak.
    """
    for key, secret in SECRETS.items():
        if secret not in text:
            continue
        pattern = rf"""["']?{re.escape(key)}["']?\s*:\s*["']?{re.escape(secret)}(?![\w-])"""
        if text.count(secret) != len(re.findall(pattern, text)):
            return False
    return True


def only_own_errors(call: Callable[[], Any], allowed: type[DynamicKafkaError]) -> Any:
    """Run ``call``; an exception must be ``allowed`` (else it propagates with its traceback).

    Returns the result, or the exception raised.
    """
    try:
        return call()
    except allowed as exc:
        return exc
