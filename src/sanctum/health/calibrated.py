"""The calibrated rules: the default table's, and their forms for language-model runs.

Each rule's lines come from real healthy and broken runs (``bench/health_calibration.py``,
``bench/llm_calibration.py``; the README's health section has the figures). The table in
force is :class:`~sanctum.health.thresholds.Thresholds`, which fits these to a run.
"""

from __future__ import annotations

from typing import Final

from sanctum.formatting import KL_DECIMALS
from sanctum.health.rule import Rule

DEFAULT_RULES: Final = (
    Rule(
        "approx_kl",
        "KL",
        "above",
        5.0,
        20.0,
        decimals=KL_DECIMALS,
        statistic="median",
        window=5,
        per="clip_fraction",
    ),
    Rule(
        "clip_fraction",
        "Clip",
        "above",
        0.5,
        None,
        decimals=3,
        statistic="median",
        window=10,
    ),
    Rule("grad_norm", "Grad", "above", 100.0, 1000.0, statistic="jump", window=20, persist=2),
    Rule(
        "explained_variance",
        "EV",
        "below",
        -0.5,
        None,
        warmup_updates=10,
        decimals=3,
        statistic="median",
        window=10,
        persist=3,
        min_return_spread=0.05,
    ),
    Rule(
        "value_loss",
        "Value loss",
        "above",
        100.0,
        1000.0,
        decimals=3,
        statistic="high",
        window=5,
    ),
    Rule(
        "entropy_normalized",
        "Entropy",
        "below",
        0.1,
        0.01,
        decimals=3,
        statistic="jump",
        window=20,
        persist=2,
        min_baseline=0.05,
        floor=1e-5,
    ),
    Rule(
        "entropy",
        "Entropy shift",
        "above",
        2.0,
        4.0,
        decimals=3,
        statistic="shift",
        window=20,
        persist=2,
    ),
    Rule(
        "ref_kl",
        "RefKL",
        "above",
        0.6,
        1.0,
        decimals=KL_DECIMALS,
        persist=2,
        far=3.0,
        only_when_measured=True,
    ),
    Rule(
        "completion_truncated_frac",
        "Length",
        "above",
        0.25,
        0.5,
        decimals=2,
        persist=3,
        only_when_measured=True,
    ),
)
"""The rules as calibrated on real healthy and broken runs of three trainers (ours, SB3 with
its defaults and RL Zoo's tuned settings, CleanRL's structure) on eight environments
(``bench/health_calibration.py``; the README's health section has its figures, the tuned
and the held-out ones apart). Each healthy level that moves with a run's settings is judged
relative to the run: KL per clip fraction (a single-env zoo CartPole reaches 500 with single
updates at 10 nats, but in no healthy run does the policy move far while the clip bounds
nothing), pre-clip gradient norms and normalised entropy against their recent medians,
a Gaussian policy's entropy by its shift from its recent median. Clip fraction and
explained variance only warn: tuned healthy runs clip half their samples and keep critics
below 0 for hundreds of updates. The value loss is judged by how far it passes its own
record: a converged critic's loss falls near 0 and leaps back by orders of magnitude when an
episode fails (CartPole at 500), but no healthy run of the corpus took it past 6.5x the
largest before it (SB3, MountainCarContinuous), where rewards x1e4 take it thousands to
hundreds of millions of times past it at once. The reference KL and the length
rate are judged in their own units (fine-tuning and token-level runs)."""

LANGUAGE_MODEL_RULES: Final = (
    Rule(
        "completion_truncated_frac",
        "Length",
        "above",
        0.9,
        0.95,
        warmup_updates=10,
        decimals=2,
        statistic="median",
        window=5,
        persist=2,
        rise_with="reward_mean",
        rise=0.25,
        only_when_measured=True,
    ),
    Rule(
        "entropy",
        "Entropy fall",
        "below",
        0.3,
        None,
        decimals=3,
        statistic="start",
        window=10,
        persist=3,
    ),
    Rule(
        "reward_zero_std_frac",
        "Equal rewards",
        "above",
        0.5,
        0.8,
        decimals=2,
        statistic="median",
        window=10,
        persist=3,
        only_when_measured=True,
    ),
    Rule(
        "reward_mean",
        "Reward",
        "above",
        0.2,
        None,
        decimals=3,
        statistic="split",
        window=20,
        persist=3,
        only_when_measured=True,
        lost=True,
    ),
    Rule(
        "reward_std",
        "Reward std",
        "below",
        0.1,
        None,
        decimals=3,
        statistic="start",
        window=10,
        persist=5,
        only_when_measured=True,
    ),
)
"""The forms of the rules for language-model runs
(:meth:`~sanctum.health.thresholds.Thresholds.for_run`), by metric:
each replaces the table's rule of its metric, or joins the table. The truncated share: an
untrained model's first completions run to the cap (a warm-up), and responses running to
the cap are the padding hack only while the reward pays for them (critical needs both to
rise; the share alone warns). Entropy by its fall from the run's start (a gradual
collapse shows no jump). GRPO learns nothing from a group whose rewards are all equal:
most groups so for a sustained window is critical; the reward's spread collapsing
relative to its start warns, and so do reward components moving apart (one rising while
another falls: the policy trades one objective for another); a reward that vanishes once
measured (a NaN reward that TRL logs as none) is critical."""
