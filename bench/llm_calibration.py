"""How often Sanctum's health rules fire on healthy language-model RL runs, and whether they
catch the broken ones, by the rule that should.

    python bench/llm_calibration.py                    # the whole corpus, about 10 minutes
    python bench/llm_calibration.py --quick            # a subset, shorter runs, under 5
    python bench/llm_calibration.py --keep DIR         # record into DIR (kept)
    python bench/llm_calibration.py --reuse DIR        # judge the runs already in DIR
    python bench/llm_calibration.py --thresholds my.toml --reuse DIR

The corpus (``lib/llm_corpus.py``) is recorded on the CPU by real trainers: TRL's GRPO and
RLOO trainers on a tiny Llama built from a local config with a character tokenizer (no
download), recorded through the shipped ``SanctumCallback``; and our token-level PPO
(``examples/token_ppo.toml``). Healthy runs vary the seed, the learning rate,
``num_iterations``, ``beta`` (0: no reference), the algorithm, and one has a slow step.
Broken runs: the padding hack (reward = length, learning rate far too high) under GRPO and
RLOO, beta 0 with a high learning rate, entropy collapse, equal rewards in every group, a
NaN reward, an infinite learning rate, and our token-level PPO with a huge learning rate.
Each run is recorded in a subprocess of its own (one torch thread), deterministic by seed
as far as torch on the CPU is; ``cases.json`` in the corpus folder lists every case, and
for a broken one the rules that should fail it and why.

Every run is judged by ``sanctum check`` with the rule table in force (the defaults, or
``--thresholds``), in-process, exactly as CI would judge it. Figures:

- ``false_alarm_runs``: healthy runs the check fails; ``warn_runs``: those a rule warned on;
- ``detection_rate``: broken runs the check fails from the onset on;
- ``expected_rate``: broken runs failed by one of the rules their case expects;
- ``per_rule``: per check row, the healthy runs it failed and warned, and the broken runs
  it caught.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lib.calibration_cli import calibration_parser
from lib.llm_corpus import LEFT_OUT, LlmCase, cases, record
from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.reports.check import CheckResult, run_check
from telemetry.recorder import EVENTS_FILE

CASES_FILE = "cases.json"
RECORD_TIMEOUT = 600
"""Seconds one run may take to record before it is given up."""


@dataclass(frozen=True)
class Verdict:
    """One run as the check judged it."""

    case: LlmCase
    failed: bool
    failing: tuple[str, ...]
    """Labels of the failing rows."""
    warned: tuple[str, ...]
    """Labels of the rule rows that reached warning."""
    critical: dict[str, int]
    """Label -> first update at critical."""
    names: dict[str, str]
    """Row label -> row name (the metric, or ``nonfinite``...), for every row."""
    updates: int
    verdict: str

    @property
    def first_critical(self) -> int | None:
        after = [u for u in self.critical.values() if u >= self.case.onset]
        return min(after, default=None)

    @property
    def detected(self) -> bool:
        """Failed, from the onset on (or failed by a row with no update to name)."""
        if not self.failed:
            return False
        unplaced = [label for label in self.failing if label not in self.critical]
        return self.first_critical is not None or bool(unplaced)

    @property
    def by_expected(self) -> tuple[str, ...]:
        """The failing rows the case expects (by label or by name)."""
        expected = set(self.case.expected)
        return tuple(
            label for label in self.failing if label in expected or self.names[label] in expected
        )


def judge(case: LlmCase, events: Path, thresholds: Thresholds) -> Verdict:
    result: CheckResult = run_check(events, thresholds, Level.CRITICAL)
    rows = result.rows
    critical = {
        r.label: r.first_critical for r in rows if not r.passed and r.first_critical is not None
    }
    return Verdict(
        case,
        failed=not result.passed,
        failing=tuple(r.label for r in rows if not r.passed),
        warned=tuple(r.label for r in rows if r.rule is not None and r.updates_warning),
        critical=critical,
        names={r.label: r.name for r in rows},
        updates=result.updates,
        verdict=result.verdict.text,
    )


def write_cases(run_dir: Path, every: list[LlmCase], states: dict[str, str]) -> None:
    """``cases.json``: every case, with its state (``pending``, ``recorded``, ``failed to
    record``), rewritten whole each time (written aside, then renamed: readers never see
    half of it)."""
    listing = {
        "cases": [{**c.described(), "state": states.get(c.name, "pending")} for c in every],
        "left_out": LEFT_OUT,
        "note": "expected: the rules (labels, or the contract field a rule would judge) that "
        "should fail a broken run; onset: the 0-based update it is broken from",
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    aside = run_dir / f".{CASES_FILE}.tmp"
    aside.write_text(json.dumps(listing, indent=1) + "\n")
    aside.replace(run_dir / CASES_FILE)


def record_one(case: LlmCase, run_dir: Path, quick: bool) -> str:
    """Record ``case`` in a subprocess of its own; its state for ``cases.json``."""
    command = [sys.executable, __file__, "--record-one", case.name, "--keep", str(run_dir)]
    if quick:
        command.append("--quick")
    log = run_dir / f".{case.name}.log"
    try:
        with log.open("w") as out:
            done = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, timeout=RECORD_TIMEOUT
            )
    except subprocess.TimeoutExpired:
        return "failed to record: timed out"
    if not (run_dir / case.name / EVENTS_FILE).exists():
        return f"failed to record: exit {done.returncode}, see {log.name}"
    return "recorded" if done.returncode == 0 else f"recorded (trainer exited {done.returncode})"


def record_all(
    todo: list[LlmCase], every: list[LlmCase], run_dir: Path, quick: bool, jobs: int
) -> None:
    """Record ``todo``, ``jobs`` at a time, ``cases.json`` rewritten as each run ends."""
    started = time.monotonic()
    states = recorded_states(every, run_dir)
    with ThreadPoolExecutor(jobs) as pool:
        futures = [(case, pool.submit(record_one, case, run_dir, quick)) for case in todo]
        for case, future in futures:
            states[case.name] = future.result()
            write_cases(run_dir, every, states)
            took = time.monotonic() - started
            print(f"  {case.name:<24} {states[case.name]:<40} {took:5.0f} s", flush=True)


def recorded_states(every: list[LlmCase], run_dir: Path) -> dict[str, str]:
    """``recorded`` for each case whose run is in ``run_dir``."""
    return {c.name: "recorded" for c in every if (run_dir / c.name / EVENTS_FILE).exists()}


def _order(case: LlmCase) -> tuple[bool, bool]:
    """Token-level runs (the longest) first, then broken runs."""
    return (case.trainer != "tokens", case.healthy)


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def figures(verdicts: list[Verdict], rows: tuple[str, ...]) -> dict[str, Any]:
    healthy = [v for v in verdicts if v.case.healthy]
    broken = [v for v in verdicts if not v.case.healthy]
    latencies = [v.first_critical - v.case.onset for v in broken if v.first_critical is not None]
    per_rule = {
        label: {
            "healthy_failed": sum(label in v.failing for v in healthy),
            "healthy_failed_rate": _rate(sum(label in v.failing for v in healthy), len(healthy)),
            "healthy_warned": sum(label in v.warned for v in healthy),
            "detections": sum(v.detected and label in v.failing for v in broken),
            "expected_of": sum(
                label in v.case.expected or v.names.get(label) in v.case.expected for v in broken
            ),
        }
        for label in rows
    }
    detected = [v for v in broken if v.detected]
    by_expected = [v for v in detected if v.by_expected]
    return {
        "broken_runs": len(broken),
        "detected": len(detected),
        "detection_rate": _rate(len(detected), len(broken)),
        "expected_detected": len(by_expected),
        "expected_rate": _rate(len(by_expected), len(broken)),
        "healthy_runs": len(healthy),
        "false_alarm_runs": sum(v.failed for v in healthy),
        "warn_runs": sum(bool(v.warned) for v in healthy),
        "detection_latency_max_updates": max(latencies) if latencies else None,
        "per_split": {
            split: {
                "healthy_runs": sum(v.case.split == split for v in healthy),
                "false_alarm_runs": sum(v.failed for v in healthy if v.case.split == split),
                "warn_runs": sum(bool(v.warned) for v in healthy if v.case.split == split),
                "broken_runs": sum(v.case.split == split for v in broken),
                "detected": sum(v.detected for v in broken if v.case.split == split),
                "expected_detected": sum(
                    bool(v.detected and v.by_expected) for v in broken if v.case.split == split
                ),
            }
            for split in sorted({v.case.split for v in verdicts}, reverse=True)
        },
        "per_trainer": {
            trainer: {
                "healthy_runs": sum(v.case.trainer == trainer for v in healthy),
                "false_alarm_runs": sum(v.failed for v in healthy if v.case.trainer == trainer),
                "broken_runs": sum(v.case.trainer == trainer for v in broken),
                "detected": sum(v.detected for v in broken if v.case.trainer == trainer),
            }
            for trainer in sorted({v.case.trainer for v in verdicts})
        },
        "per_rule": per_rule,
        "per_run": {
            v.case.name: {
                "trainer": v.case.trainer,
                "split": v.case.split,
                "setting": v.case.setting,
                "healthy": v.case.healthy,
                "updates": v.updates,
                "onset": v.case.onset,
                "failed": v.failed,
                "failing": list(v.failing),
                "warned": list(v.warned),
                "first_critical": v.first_critical,
                "expected": list(v.case.expected),
                "by_expected": list(v.by_expected),
                "verdict": v.verdict,
            }
            for v in verdicts
        },
    }


def print_table(verdicts: list[Verdict]) -> None:
    print(
        f"\n{'run':<24} {'trainer':<7} {'split':<7} {'kind':<7} {'upd':>4} {'onset':>5} "
        f"{'check':>5} {'1st crit':>8}  failing / warned"
    )
    for v in verdicts:
        c = v.case
        first = "-" if v.first_critical is None else str(v.first_critical)
        onset = "-" if c.healthy else str(c.onset)
        kind = "healthy" if c.healthy else "broken"
        check = "FAIL" if v.failed else "pass"
        print(
            f"{c.name:<24} {c.trainer:<7} {c.split:<7} {kind:<7} {v.updates:>4} {onset:>5} "
            f"{check:>5} {first:>8}  "
            f"{','.join(v.failing) or '-'} / {','.join(v.warned) or '-'}"
        )
    print(f"\n{'broken run':<24} {'caught':>6}  {'by the expected rule':<22} expected")
    for v in verdicts:
        if not v.case.healthy:
            caught = "yes" if v.detected else "NO"
            print(
                f"{v.case.name:<24} {caught:>6}  {','.join(v.by_expected) or '-':<22} "
                f"{', '.join(v.case.expected)}"
            )


def print_summary(result: dict[str, Any]) -> None:
    healthy = result["healthy_runs"]
    print(
        f"\n{'rule':<16} {'healthy failed':>14} {'warned':>6} {'broken caught':>13} "
        f"{'expected in':>11}"
    )
    for label, row in result["per_rule"].items():
        share = f"{row['healthy_failed']}/{healthy}"
        print(
            f"{label:<16} {share:>14} {row['healthy_warned']:>6} {row['detections']:>13} "
            f"{row['expected_of']:>11}"
        )
    print(
        f"\nhealthy runs failed: {result['false_alarm_runs']}/{healthy}, warned: "
        f"{result['warn_runs']}/{healthy}; broken runs detected: {result['detected']}/"
        f"{result['broken_runs']} ({result['detection_rate']}), by an expected rule: "
        f"{result['expected_detected']}/{result['broken_runs']}"
    )
    for split, row in result["per_split"].items():
        print(
            f"  {split:<8} healthy failed {row['false_alarm_runs']}/{row['healthy_runs']} "
            f"(warned {row['warn_runs']}), broken detected {row['detected']}/"
            f"{row['broken_runs']}, by an expected rule {row['expected_detected']}"
        )


def rows_of(thresholds: Thresholds, verdicts: list[Verdict]) -> tuple[str, ...]:
    """The per-rule table's rows: each rule's label, then each other check that failed a run."""
    labels = [r.label for r in thresholds.rules]
    for v in verdicts:
        for label in v.failing:
            if label not in labels:
                labels.append(label)
    return tuple(labels)


def main() -> None:
    parser = calibration_parser(__doc__.split("\n\n")[0], "a few shorter runs of each kind")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="record and judge only these")
    parser.add_argument("--record-one", metavar="NAME", help=argparse.SUPPRESS)
    args = parser.parse_args()
    every = cases(args.quick)
    if args.record_one is not None:  # the subprocess that records one run
        (case,) = [c for c in every if c.name == args.record_one]
        record(case, args.keep, args.quick)
        return
    thresholds = load_thresholds(args.thresholds)
    chosen = [c for c in every if not args.only or c.name in args.only]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sanctum-llm-calibration-") as tmp:
        run_dir = (args.reuse or args.keep or Path(tmp)).resolve()
        todo = [c for c in chosen if not (run_dir / c.name / EVENTS_FILE).exists()]
        if args.reuse is None:
            write_cases(run_dir, every, recorded_states(every, run_dir))
        if args.reuse is None and todo:
            print(f"recording {len(todo)} runs into {run_dir} ({args.jobs} at a time)")
            record_all(sorted(todo, key=_order), every, run_dir, args.quick, args.jobs)
        chosen = [c for c in chosen if (run_dir / c.name / EVENTS_FILE).exists()]
        verdicts = [judge(c, run_dir / c.name / EVENTS_FILE, thresholds) for c in chosen]
    print_table(verdicts)
    result = figures(verdicts, rows_of(thresholds, verdicts))
    result["seconds"] = round(time.monotonic() - started, 1)
    result["quick"] = args.quick
    result["corpus"] = str(run_dir) if args.reuse or args.keep else None
    print_summary(result)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
