"""Java client properties (what Spark's ``format("kafka")`` and every Java client take) in
librdkafka's terms: translated where librdkafka has the exact equivalent, refused with what to
write instead where it has none.

Translated (:func:`translate`):

- ``sasl.jaas.config`` with ``PlainLoginModule`` or ``ScramLoginModule`` (``username``,
  ``password``) -> ``sasl.username``, ``sasl.password``;
- ``ssl.truststore.type=PEM`` with ``ssl.truststore.location`` -> ``ssl.ca.location`` (with
  ``ssl.truststore.certificates`` -> ``ssl.ca.pem``); ``ssl.truststore.password`` is dropped;
- ``ssl.keystore.type=PKCS12`` is dropped: librdkafka's ``ssl.keystore.location`` and
  ``ssl.keystore.password`` are the same properties, PKCS#12 always;
- ``ssl.endpoint.identification.algorithm=""`` (no host name check) -> ``none``.

Refused (:attr:`Translation.problems`, each with what to write instead): JKS and PKCS12 trust
stores, JKS and PEM key stores, the Kerberos, OAuth and any other JAAS login module, any
``*.class`` or ``*.classes`` property, serializers, and Java's own TLS and security-provider
settings. A value that is wholly a secret reference (``${file:...}``) is checked once resolved,
where the client is built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.kafka.references import is_reference

__all__ = ["JAAS", "Translation", "translate"]

#: The Java client's login configuration property.
JAAS = "sasl.jaas.config"
_TRUSTSTORE = ("ssl.truststore.location", "ssl.truststore.certificates")
_KEYTOOL_CA = (
    "librdkafka trusts CA certificates in PEM: export them with `keytool -list -rfc -keystore "
    "<truststore> -storepass <password> > ca.pem` and set ssl.ca.location=ca.pem (or keep "
    "ssl.truststore.location=ca.pem with ssl.truststore.type=PEM)"
)
_KEYTOOL_P12 = (
    "librdkafka reads PKCS#12 key stores: convert it with `keytool -importkeystore -srckeystore "
    "keystore.jks -destkeystore keystore.p12 -deststoretype PKCS12` and set "
    "ssl.keystore.location=keystore.p12 with its ssl.keystore.password"
)
_PEM_KEYSTORE = (
    "librdkafka takes the certificate and key in PEM as ssl.certificate.location and "
    "ssl.key.location (files, with ssl.key.password) or ssl.certificate.pem and ssl.key.pem"
)
_KERBEROS = (
    "write sasl.mechanism=GSSAPI, sasl.kerberos.principal=<principal>, "
    "sasl.kerberos.keytab=<path> and sasl.kerberos.service.name (librdkafka's Kerberos, which "
    "the Python reader reads with; the compiled core does not link Cyrus SASL)"
)
_OAUTH = (
    "write sasl.mechanism=OAUTHBEARER with sasl.oauthbearer.method=oidc, "
    "sasl.oauthbearer.client.id, sasl.oauthbearer.client.secret and "
    "sasl.oauthbearer.token.endpoint.url (librdkafka's OIDC client)"
)
_NO_JAAS = (
    "librdkafka has no JAAS: write sasl.mechanism with sasl.username and sasl.password (PLAIN, "
    f"SCRAM-SHA-256/512), or for Kerberos {_KERBEROS.removeprefix('write ')}"
)
_TLS_VERSIONS = "OpenSSL negotiates the highest TLS version both sides speak: remove it"
_JAVA_SECURITY = "a setting of Java's security providers, which librdkafka has not: remove it"
#: Java-only properties without an equivalent, and what to do instead.
_NO_EQUIVALENT: Mapping[str, str] = {
    "ssl.protocol": _TLS_VERSIONS,
    "ssl.enabled.protocols": _TLS_VERSIONS,
    "ssl.keymanager.algorithm": _JAVA_SECURITY,
    "ssl.trustmanager.algorithm": _JAVA_SECURITY,
    "ssl.secure.random.implementation": _JAVA_SECURITY,
    "ssl.provider": _JAVA_SECURITY,
    "security.providers": _JAVA_SECURITY,
    "ssl.keystore.certificate.chain": _PEM_KEYSTORE,
    "ssl.keystore.key": _PEM_KEYSTORE,
}
_CLASSES = (
    "librdkafka cannot load Java classes: remove it (an OAuth login callback handler: "
    f"{_OAUTH.removeprefix('write ')})"
)
_SERDE = "librdkafka's clients take bytes: remove it and (de)serialize with DataFrame expressions"
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([=;])|([^\s=;"]+))', re.DOTALL)
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r"}


@dataclass(frozen=True)
class Translation:
    """Client properties with their Java client properties translated for librdkafka.

    Attributes
    ----------
    properties:
        The properties librdkafka takes (the Java ones with a problem left as they were).
    translated:
        What was translated, as ``java keys -> librdkafka keys`` (keys only, never a value).
    problems:
        ``(key, what to write instead)`` of each Java property without an equivalent.
    """

    properties: dict[str, str]
    translated: tuple[str, ...]
    problems: tuple[tuple[str, str], ...]


class _Jaas(ValueError):
    """A JAAS configuration that is not one login module with options."""


def translate(properties: Mapping[str, str]) -> Translation:
    """Translate the Java client properties of ``properties`` (keys matched in any case)."""
    return _Translating(properties).result()


class _Translating:
    """One translation: the properties as they become (``out``), their keys by lowercased name,
    what was translated and what cannot be."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self.out = {str(k): str(v) for k, v in properties.items()}
        self.keys = {k.lower(): k for k in self.out}
        self.translated: list[str] = []
        self.problems: list[tuple[str, str]] = []

    def result(self) -> Translation:
        if JAAS in self.keys and not is_reference(self.out[self.keys[JAAS]]):
            self._jaas()
        self._truststore()
        self._keystore()
        endpoint = self.keys.get("ssl.endpoint.identification.algorithm")
        if endpoint is not None and not self.out[endpoint].strip():
            self.out[endpoint] = "none"
            self.translated.append('ssl.endpoint.identification.algorithm="" -> none')
        for lowered, key in sorted(self.keys.items()):
            advice = _NO_EQUIVALENT.get(lowered)
            if advice is None and lowered.endswith((".class", ".classes")):
                advice = _CLASSES
            if advice is None and lowered.endswith(("serializer", "deserializer")):
                advice = _SERDE
            if advice is not None:
                self.problems.append((key, advice))
        return Translation(self.out, tuple(self.translated), tuple(sorted(self.problems)))

    def _drop(self, name: str) -> str:
        """Remove property ``name`` (any case); its value."""
        return self.out.pop(self.keys.pop(name))

    def _jaas(self) -> None:
        key = self.keys[JAAS]
        try:
            module, options = _parse_jaas(self.out[key])
        except _Jaas as exc:
            self.problems.append((key, f"{exc}; {_NO_JAAS}"))
            return
        name = module.rsplit(".", 1)[-1]
        if name not in ("PlainLoginModule", "ScramLoginModule"):
            advice = {"Krb5LoginModule": _KERBEROS, "OAuthBearerLoginModule": _OAUTH}
            said = f"login module {module} has no librdkafka equivalent"
            self.problems.append((key, f"{said}: {advice.get(name, _NO_JAAS)}"))
            return
        extra = sorted(set(options) - {"username", "password"})
        missing = [o for o in ("username", "password") if o not in options]
        both = [k for k in ("sasl.username", "sasl.password") if k in self.keys]
        if extra or missing or both:
            what = (
                f"option(s) {', '.join(extra)} of {name} have no librdkafka equivalent"
                if extra
                else f"{name} lacks {' and '.join(missing)}"
                if missing
                else f"{' and '.join(both)} set as well"
            )
            self.problems.append((key, f"{what}: write sasl.username and sasl.password only"))
            return
        self._drop(JAAS)
        self.out["sasl.username"], self.out["sasl.password"] = (
            options["username"],
            options["password"],
        )
        self.translated.append(f"{JAAS} ({name}) -> sasl.username, sasl.password")

    def _truststore(self) -> None:
        kind = self.keys.get("ssl.truststore.type")
        store_type = "JKS" if kind is None else self.out[kind].strip().upper()
        given = [self.keys[name] for name in _TRUSTSTORE if name in self.keys]
        if given and store_type != "PEM":
            for key in given:
                self.problems.append((key, f"a {store_type} trust store: {_KEYTOOL_CA}"))
            return
        renamed = {
            "ssl.truststore.location": "ssl.ca.location",
            "ssl.truststore.certificates": "ssl.ca.pem",
        }
        for name, target in renamed.items():
            if name in self.keys and target in self.keys:
                self.problems.append((self.keys[name], f"{target} is set as well: keep one"))
                return
        for name, target in renamed.items():
            if name in self.keys:
                self.out[target] = self._drop(name)
                self.translated.append(f"{name} -> {target}")
        for name in ("ssl.truststore.type", "ssl.truststore.password"):
            if name in self.keys:
                self._drop(name)
                self.translated.append(f"{name} -> (not needed)")

    def _keystore(self) -> None:
        key = self.keys.get("ssl.keystore.type")
        if key is None:
            return
        store_type = self.out[key].strip().upper()
        if store_type == "PKCS12":
            self._drop("ssl.keystore.type")
            self.translated.append("ssl.keystore.type=PKCS12 -> (ssl.keystore.location is PKCS#12)")
        elif store_type == "PEM":
            self.problems.append((key, f"a PEM key store: {_PEM_KEYSTORE}"))
        else:
            self.problems.append((key, f"a {store_type or 'JKS'} key store: {_KEYTOOL_P12}"))


