"""Sanctum: PPO training health from the event log, as a dashboard, a CI gate and a summary.

The core (state, thresholds, health, aggregator, check, summary) is plain Python on top of
``telemetry``; Textual is imported only by ``sanctum.tui.app`` and its widgets, which the CLI
loads lazily, so ``sanctum check`` and ``import sanctum`` stay light and never touch torch.

The names below load with the module that defines them, on first use
(:mod:`telemetry.lazy`): ``sanctum --help`` and ``sanctum check`` load only what they use.
What other programs use is here: :class:`HaltGate` (a :class:`telemetry.halting.Halter`
judging a run by the rules ``check`` applies, for a trainer to halt by),
:func:`watch_process` (a trainer command run with the dashboard attached; what became of
it comes back as a :class:`ProcessOutcome`) and :func:`check_verdict` (``sanctum check``'s
last line for a log, for a trainer to end with).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from telemetry.lazy import exports

if TYPE_CHECKING:  # the public names, listed once (telemetry.lazy reads their homes here)
    from sanctum.health.levels import HealthReport as HealthReport
    from sanctum.health.levels import Level as Level
    from sanctum.health.levels import health_report as health_report
    from sanctum.health.levels import level_of as level_of
    from sanctum.health.rule import Rule as Rule
    from sanctum.health.rule import ThresholdsError as ThresholdsError
    from sanctum.health.thresholds import DEFAULT_THRESHOLDS as DEFAULT_THRESHOLDS
    from sanctum.health.thresholds import Thresholds as Thresholds
    from sanctum.health.thresholds_toml import load_thresholds as load_thresholds
    from sanctum.live.halt import HaltGate as HaltGate
    from sanctum.live.trainer_process import ProcessOutcome as ProcessOutcome
    from sanctum.live.trainer_process import TrainerExit as TrainerExit
    from sanctum.model.aggregator import SanctumAggregator as SanctumAggregator
    from sanctum.model.snapshot import Connection as Connection
    from sanctum.model.snapshot import MetricSnapshot as MetricSnapshot
    from sanctum.model.snapshot import SanctumSnapshot as SanctumSnapshot
    from sanctum.reports.check_report import check_verdict as check_verdict
    from sanctum.tui.attached import watch_process as watch_process

__getattr__ = exports(__name__)
