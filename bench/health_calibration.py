"""How often Sanctum's health rules fire on real healthy runs, and how fast on broken ones.

    python bench/health_calibration.py                 # the whole corpus, about 80 minutes
    python bench/health_calibration.py --quick         # a subset, under 5 minutes
    python bench/health_calibration.py --keep DIR      # record into DIR (kept)
    python bench/health_calibration.py --reuse DIR     # judge the runs already in DIR
    python bench/health_calibration.py --thresholds my.toml --reuse DIR

The corpus (``calibration_corpus.py``, ``peer_runs.py``) is recorded by real trainers on
real environments: our trainer (CartPole, Acrobot, Pendulum with RL Zoo's settings,
fine-tuning with a reference KL, token-level PPO); Stable-Baselines3 PPO through the shipped
``SanctumCallback`` with SB3's defaults and with RL Zoo's tuned settings (CartPole,
Pendulum, MountainCarContinuous, Acrobot, LunarLander, InvertedPendulum,
InvertedDoublePendulum, MountainCar; on a single env too); CleanRL-structure scripts
(``examples/cleanrl_ppo.py``, ``examples/cleanrl_ppo_continuous.py``). Broken runs inject
the same faults into our trainer and into SB3, each from a known update (the onset).

A healthy run counts only if it reached the published score of its setting (each case
names its source); one that did not is listed as such and left out of the figures. The
cases are split: ``tune`` (the runs the rule table was fitted to) and ``heldout`` (other
environments, and every CleanRL run), reported apart. Every run is judged by
``sanctum check`` with the rule table in force (the defaults, or ``--thresholds``), exactly
as CI would judge it, and its verdict is asserted to be the one every view shows.

Figures, per rule, per trainer and overall:

- ``false_alarm_runs``: healthy runs the check fails;
- ``warn_runs``: healthy runs in which a rule reached warning;
- ``detection_rate``: broken runs the check fails from the onset on;
- ``detection_latency_updates``: median updates from the onset to the first critical.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lib import integration_runs
from lib.calibration_cli import calibration_parser
from lib.calibration_corpus import (
    DEFAULT_SEEDS,
    Case,
    broken_cases,
    healthy_cases,
    peer_broken_cases,
    peer_cases,
    record,
)
from lib.heldout import Scored, leave_one_trainer_out, print_leave_one_out, worst_statistic
from lib.peer_runs import final_return
from sanctum.cli import main as sanctum_main
from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.live.board_feed import RunFollower
from sanctum.reports.check import CheckResult, run_check
from telemetry.recorder import EVENTS_FILE

CONTINUOUS = (
    "Pendulum-v1",
    "MountainCarContinuous-v0",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
)


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
    score: float | None = None
    """The run's final return (mean of its last 20 episodes)."""
    contained: bool = False
    """A broken case whose fault did not harm it: a fault that leaves the reward as it was
    (:data:`CONTAINABLE`), and the run ended ``completed`` with a final return at least the
    median of its trainer's healthy runs on that environment (a learning rate x100 that our
    KL early stop contains, solving CartPole). It is listed with its verdict and counted
    neither way: not a detection to miss, nor a healthy run to fail."""

    @property
    def counted_broken(self) -> bool:
        return not self.case.healthy and not self.contained

    @property
    def reached(self) -> bool | None:
        """Whether a healthy run reached its setting's published score (None: no target)."""
        target = self.case.target
        if target is None:
            return None
        return self.score is not None and self.score >= target.score

    @property
    def counted_healthy(self) -> bool:
        """A healthy case that reached its score (or has none to reach)."""
        return self.case.healthy and self.reached is not False

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
    if result.status == "failed":  # the trainer stopped on an error, during this update
        critical["run_finished"] = result.updates
    failing = tuple(r.name for r in result.rows if not r.passed)
    score = final_return(events) if case.healthy or result.status == "completed" else None
    return Verdict(case, not result.passed, warned, critical, failing, score)


CONTAINABLE = frozenset({"lr_spike", "lr_start", "wide_clip", "output_scale", "entropy_collapse"})
"""Faults that change the training, not the reward: a run's final return still says whether
it was harmed (rewards x1e4, a reward hack or a length bonus change what a return is)."""


def with_contained(verdicts: list[Verdict]) -> list[Verdict]:
    """``verdicts`` with each broken run the fault did not harm marked ``contained``."""
    out = []
    for v in verdicts:
        kind = v.case.fault or v.case.name.rsplit("-", 1)[-1]
        peers = [
            p.score
            for p in verdicts
            if p.counted_healthy
            and p.score is not None
            and (p.case.trainer, p.case.env_id) == (v.case.trainer, v.case.env_id)
        ]
        harmless = (
            not v.case.healthy
            and kind in CONTAINABLE
            and v.score is not None
            and bool(peers)
            and v.score >= statistics.median(peers)
        )
        out.append(dataclasses.replace(v, contained=harmless) if harmless else v)
    return out


