"""The ``dynamic-kafka`` command line: ``validate``, ``describe``, ``move``, ``serve`` and
``report``.

Also run as ``python -m pyspark_dynamic_kafka``. Results go to standard output, errors to
standard error; the exit code is 0 on success, 1 on failure and 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable, Sequence

from rich.console import Console

from pyspark_dynamic_kafka.cli.describe import build_report
from pyspark_dynamic_kafka.cli.drained import check_drained
from pyspark_dynamic_kafka.cli.location import TOKEN_ENV, MetadataLocation, select_streams
from pyspark_dynamic_kafka.cli.render import render_report, render_streams
from pyspark_dynamic_kafka.errors import DynamicKafkaError
from pyspark_dynamic_kafka.kafka.java_properties import translate
from pyspark_dynamic_kafka.metadata.file import load_metadata_file, validate_metadata_file
from pyspark_dynamic_kafka.metadata.http_api.client import DEFAULT_TIMEOUT_MS

__all__ = ["main"]

_EXAMPLES = """\
examples:
  dynamic-kafka validate --metadata streams.yaml
  dynamic-kafka describe --metadata streams.yaml --streams orders --group billing
  dynamic-kafka describe --metadata https://metadata.example.com --pattern '^orders' --json
  dynamic-kafka move orders --from east --to west --metadata http://127.0.0.1:8080 \\
      --token-file token.txt
  dynamic-kafka move orders --write --from east --to west --metadata streams.yaml
  dynamic-kafka serve --metadata streams.yaml --port 8080 --token-file token.txt
  dynamic-kafka report metrics.jsonl --out report/
