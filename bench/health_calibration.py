"""How often Sanctum's health rules fire on real healthy runs, and how fast on broken ones.

    python bench/health_calibration.py                 # the whole corpus, about 8 minutes
    python bench/health_calibration.py --quick         # a subset, under 3 minutes
    python bench/health_calibration.py --reuse DIR     # judge runs already recorded in DIR
    python bench/health_calibration.py --thresholds my.toml --reuse DIR
    python bench/health_calibration.py --seeds 5 6 7 8 # healthy runs on other seeds

The corpus (``calibration_corpus.py``) is recorded by the real trainers: 18 healthy runs
(CartPole-v1 and Acrobot-v1 on the default config at full length, Pendulum-v1 on RL Zoo's
tuned hyperparameters, 4 seeds each; four CartPole fine-tuning runs; the token-level
example on two seeds) and 9 broken runs, each broken in a known way from a known update
(the onset). Every run is then judged by ``sanctum check`` with the rule
table in force (the defaults, or ``--thresholds``), exactly as CI would judge it.

Figures, per rule and overall:

- ``false_alarm_runs``: healthy runs the check fails (any rule at critical, anything else
  that fails the gate);
- ``warn_runs``: healthy runs in which a rule reached warning;
- ``detection_rate``: broken runs the check fails from the onset on;
- ``detection_latency_updates``: median updates from the onset to the first critical.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration_corpus import DEFAULT_SEEDS, Case, broken_cases, healthy_cases, record
from sanctum.check import CheckResult, run_check
from sanctum.health import Level
from sanctum.thresholds import Thresholds, load_thresholds
from telemetry.recorder import EVENTS_FILE


@dataclass(frozen=True)
class Verdict:
    """One run as the check judged it."""

    case: Case
    failed: bool
    warned: tuple[str, ...]
    """Rows (rules) that reached warning."""
    critical: dict[str, int]
    """Row -> first update at critical, for rows that failed with an update to name."""
    failing_rows: tuple[str, ...]

    @property
    def first_critical(self) -> int | None:
        after = [
            u for u in self.critical.values() if self.case.onset is None or u >= self.case.onset
        ]
        return min(after, default=None)

    @property
    def detected(self) -> bool:
        return self.failed and self.first_critical is not None

    @property
    def latency(self) -> int | None:
        first, onset = self.first_critical, self.case.onset
        return None if first is None or onset is None else first - onset


def judge(case: Case, events: Path, thresholds: Thresholds) -> Verdict:
    result: CheckResult = run_check(events, thresholds, Level.CRITICAL)
    warned = tuple(r.name for r in result.rows if r.rule is not None and r.updates_warning)
    critical = {
        r.name: r.first_critical
        for r in result.rows
        if not r.passed and r.first_critical is not None
    }
    failing = tuple(r.name for r in result.rows if not r.passed)
    return Verdict(case, not result.passed, warned, critical, failing)


def record_all(cases: list[Case], run_dir: Path, jobs: int) -> None:
    started = time.monotonic()
    with ProcessPoolExecutor(jobs) as pool:
        futures = [(case, pool.submit(record, case, run_dir)) for case in cases]
        for case, future in futures:
            future.result()
            print(f"  recorded {case.name:<18} {time.monotonic() - started:6.0f} s", flush=True)


def figures(verdicts: list[Verdict], rules: tuple[str, ...]) -> dict[str, Any]:
    healthy = [v for v in verdicts if v.case.healthy]
    broken = [v for v in verdicts if not v.case.healthy]
    latencies = [v.latency for v in broken if v.latency is not None]
    per_rule = {
        name: {
            "false_alarm_runs": sum(name in v.failing_rows for v in healthy),
            "warn_runs": sum(name in v.warned for v in healthy),
            "detections": sum(v.detected and name in v.critical for v in broken),
        }
        for name in rules
    }
    return {
        "healthy_runs": len(healthy),
        "broken_runs": len(broken),
        "false_alarm_runs": sum(v.failed for v in healthy),
        "warn_runs": sum(bool(v.warned) for v in healthy),
        "detection_rate": round(sum(v.detected for v in broken) / len(broken), 3)
        if broken
        else None,
        "detection_latency_updates": statistics.median(latencies) if latencies else None,
        "detection_latency_max_updates": max(latencies) if latencies else None,
        "per_rule": per_rule,
        "per_run": {
            v.case.name: {
                "healthy": v.case.healthy,
                "onset": v.case.onset,
                "failed": v.failed,
                "failing": list(v.failing_rows),
                "warned": list(v.warned),
                "first_critical": v.first_critical,
                "latency": v.latency,
            }
            for v in verdicts
        },
    }


def print_table(verdicts: list[Verdict]) -> None:
    head = f"{'run':<18} {'kind':<8} {'onset':>5} {'check':>5} {'1st crit':>8} {'lat':>4}"
    print(f"\n{head}  failing / warned")
    for v in verdicts:
        first = "-" if v.first_critical is None else str(v.first_critical)
        latency = "-" if v.latency is None else str(v.latency)
        onset = "-" if v.case.onset is None else str(v.case.onset)
        rows = ",".join(v.failing_rows) or "-"
        warned = ",".join(v.warned) or "-"
        kind = "healthy" if v.case.healthy else "broken"
        check = "FAIL" if v.failed else "pass"
        row = f"{v.case.name:<18} {kind:<8} {onset:>5} {check:>5} {first:>8} {latency:>4}"
        print(f"{row}  {rows} / {warned}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one seed per env, no stall run")
    parser.add_argument("--reuse", type=Path, metavar="DIR", help="judge the runs in DIR")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="record the corpus into DIR")
    parser.add_argument("--thresholds", type=Path, metavar="FILE", help="rule table to judge with")
    parser.add_argument("--jobs", type=int, default=2, help="runs recorded at once (default 2)")
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=list(DEFAULT_SEEDS),
        help="seeds of the healthy runs (default 1 2 3 4); others check the table on runs "
        "it was not tuned on",
    )
    args = parser.parse_args()
    thresholds = load_thresholds(args.thresholds)
    cases = healthy_cases(args.quick, tuple(args.seeds))
    cases += broken_cases(args.quick, thresholds.stall_seconds + 15.0)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sanctum-calibration-") as tmp:
        run_dir = args.reuse or args.keep or Path(tmp)
        if args.reuse is None:
            print(f"recording {len(cases)} runs into {run_dir} ({args.jobs} at a time)")
            # the stall waits; start it first so it overlaps the rest
            record_all(sorted(cases, key=lambda c: c.fault != "stall"), run_dir, args.jobs)
        cases = [c for c in cases if (run_dir / c.name / EVENTS_FILE).exists()]
        verdicts = [judge(c, run_dir / c.name / EVENTS_FILE, thresholds) for c in cases]
    print_table(verdicts)
    rule_rows = (*(r.metric for r in thresholds.rules), "nonfinite", "bug", "stall")
    result = figures(verdicts, rule_rows)
    result["seconds"] = round(time.monotonic() - started, 1)
    result["quick"] = args.quick
    result["seeds"] = args.seeds
    print(f"\n{'rule':<20} {'false alarms':>12} {'warn runs':>9} {'detections':>10}")
    for name, row in result["per_rule"].items():
        counts = f"{row['false_alarm_runs']:>12} {row['warn_runs']:>9} {row['detections']:>10}"
        print(f"{name:<20} {counts}")
    print(
        f"\nhealthy runs failed: {result['false_alarm_runs']}/{result['healthy_runs']}, "
        f"warned: {result['warn_runs']}/{result['healthy_runs']}; broken runs detected: "
        f"{result['detection_rate']}, median latency {result['detection_latency_updates']} "
        f"updates (max {result['detection_latency_max_updates']})"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