def _parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """The login module and the options of a JAAS configuration of one login module
    (``<class> <flag> name="value" ...;``), as Kafka's ``JaasConfig`` reads it."""
    tokens: list[tuple[str, str]] = []  # (kind, text): word, quoted, = or ;
    position = 0
    while text[position:].strip():
        match = _TOKEN.match(text, position)
        if match is None:
            raise _Jaas("it cannot be read as a JAAS configuration")
        quoted, mark, word = match.groups()
        if quoted is not None:
            tokens.append(("quoted", re.sub(r"\\(.)", lambda m: _ESCAPED.get(m[1], m[1]), quoted)))
        else:
            tokens.append(("mark", mark) if mark else ("word", word))
        position = match.end()
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][1].lower() not in _FLAGS:
        raise _Jaas("it is not '<LoginModule class> required name=\"value\" ...;'")
    if tokens[-1] != ("mark", ";") or ("mark", ";") in tokens[2:-1]:
        raise _Jaas("it must hold one login module, ended by ';'")
    options: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3:
        raise _Jaas('its options must be written name="value"')
    for index in range(0, len(body), 3):
        (kind, name), (_, mark), (value_kind, value) = body[index : index + 3]
        if kind != "word" or mark != "=" or value_kind == "mark":
            raise _Jaas('its options must be written name="value"')
        options[name] = value
    return tokens[0][1], options
