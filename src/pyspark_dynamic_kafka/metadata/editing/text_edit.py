"""A stream's entries changed in a metadata file's text, everything else kept byte for byte.

:func:`~pyspark_dynamic_kafka.metadata.file.write_metadata_file` writes a whole document and so
drops comments and formatting. A move changes only a stream's entries; :func:`replace_entries`
edits just those in the file's text (YAML, or JSON, which YAML reads too):

- one entry whose cluster alone changes: only that scalar is rewritten;
- the same clusters in the same order (a write marker flipped): each changed entry is
  rewritten in place, in its own style;
- otherwise the first entry on either cluster is rewritten in place (in its own style, block or
  flow) and the other entries on them are deleted, lines and all (block sequences only).

The edited text is read back and must give exactly the expected metadata; when it does not, or
the layout is one these edits do not handle, the answer is ``None`` and the caller writes the
whole document instead (losing the comments, and saying so).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from pyspark_dynamic_kafka.errors import MetadataError

__all__ = ["replace_entries"]

_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _end(node: yaml.Node) -> int:
    """Where ``node``'s own text ends (a block collection's end mark lies past trailing
    comments and blank lines; its last value's does not)."""
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _end(node.value[-1])
    return int(node.end_mark.index)


def _value(mapping: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(mapping, yaml.MappingNode):
        return None
    return next((v for k, v in mapping.value if getattr(k, "value", None) == key), None)


def _scalar(value: str, as_json: bool) -> str:
    if not as_json and _PLAIN.fullmatch(value) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value, ensure_ascii=False)


def _render(entry: Mapping[str, Any], node: yaml.Node, text: str, as_json: bool) -> str:
    """``entry`` as text that can stand where ``node`` stands."""
    if as_json or getattr(node, "flow_style", False):
        return json.dumps(entry, ensure_ascii=False)
    dumped = yaml.safe_dump(
        dict(entry), sort_keys=False, default_flow_style=None, allow_unicode=True
    ).rstrip("\n")
    indent = " " * int(node.start_mark.column)
    return dumped.replace("\n", "\n" + indent)


def _line_span(text: str, start: int, end: int) -> tuple[int, int]:
    """From the start of ``start``'s line to past the end of ``end``'s line."""
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return first, len(text) if last < 0 else last + 1


def _marker_edit(
    text: str, node: yaml.Node, old: Mapping[str, Any], new: Mapping[str, Any], as_json: bool
) -> tuple[int, int, str]:
    """The edit of one entry whose ``write`` key alone changes: in a block mapping just that
    key's line (comments kept), else the entry rewritten in its own style."""
    whole = (int(node.start_mark.index), _end(node), _render(new, node, text, as_json))
    rest = {k: v for k, v in new.items() if k != "write"}
    if (
        as_json
        or not isinstance(node, yaml.MappingNode)
        or node.flow_style
        or {k: v for k, v in old.items() if k != "write"} != rest
    ):
        return whole
    key = next((k for k, _ in node.value if getattr(k, "value", None) == "write"), None)
    value = _value(node, "write")
    if key is None or value is None:  # no key yet: a line after the entry's last
        if "write" not in new:
            return whole
        line_end = _line_span(text, _end(node), _end(node))[1]
        indent = " " * int(node.start_mark.column)
        prefix = "" if text[line_end - 1 : line_end] == "\n" else "\n"
        return (line_end, line_end, f"{prefix}{indent}write: {json.dumps(new['write'])}\n")
    if "write" in new:
        span = (int(value.start_mark.index), int(value.end_mark.index))
        return (*span, json.dumps(new["write"]))
    start, end = _line_span(text, int(key.start_mark.index), int(value.end_mark.index))
    if text[start : int(key.start_mark.index)].strip():
        return whole  # "- write: true" opens the entry: rewrite it
    return (start, end, "")


def _edits(
    text: str,
    entries: yaml.SequenceNode,
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    clusters: tuple[str, str],
    as_json: bool,
) -> list[tuple[int, int, str]] | None:
    if len(entries.value) != len(before):
        return None
    if [e.get("cluster") for e in after] == [e.get("cluster") for e in before]:
        return [  # the same entries (a write marker flipped): each changed one edited
            _marker_edit(text, node, old, new, as_json)
            for node, old, new in zip(entries.value, before, after, strict=True)
            if old != new
        ]
    touched = [i for i, e in enumerate(before) if e.get("cluster") in clusters]
    kept = [e for e in before if e.get("cluster") not in clusters]
    merged = [e for e in after if e.get("cluster") in clusters]
    if not touched or len(merged) != 1:
        return None
    if [e for e in after if e.get("cluster") not in clusters] != kept:
        return None
    new, first = merged[0], entries.value[touched[0]]
    if len(touched) == 1 and {**before[touched[0]], "cluster": new["cluster"]} == new:
        cluster = _value(first, "cluster")
        if not isinstance(cluster, yaml.ScalarNode):
            return None
        span = (int(cluster.start_mark.index), int(cluster.end_mark.index))
        return [(*span, _scalar(str(new["cluster"]), as_json))]
    edits = [(int(first.start_mark.index), _end(first), _render(new, first, text, as_json))]
    if len(touched) > 1 and entries.flow_style:
        return None
    for index in touched[1:]:
        node = entries.value[index]
        start, end = _line_span(text, int(node.start_mark.index), _end(node))
        dash = text.rfind("-", 0, int(node.start_mark.index))
        if dash < start or text[start:dash].strip():
            return None  # not "- entry" on a line of its own
        edits.append((start, end, ""))
    return edits


def replace_entries(
    text: str,
    stream_id: str,
    after: Sequence[Mapping[str, Any]],
    clusters: tuple[str, str],
    expected: Mapping[str, Any],
    as_json: bool,
) -> str | None:
    """``text`` with the stream's entries on ``clusters`` replaced as in ``after``.

    Parameters
    ----------
    text:
        The metadata file's text.
    stream_id:
        The stream whose entries change.
    after:
        The stream's entries after the edit (entries on neither cluster unchanged, one on them).
    clusters:
        The two clusters whose entries change (the move's source and target).
    expected:
        The whole document the edited text must read as (compared after reading).
    as_json:
        Whether the file is JSON (new text is written as JSON values).

    Returns
    -------
    str or None
        The edited text; ``None`` when the layout is not one these edits handle.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        before = yaml.safe_load(text)["streams"][stream_id]
    except (yaml.YAMLError, KeyError, TypeError):
        return None
    entries = _value(_value(root, "streams"), stream_id)
    if not isinstance(entries, yaml.SequenceNode) or not isinstance(before, list):
        return None
    if not all(isinstance(e, dict) for e in before):
        return None
    edits = _edits(text, entries, before, after, clusters, as_json)
    if edits is None:
        return None
    edited = text
    for start, end, replacement in sorted(edits, reverse=True):
        edited = edited[:start] + replacement + edited[end:]
    try:
        if yaml.safe_load(edited) != expected:
            return None
    except yaml.YAMLError as exc:  # pragma: no cover - the checks above make this unreachable
        raise MetadataError(f"A text edit of stream {stream_id!r} broke the file: {exc}") from None
    return edited
