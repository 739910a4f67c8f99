"""Run the reference metadata server with uvicorn (``dynamic-kafka serve``)."""

from __future__ import annotations

import copy
import logging
import logging.config
import os
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import is_secret_key
from pyspark_dynamic_kafka.metadata.file import load_metadata_file
from pyspark_dynamic_kafka.metadata.http_api.tokens import load_token
from pyspark_dynamic_kafka.server.app import create_app

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "serve"]

_log = logging.getLogger(__name__)

#: Bind address by default: this machine only.
DEFAULT_HOST = "127.0.0.1"
#: Port by default.
DEFAULT_PORT = 8080
_GRACEFUL_SHUTDOWN_S = 5


def _log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging configuration plus this package's loggers (same format, stderr)."""
    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["pyspark_dynamic_kafka"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    return config


def serve(
    metadata: str | os.PathLike[str],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token_file: str | None = None,
    read_token_file: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    log_level: str = "info",
) -> None:
    """Serve a metadata file over the HTTP contract until interrupted (SIGINT or SIGTERM).

    Parameters
    ----------
    metadata:
        The metadata file; it must be valid at start.
    host, port:
        Where to listen (``127.0.0.1:8080`` by default).
    token_file:
        File holding the write token; without it the server is read-only.
    read_token_file:
        File holding the read token; without it reads are open.
    tls_cert, tls_key:
        PEM certificate (chain) and key to serve https; both or neither.
    log_level:
        ``critical``, ``error``, ``warning``, ``info`` or ``debug``.

    Raises
    ------
    MetadataError
        When the metadata file is missing or invalid.
    OptionsError
        When a token file is unusable or only one of ``tls_cert``/``tls_key`` is given.
    """
    if (tls_cert is None) != (tls_key is None):
        raise OptionsError("Give both --tls-cert and --tls-key to serve https, or neither.")
    parsed = load_metadata_file(metadata)
    write_token = load_token(token_file, "--token-file") if token_file else None
    read_token = load_token(read_token_file, "--read-token-file") if read_token_file else None
    logging.config.dictConfig(_log_config(log_level))
    secret = any(is_secret_key(k) for props in parsed.clusters.values() for k in props)
    if secret and read_token is None:
        _log.warning(
            "%s holds secret client properties and reads are open: anyone who can reach the "
            "server can read them. Protect reads with --read-token-file (and use TLS).",
            os.fspath(metadata),
        )
    _log.info(
        "Serving %s (%d streams, %d clusters): writes %s, reads %s.",
        os.fspath(metadata),
        len(parsed.streams),
        len(parsed.clusters),
        "need the token of --token-file" if write_token else "disabled",
        "need a token" if read_token else "open",
    )
    app = create_app(metadata, write_token=write_token, read_token=read_token)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_config=_log_config(log_level),
        log_level=log_level,
        proxy_headers=False,
        server_header=False,
        ssl_certfile=tls_cert,
        ssl_keyfile=tls_key,
        timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S,
    )
