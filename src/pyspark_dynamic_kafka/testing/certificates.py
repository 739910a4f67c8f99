"""The TLS material of an Apache Kafka test cluster started with ``tls=True``: a key pair and a
self-signed certificate for ``127.0.0.1`` (an IP subject alternative name, so that clients verify
the host name), made by the JDK's ``keytool`` in the cluster's temporary directory. The brokers
share it; clients trust the certificate as their CA (:mod:`~.tls`)."""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from pyspark_dynamic_kafka.testing.errors import KafkaTestingError

__all__ = ["TlsStore", "make_tls_store"]


@dataclass(frozen=True)
class TlsStore:
    """A broker key store and the certificate clients trust.

    Attributes
    ----------
    keystore:
        PKCS12 key store of the brokers' key and self-signed certificate.
    password:
        The key store's (and key's) password.
    ca_location:
        The certificate in PEM, for clients' ``ssl.ca.location``.
    """

    keystore: Path
    password: str
    ca_location: Path


def make_tls_store(directory: Path, java: str) -> TlsStore:
    """Make a key pair and a self-signed certificate for ``127.0.0.1`` in ``directory`` with the
    ``keytool`` next to ``java``; valid for two days.

    Raises
    ------
    KafkaTestingError
        If keytool fails (its output is in the message).
    """
    keytool = str(Path(java).with_name("keytool")) if "/" in java else "keytool"
    store = TlsStore(directory / "broker.p12", uuid.uuid4().hex, directory / "ca.pem")
    common = ["-keystore", str(store.keystore), "-storetype", "PKCS12"]
    common += ["-storepass", store.password, "-alias", "broker"]
    generate = ["-genkeypair", "-keyalg", "RSA", "-keysize", "2048", "-validity", "2"]
    generate += ["-dname", "CN=127.0.0.1", "-ext", "SAN=IP:127.0.0.1", "-keypass", store.password]
    for command in (generate, ["-exportcert", "-rfc", "-file", str(store.ca_location)]):
        done = subprocess.run(
            [keytool, *command, *common], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise KafkaTestingError(
                f"keytool {command[0]} failed ({done.returncode}): {done.stdout}{done.stderr}"
            )
    return store