def verdicts_shown(events: Path, thresholds_file: Path | None) -> dict[str, str]:
    """The verdict text each view gives the run: ``check --json``, ``summary --json``,
    ``--once --json`` and the run table's row (what ``sanctum --all`` shows)."""
    extra = [] if thresholds_file is None else ["--thresholds", str(thresholds_file)]
    shown: dict[str, str] = {}
    for view, argv in (
        ("check", ["check", str(events), "--json", *extra]),
        ("summary", ["summary", str(events), "--json", *extra]),
        ("once", [str(events), "--once", "--json", *extra]),
    ):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            sanctum_main(argv)
        shown[view] = json.loads(out.getvalue())["verdict_text"]
    follower = RunFollower(events, events.parent.name, load_thresholds(thresholds_file))
    follower.read()
    shown["run table"] = follower.row(time.time()).verdict.text
    return shown


def record_all(cases: list[Case], run_dir: Path, jobs: int) -> None:
    started = time.monotonic()
    with ProcessPoolExecutor(jobs) as pool:
        futures = [(case, pool.submit(record_case, case, run_dir)) for case in cases]
        for case, future in futures:
            try:
                future.result()
            except Exception as exc:  # noqa: BLE001 - a run that cannot record is reported
                print(f"  FAILED to record {case.name}: {exc!r}", flush=True)
                continue
            print(f"  recorded {case.name:<26} {time.monotonic() - started:6.0f} s", flush=True)


def _tally(healthy: list[Verdict], broken: list[Verdict]) -> dict[str, Any]:
    latencies = [v.latency for v in broken if v.latency is not None]
    return {
        "healthy_runs": len(healthy),
        "false_alarm_runs": sum(v.failed for v in healthy),
        "warn_runs": sum(bool(v.warned) for v in healthy),
        "broken_runs": len(broken),
        "detected": sum(v.detected for v in broken),
        "detection_rate": round(sum(v.detected for v in broken) / len(broken), 3)
        if broken
        else None,
        "detection_latency_updates": statistics.median(latencies) if latencies else None,
        "detection_latency_max_updates": max(latencies) if latencies else None,
    }


def _group(verdicts: list[Verdict], key: Callable[[Case], str]) -> dict[str, dict[str, Any]]:
    healthy = [v for v in verdicts if v.counted_healthy]
    broken = [v for v in verdicts if v.counted_broken]
    names = sorted({key(v.case) for v in healthy + broken})
    return {
        name: _tally(
            [v for v in healthy if key(v.case) == name], [v for v in broken if key(v.case) == name]
        )
        for name in names
    }