"""


#: Source options the library's messages name, and the flag that gives each on this command line.
_FLAGS = {
    "metadataService.url": "--metadata",
    "metadataService.token": "--token-file",
    "metadataService.caFile": "--ca-file",
}
_OPTION_NAMED = re.compile(r"(?<![\w'.])(" + "|".join(map(re.escape, _FLAGS)) + r")(?![\w'])")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _with_flags(message: str) -> str:
    """``message`` with the command-line flag added after each source option it names."""
    return _OPTION_NAMED.sub(lambda m: f"{m.group(1)}, or {_FLAGS[m.group(1)]}", message)


def _validate(args: argparse.Namespace) -> int:
    """Check a metadata file; list every problem (exit 1 when there is any).

    Check a metadata file and list every problem with its path in the file.
    """
    if args.file and args.metadata and args.file != args.metadata:
        raise DynamicKafkaError(
            f"validate was given two files, {args.file} and --metadata {args.metadata}: "
            "give only --metadata FILE"
        )
    path = args.metadata or args.file
    if not path:
        raise DynamicKafkaError("validate needs the metadata file: --metadata FILE")
    problems = validate_metadata_file(path)
    if problems:
        _stderr(f"{path}: {len(problems)} problem(s):")
        for problem in problems:
            _stderr(f"  {problem}")
        return 1
    parsed = load_metadata_file(path)
    print(f"{path}: valid ({len(parsed.clusters)} clusters, {len(parsed.streams)} streams)")
    for cluster_id, properties in sorted(parsed.clusters.items()):
        for done in translate(properties).translated:  # keys only, never a value
            print(f"  clusters.{cluster_id}: Java client property translated: {done}")
    return 0


def _location(args: argparse.Namespace) -> MetadataLocation:
    return MetadataLocation(args.metadata, args.token_file, args.ca_file, args.timeout_ms)


def _describe(args: argparse.Namespace) -> int:
    """Streams -> clusters -> topics -> partitions, offsets and lag.

    Resolve streams to clusters, topics and partitions with their earliest and latest offsets
    and, with --group, the group's committed offsets and lag.
    """
    service = _location(args).service()
    try:
        ids = [s.strip() for s in args.streams.split(",") if s.strip()] if args.streams else None
        streams = select_streams(service, ids, args.pattern)
    finally:
        service.close()
    report = build_report(
        streams, source=args.metadata, group=args.group, timeout_ms=args.timeout_ms
    )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        render_report(report, Console())
    for error in report.errors:
        _stderr(f"error: cluster {error}")
    return 1 if report.errors else 0


def _move(args: argparse.Namespace) -> int:
    """Move a stream's topics (or, with --write, its writes) from one cluster to another.

    Move a stream's topics from cluster --from to cluster --to in one atomic edit, or with
    --write only its write marker (writers produce to --to from their next micro-batch; readers
    keep reading both clusters): a file is rewritten atomically (temp file + rename), its
    comments and formatting kept outside the changed entries; a service is written with If-Match
    so that no concurrent edit is lost.
    """
    location = _location(args)
    if args.check_drained:
        service = location.service()
        try:
            stream = select_streams(service, [args.stream], None)[args.stream]
        finally:
            service.close()
        check_drained(stream, args.source, args.check_drained, args.timeout_ms, args.metadata)
        print(f"Group {args.check_drained!r} has drained {args.stream!r} on {args.source!r}.")
    move = location.move(
        args.stream, args.source, args.target, dry_run=args.dry_run, writes=args.write
    )
    what = f"the writes of stream {args.stream!r}" if args.write else f"stream {args.stream!r}"
    if args.dry_run:
        print(
            f"Dry run: moving {what} from {args.source!r} to {args.target!r} would "
            f"change {args.metadata} so (nothing written):"
        )
        sys.stdout.write(move.diff)
        if not move.layout_kept:
            print("(the file would be rewritten whole: its comments and formatting are lost)")
        return 0
    print(f"Moved {what} from {args.source!r} to {args.target!r} in {args.metadata}:")
    render_streams(move.streams, Console())
    if not move.layout_kept:
        _stderr(
            f"warning: {args.metadata} was rewritten whole (its layout around stream "
            f"{args.stream!r} is not one a move edits in place): its comments are gone."
        )
    return 0


def _serve(args: argparse.Namespace) -> int:
    """Serve a metadata file over the HTTP contract (reference server).

    Serve a metadata file over the HTTP metadata contract (v1). Writes need the token of
    --token-file (read-only without it); reads are open unless --read-token-file is given.
    """
    try:  # starlette and uvicorn only when serving: the optional extra 'server'
        from pyspark_dynamic_kafka.server.run import serve
    except ModuleNotFoundError as exc:
        raise DynamicKafkaError(
            f"dynamic-kafka serve needs starlette and uvicorn ({exc.name} is not installed): "
            "pip install 'pyspark-dynamic-kafka[server]'"
        ) from None

    serve(
        args.metadata,
        host=args.host,
        port=args.port,
        token_file=args.token_file,
        read_token_file=args.read_token_file,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        log_level=args.log_level,
    )
    return 0


def _report(args: argparse.Namespace) -> int:
    """Draw a query's metrics (records/s, pending records per cluster) as PNG and HTML.

    Draw the JSON lines that pyspark_dynamic_kafka.monitoring.attach(spark, path=...) wrote:
    records read per second and records waiting per cluster over time, with the metadata
    changes marked. Writes dynamic-kafka-report.png and .html.
    """
    from pathlib import Path

    from pyspark_dynamic_kafka.monitoring.report import render_report  # matplotlib: only here

    png, page = render_report(Path(args.metrics), Path(args.out), args.query, args.title)
    print(f"chart: {png}")
    print(f"page:  {page}")
    return 0


def _add_service_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metadata",
        required=True,
        metavar="FILE|URL",
        help="metadata file (.yaml, .yml, .json) or metadata service base URL (http(s)://...)",
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help=f"file holding the service's bearer token (default: ${TOKEN_ENV} when set)",
    )
    parser.add_argument("--ca-file", metavar="FILE", help="PEM file of a private CA (https)")
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"timeout of each request to the service or a cluster (default {DEFAULT_TIMEOUT_MS})",
    )


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    run: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """Declare the command ``run`` runs, from ``run`` itself: its name without the underscore,
    its help (in ``dynamic-kafka --help``) the first line of its docstring without the full stop,
    its description (in its own ``--help``) the rest of the docstring."""
    summary, _, details = (run.__doc__ or "").partition("\n\n")
    summary = summary.strip().removesuffix(".")
    parser = commands.add_parser(
        run.__name__.lstrip("_"),
        help=summary[:1].lower() + summary[1:],
        description=" ".join(details.split()),
    )
    parser.set_defaults(run=run)
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dynamic-kafka",
        description="Inspect, edit and serve the metadata of pyspark-dynamic-kafka streams.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    validate = _command(commands, _validate)
    validate.add_argument("--metadata", metavar="FILE", help="metadata file (.yaml, .yml, .json)")
    # The file as a positional argument, as validate took it before --metadata
    validate.add_argument("file", nargs="?", metavar="FILE", help=argparse.SUPPRESS)

    describe = _command(commands, _describe)
    _add_service_options(describe)
    which = describe.add_mutually_exclusive_group()
    which.add_argument("--streams", metavar="ID[,ID...]", help="comma-separated stream ids")
    which.add_argument("--pattern", metavar="REGEX", help="stream ids matching (re.search)")
    describe.add_argument("--group", metavar="GROUP", help="consumer group: committed offsets, lag")
    describe.add_argument("--json", action="store_true", help="print JSON instead of a table")

    move = _command(commands, _move)
    move.add_argument("stream", metavar="STREAM", help="the stream id")
    move.add_argument(
        "--from", dest="source", required=True, metavar="CLUSTER", help="cluster it leaves"
    )
    move.add_argument(
        "--to", dest="target", required=True, metavar="CLUSTER", help="cluster it goes to"
    )
    move.add_argument(
        "--write",
        action="store_true",
        help="move only the stream's write marker ('write: true'): both clusters stay listed, "
        "writers produce to --to from their next micro-batch",
    )
    move.add_argument(
        "--dry-run",
        action="store_true",
        help="print the change as a unified diff; write nothing",
    )
    move.add_argument(
        "--check-drained",
        metavar="GROUP",
        help="refuse unless consumer group GROUP has committed the latest offset of every "
        "partition of the stream on the --from cluster (a query with commitOffsetsToKafka=true "
        "and kafka.group.id=GROUP)",
    )
    _add_service_options(move)

    serve = _command(commands, _serve)
    serve.add_argument("--metadata", required=True, metavar="FILE", help="the metadata file")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument("--token-file", metavar="FILE", help="file holding the write token")
    serve.add_argument("--read-token-file", metavar="FILE", help="file holding the read token")
    serve.add_argument("--tls-cert", metavar="FILE", help="PEM certificate chain (https)")
    serve.add_argument("--tls-key", metavar="FILE", help="PEM private key (https)")
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="log level (default info)",
    )

    report = _command(commands, _report)
    report.add_argument("metrics", metavar="FILE", help="the JSON-lines metrics file")
    report.add_argument("--out", default=".", metavar="DIR", help="output directory (default .)")
    report.add_argument("--query", metavar="NAME|ID", help="the query (default: the last one)")
    report.add_argument("--title", help="title of the chart")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code.

    Parameters
    ----------
    argv:
        The arguments (``sys.argv[1:]`` when ``None``).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command != "serve":
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return run(args)
    except DynamicKafkaError as exc:
        _stderr(f"error: {_with_flags(str(exc))}")
        return 1
    except KeyboardInterrupt:
        return 130
