"""Per-round lines, ratios ours / peer and their medians, targets, the shared command line."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Mapping
from typing import Any

from benchmarks.spark_sides import Run

OURS = "dynamic_kafka"
#: (rows/s ratio at least, CPU ratio at most); None: no target, shown for reading.
Target = tuple[float | None, float | None]
#: ``(ours, peer)`` pairs whose ratios ours / peer are printed.
Pairs = list[tuple[str, str]]
#: ``{peer: target}`` of ``dynamic_kafka`` / peer.
TARGETS: dict[str, Target] = {
    "kafka": (0.8, 1.5),
    "union": (1.0, None),
    "raw": (None, None),
    "flink": (None, None),
    "floor": (None, None),
    "native": (None, None),
}
#: The compiled core's reader (``reader=native``) is also set against Spark's own source(s).
PROTOTYPE = "native"


def side(name: str, run: Run) -> str:
    return f"{name} {run.rps:,.0f} rows/s {run.us_per_record:.2f} us/rec ({run.split()})"


def ratios(runs: dict[str, Run], ours_name: str = OURS) -> dict[str, tuple[float, float]]:
    """``{peer: (ours / peer rows/s, ours / peer CPU per record)}``."""
    ours = runs[ours_name]
    return {  # ours / peer
        name: (ours.rps / run.rps, ours.us_per_record / run.us_per_record)
        for name, run in runs.items()
        if name != ours_name
    }


def _prototype(runs: dict[str, Run]) -> dict[str, tuple[float, float]]:
    """The native reader against Spark's own source(s) only, when both ran."""
    if PROTOTYPE not in runs:
        return {}
    return {k: v for k, v in ratios(runs, PROTOTYPE).items() if k in ("kafka", "union")}


def round_line(case: str, rnd: int, runs: dict[str, Run], load: float) -> str:
    label = f"{case} round {rnd}" + (" (warm-up, not counted)" if rnd == 0 else "")
    sides = "\n    ".join(side(n, r) for n, r in runs.items())
    ratio = ", ".join(f"/{p} {r:.2f}x rows/s {c:.2f}x CPU" for p, (r, c) in ratios(runs).items())
    line = f"{label}, load {load:.1f}:\n    {sides}\n    ours{ratio.replace(', /', '; /')}"
    for p, (r, c) in _prototype(runs).items():
        line += f"\n    {PROTOTYPE}/{p} {r:.2f}x rows/s {c:.2f}x CPU"
    return line


def medians(rounds: list[dict[str, Run]]) -> list[str]:
    """Each side's median rows/s and CPU per record over the rounds."""
    lines = []
    for name in rounds[0]:
        rps = statistics.median(r[name].rps for r in rounds)
        cpu = statistics.median(r[name].us_per_record for r in rounds)
        lines.append(f"  {name:14} median {rps:>12,.0f} rows/s {cpu:6.2f} us/record")
    return lines


def _verdict(value: float, bound: float | None, at_least: bool) -> str:
    if bound is None:
        return ""
    met = value >= bound if at_least else value <= bound
    return f" (target {'>=' if at_least else '<='} {bound}x: {'met' if met else 'NOT met'})"


def summary(case: str, rounds: list[dict[str, Run]]) -> str:
    """Each side's median rows/s and CPU, each ratio per round and its median."""
    if not rounds:
        return f"{case}: no rounds"
    lines = [f"{case}, {len(rounds)} rounds:", *medians(rounds)]
    named = [("ours", [ratios(r) for r in rounds]), (PROTOTYPE, [_prototype(r) for r in rounds])]
    for label, per_round in named:
        lines.extend(ratio_lines(label, per_round))
    return "\n".join(lines)


def ratio_lines(
    label: str,
    per_round: list[dict[str, tuple[float, float]]],
    targets: Mapping[str, Target] = TARGETS,
) -> list[str]:
    """``label/peer`` ratios per round and their medians, with ``targets[peer]``'s verdicts."""
    lines = []
    for peer in per_round[0]:
        rps = [r[peer][0] for r in per_round]
        cpu = [r[peer][1] for r in per_round]
        low, high = targets.get(peer, (None, None))
        name = f"{label}/{peer}"
        lines.append(
            f"  {name:14} rows/s {' '.join(f'{x:.2f}' for x in rps)} median "
            f"{statistics.median(rps):.2f}x{_verdict(statistics.median(rps), low, True)}; "
            f"CPU {' '.join(f'{x:.2f}' for x in cpu)} median "
            f"{statistics.median(cpu):.2f}x{_verdict(statistics.median(cpu), high, False)}"
        )
    return lines


def as_json(results: dict[str, list[dict[str, Run]]]) -> dict[str, Any]:
    return {
        case: [
            {n: {"rows": r.rows, "seconds": r.seconds, "cpu": r.cpu} for n, r in runs.items()}
            for runs in rounds
        ]
        for case, rounds in results.items()
    }


def pair_lines(runs: dict[str, Run], pairs: Pairs) -> list[str]:
    """One line per side, then ``ours/peer`` rows/s and CPU ratios for every pair that ran."""
    lines = [side(n, r) for n, r in runs.items()]
    for ours, peer in pairs:
        if ours in runs and peer in runs:
            rps, cpu = ratios(runs, ours)[peer]
            lines.append(f"{ours}/{peer} {rps:.2f}x rows/s {cpu:.2f}x CPU")
    return lines


def pair_summary(
    rounds: list[dict[str, Run]],
    pairs: Pairs,
    targets: Mapping[str, Target] | None = None,
) -> list[str]:
    """Each side's median rows/s and CPU, then every pair's ratios per round and their median;
    ``targets`` is keyed ``"ours/peer"``."""
    lines = medians(rounds)
    for ours, peer in pairs:
        target = (targets or {}).get(f"{ours}/{peer}", (None, None))
        per_round = [{peer: ratios(r, ours)[peer]} for r in rounds]
        lines += ratio_lines(ours, per_round, {peer: target})
    return lines


def parser(doc: str | None, records: int) -> argparse.ArgumentParser:
    """A side-by-side benchmark's command line: ``--records``, ``--size`` and ``--rounds``."""
    made = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    made.add_argument("--records", type=int, default=records)
    made.add_argument("--size", type=int, default=100)
    made.add_argument("--rounds", type=int, default=3, help="measured rounds (median)")
    return made


def print_round(what: str, rnd: int, load: float, runs: dict[str, Run], pairs: Pairs) -> None:
    """One round's sides and ratios; round 0 is the warm-up."""
    label = f"{what} round {rnd}" + (" (warm-up, not counted)" if not rnd else "")
    print(f"{label}, load {load:.1f}:\n    " + "\n    ".join(pair_lines(runs, pairs)), flush=True)