def figures(verdicts: list[Verdict], rules: tuple[str, ...]) -> dict[str, Any]:
    healthy = [v for v in verdicts if v.counted_healthy]
    broken = [v for v in verdicts if v.counted_broken]
    heldout = [v for v in healthy if v.case.split == "heldout"]
    missed = [v for v in verdicts if v.case.healthy and not v.counted_healthy]
    per_rule = {
        name: {
            "false_alarm_runs": sum(name in v.failing_rows for v in healthy),
            "heldout_false_alarm_runs": sum(name in v.failing_rows for v in heldout),
            "warn_runs": sum(name in v.warned for v in healthy),
            "detections": sum(v.detected and name in v.critical for v in broken),
        }
        for name in rules
    }
    overall = _tally(healthy, broken)
    return {
        **overall,
        "healthy_trainers": sorted({v.case.trainer for v in healthy}),
        "healthy_envs": sorted({v.case.env_id for v in healthy}),
        "healthy_continuous_envs": sorted({v.case.env_id for v in healthy} & set(CONTINUOUS)),
        "broken_trainers": sorted({v.case.trainer for v in broken}),
        "heldout_healthy_runs": len(heldout),
        "heldout_false_alarm_runs": sum(v.failed for v in heldout),
        "heldout_warn_runs": sum(bool(v.warned) for v in heldout),
        "not_reaching_score": {v.case.name: v.score for v in missed},
        "contained": {
            v.case.name: {"score": v.score, "failed": v.failed} for v in verdicts if v.contained
        },
        "per_split": _group(verdicts, lambda c: c.split),
        "by_trainer": _group(verdicts, lambda c: c.trainer),
        "per_rule": per_rule,
        "per_run": {
            v.case.name: {
                "trainer": v.case.trainer,
                "env": v.case.env_id,
                "setting": v.case.setting,
                "split": v.case.split,
                "healthy": v.case.healthy,
                "score": None if v.score is None else round(v.score, 1),
                "target": None if v.case.target is None else v.case.target.score,
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
    head = (
        f"{'run':<26} {'trainer':<7} {'split':<7} {'kind':<8} {'score':>8} {'target':>7} "
        f"{'onset':>5} {'check':>5} {'1st crit':>8} {'lat':>4}"
    )
    print(f"\n{head}  failing / warned")
    for v in verdicts:
        c = v.case
        first = "-" if v.first_critical is None else str(v.first_critical)
        latency = "-" if v.latency is None else str(v.latency)
        onset = "-" if c.onset is None else str(c.onset)
        rows = ",".join(v.failing_rows) or "-"
        warned = ",".join(v.warned) or "-"
        kind = "healthy" if v.counted_healthy else "MISSED" if c.healthy else "broken"
        kind = "contain" if v.contained else kind
        score = "-" if v.score is None else f"{v.score:.1f}"  # a broken run's too
        target = "-" if c.target is None or not c.healthy else f"{c.target.score:g}"
        check = "FAIL" if v.failed else "pass"
        row = (
            f"{c.name:<26} {c.trainer:<7} {c.split:<7} {kind:<8} {score:>8} {target:>7} "
            f"{onset:>5} {check:>5} {first:>8} {latency:>4}"
        )
        print(f"{row}  {rows} / {warned}")


def print_summary(result: dict[str, Any]) -> None:
    print(
        f"\n{'rule':<20} {'false alarms':>12} {'held out':>8} {'warn runs':>9} {'detections':>10}"
    )
    for name, row in result["per_rule"].items():
        counts = (
            f"{row['false_alarm_runs']:>12} {row['heldout_false_alarm_runs']:>8} "
            f"{row['warn_runs']:>9} {row['detections']:>10}"
        )
        print(f"{name:<20} {counts}")
    for title, groups in (("split", result["per_split"]), ("trainer", result["by_trainer"])):
        print(
            f"\n{title:<10} {'healthy':>7} {'failed':>6} {'warned':>6} {'broken':>6} {'caught':>6}"
        )
        for name, t in groups.items():
            print(
                f"{name:<10} {t['healthy_runs']:>7} {t['false_alarm_runs']:>6} "
                f"{t['warn_runs']:>6} {t['broken_runs']:>6} {t['detected']:>6}"
            )
    for name, score in result["not_reaching_score"].items():
        print(f"left out of the healthy set: {name} did not reach its published score ({score})")
    for name, row in result["contained"].items():
        print(
            f"left out of the broken set: {name}'s fault did not harm it (final return "
            f"{row['score']:.1f}, at least its trainer's healthy median on that environment); "
            f"the check {'failed' if row['failed'] else 'passed'} it"
        )
    print(
        f"\nhealthy runs failed: {result['false_alarm_runs']}/{result['healthy_runs']} "
        f"(held out {result['heldout_false_alarm_runs']}/{result['heldout_healthy_runs']}), "
        f"warned: {result['warn_runs']}/{result['healthy_runs']}; broken runs detected: "
        f"{result['detection_rate']}, median latency {result['detection_latency_updates']} "
        f"updates (max {result['detection_latency_max_updates']})"
    )


QUICK = (
    "cartpole-s1",
    "pendulum-s1",
    "tokens-s1",
    "sb3-zoo-cartpole-s1",
    "lr_spike",
    "wide_clip",
    "value_scale",
    "length_bonus",
    "sb3-wide_clip",
    "sb3-entropy_collapse",
    "sb3-nan_obs",
    "plain-cartpole-s1",
    "torchrl-nan_obs",
    "skrl-cartpole-s1",
    "tianshou-nan_obs",
)
"""``--quick``: a few runs of each kind and trainer, under 5 minutes on 2 cores (a smoke
test of the rules and the bench; the figures to publish come from the whole corpus)."""


INTEGRATED_HEALTHY = {
    "plain": ("CartPole-v1", "Pendulum-v1"),
    "torchrl": ("Pendulum-v1",),
    "skrl": ("Pendulum-v1", "CartPole-v1"),
    "tianshou": ("CartPole-v1", "Pendulum-v1"),
}
"""The environments each integrated trainer's healthy runs train on."""
INTEGRATED_FAULTS = ("nan_obs", "value_scale", "lr_spike", "wide_clip", "lr_start", "output_scale")


def integrated_cases() -> list[Case]:
    """Runs of the trainers measured from outside (``integration_runs``), those whose extra
    this machine has: healthy on each environment, and each fault on the first."""
    cases = []
    for trainer, envs in INTEGRATED_HEALTHY.items():
        if not integration_runs.available(trainer):
            continue
        common = {"trainer": trainer, "setting": "example", "split": "heldout"}
        for env_id in envs:
            short = env_id.split("-")[0].lower()
            config = {"env_id": env_id, "seed": 1}
            cases.append(Case(f"{trainer}-{short}-s1", True, config, **common))
        for fault in INTEGRATED_FAULTS:
            onset = 0 if fault in ("wide_clip", "lr_start") else integration_runs.ONSET
            config = {"env_id": envs[0], "seed": 1}
            cases.append(Case(f"{trainer}-{fault}", False, config, onset, fault, **common))
    return cases


def record_case(case: Case, run_dir: Path) -> Path:
    """Record ``case`` with the trainer it names."""
    if case.trainer in integration_runs.TRAINERS:
        c = case.config
        return integration_runs.record(
            case.name, case.trainer, c["env_id"], c["seed"], run_dir, case.fault, case.onset
        )
    return record(case, run_dir)


def corpus(quick: bool, seeds: tuple[int, ...], stall_seconds: float) -> list[Case]:
    """Every case: healthy runs of each trainer, then broken ones."""
    cases = healthy_cases(seeds) + peer_cases()
    cases += broken_cases(stall_seconds) + peer_broken_cases(stall_seconds)
    cases += integrated_cases()
    return [c for c in cases if c.name in QUICK] if quick else cases


def _order(case: Case) -> tuple[bool, ...]:
    """The longest runs first (LunarLander, single-env ones, the stalls that wait), then the
    broken runs, so the slowest do not finish last."""
    return (
        case.env_id != "LunarLander-v3",
        case.setting != "zoo, 1 env",
        case.fault != "stall",
        case.healthy,
    )


def main() -> None:
    parser = calibration_parser(__doc__.split("\n\n")[0], "a few runs per trainer, no stall")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="record and judge only these cases"
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=list(DEFAULT_SEEDS),
        help="seeds of our trainer's healthy runs (default 1 2 3); others check the table on "
        "runs it was not tuned on",
    )
    args = parser.parse_args()
    thresholds = load_thresholds(args.thresholds)
    cases = corpus(args.quick, tuple(args.seeds), thresholds.stall_seconds + 15.0)
    if args.only:
        cases = [c for c in cases if c.name in args.only]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sanctum-calibration-") as tmp:
        run_dir = args.reuse or args.keep or Path(tmp)
        todo = [c for c in cases if not (run_dir / c.name / EVENTS_FILE).exists()]
        if args.reuse is None and todo:
            print(f"recording {len(todo)} runs into {run_dir} ({args.jobs} at a time)")
            record_all(sorted(todo, key=_order), run_dir, args.jobs)
        cases = [c for c in cases if (run_dir / c.name / EVENTS_FILE).exists()]
        verdicts = with_contained(
            [judge(c, run_dir / c.name / EVENTS_FILE, thresholds) for c in cases]
        )
        value_rule = thresholds.rule("value_loss")
        scored = [
            Scored(
                v.case.name,
                v.case.trainer,
                v.case.healthy,
                v.case.fault,
                worst_statistic(run_dir / v.case.name / EVENTS_FILE, value_rule),
            )
            for v in verdicts
            if value_rule is not None and (v.counted_healthy or v.counted_broken)
        ]
        disagree = {
            c.name: shown
            for c in cases
            if len(
                set(
                    (
                        shown := verdicts_shown(run_dir / c.name / EVENTS_FILE, args.thresholds)
                    ).values()
                )
            )
            != 1
        }
    print_table(verdicts)
    rule_rows = (*(r.metric for r in thresholds.rules), "nonfinite", "bug", "stall", "run_finished")
    result = figures(verdicts, rule_rows)
    result["seconds"] = round(time.monotonic() - started, 1)
    result["quick"] = args.quick
    result["seeds"] = args.seeds
    result["views_disagree"] = disagree
    result["value_loss_leave_one_trainer_out"] = leave_one_trainer_out(scored)
    print_summary(result)
    print_leave_one_out("value_loss", result["value_loss_leave_one_trainer_out"])
    print(
        f"one verdict: check, summary, --once and the run table agree on "
        f"{len(cases) - len(disagree)} of {len(cases)} runs"
        + "".join(f"\n  DISAGREE {name}: {shown}" for name, shown in disagree.items())
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
