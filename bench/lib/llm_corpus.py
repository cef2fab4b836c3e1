"""The corpus behind ``llm_calibration.py``: language-model RL runs, healthy and broken.

Two trainers, both real and on the CPU:

- ``trl``: TRL's GRPOTrainer (or RLOOTrainer) on the tiny Llama of ``trl_runs`` (built from a
  config, a character tokenizer, no download), recorded through the shipped
  ``telemetry.integrations.trl.SanctumCallback`` exactly as a TRL user records a run;
- ``tokens``: our token-level PPO (or GRPO), ``ppo train --config examples/token_ppo.toml``
  (``token_grpo.toml``) with fewer updates.

``split``: ``tune`` runs were in view while the language-model rules were written and fitted;
``heldout`` runs (other seeds, and settings no tuned run had: Dr. GRPO's loss, 8 completions
a group, longer completions, our GRPO) were added once the rules were fixed, and no rule or
threshold was changed for them. The figures are published for both.

Each broken case names the rules that should fail it (``expected``: the labels ``sanctum
check`` shows, or for a rule still to come the contract field it would judge) and says why
in one sentence (``why``); ``onset`` is the update from which it is broken. The cases are
data; :func:`record` records one, in the process that calls it (the bench runs each in a
subprocess of its own, so a crash or a NaN in one run does not stop the others).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from lib import EXAMPLES

TRL_STEPS = 50
"""Optimizer steps (one log line each) of a TRL run; ``--quick`` runs :data:`QUICK_STEPS`."""
QUICK_STEPS = 20
TOKEN_UPDATES = 30
"""Updates of a token-level run after its warm start; ``--quick``: :data:`QUICK_UPDATES`."""
QUICK_UPDATES = 15
HEALTHY_LR = 1e-3
"""A learning rate at which the tiny model learns the vowel reward and stays sane."""


@dataclass(frozen=True)
class LlmCase:
    """One run of the corpus."""

    name: str
    healthy: bool
    trainer: str
    """``trl`` (through SanctumCallback) or ``tokens`` (``ppo train``, token-level PPO)."""
    settings: dict[str, Any]
    """``trl``: changes to ``trl_runs.TrlRun``; ``tokens``: ``--set`` overrides."""
    setting: str
    """The case in a few words, for the table."""
    expected: tuple[str, ...] = ()
    """Broken cases: the rules that should fail the run (labels, or contract fields)."""
    why: str = ""
    """Broken cases: why those rules, in one sentence."""
    onset: int = 0
    """Broken cases: the 0-based update from which the run is broken."""
    quick: bool = False
    """Part of ``--quick``."""
    seed: int = 1
    split: str = "tune"
    """``tune``: the rules were written and fitted with this run in view; ``heldout``: the
    run was added after the rules were fixed and nothing was changed for it."""
    config: str = "token_ppo.toml"
    """``tokens``: the example config the run starts from."""
    extra: dict[str, Any] = field(default_factory=dict)

    def described(self) -> dict[str, Any]:
        """The case as ``cases.json`` lists it."""
        fields = asdict(self)
        fields["expected"] = list(self.expected)
        return fields


def _trl(name: str, seed: int, setting: str, quick: bool = False, **changes: Any) -> LlmCase:
    settings = {"learning_rate": HEALTHY_LR, **changes}
    return LlmCase(name, True, "trl", settings, setting, quick=quick, seed=seed)


def _tokens(name: str, seed: int, quick: bool = False) -> LlmCase:
    return LlmCase(name, True, "tokens", {}, "token-level PPO, example", quick=quick, seed=seed)


def _held(case: LlmCase) -> LlmCase:
    return replace(case, split="heldout")


def _grpo_tokens(name: str, seed: int) -> LlmCase:
    setting = "token-level GRPO, example"
    config = "token_grpo.toml"
    return LlmCase(name, True, "tokens", {}, setting, seed=seed, split="heldout", config=config)


def heldout_healthy_cases() -> list[LlmCase]:
    """Healthy runs added once the rules were fixed (``split = heldout``): TRL settings the
    rules never saw (Dr. GRPO's loss, 8 completions per prompt, longer completions, another
    learning rate) and our token-level GRPO, on seeds no tuned run used."""
    return [
        _held(_trl("grpo-drgrpo-s7", 7, "GRPO loss dr_grpo", extra={"loss_type": "dr_grpo"})),
        _held(_trl("grpo-g8-s8", 8, "GRPO 8 per group, batch 16", num_generations=8, batch=16)),
        _held(_trl("grpo-len24-s9", 9, "GRPO completions to 24", max_completion_length=24)),
        _held(_trl("grpo-lr3e-4-s10", 10, "GRPO lr 3e-4", learning_rate=3e-4)),
        _grpo_tokens("tokens-grpo-s4", 4),
        _grpo_tokens("tokens-grpo-s5", 5),
    ]


def healthy_cases() -> list[LlmCase]:
    """GRPO by seed, with 2 iterations, without a reference (beta 0), with another learning
    rate, RLOO, a slow step; our token-level PPO by seed."""
    return [
        _trl("grpo-s1", 1, "GRPO lr 1e-3 beta 0.04", quick=True),
        _trl("grpo-s2", 2, "GRPO lr 1e-3 beta 0.04"),
        _trl("grpo-s3", 3, "GRPO lr 1e-3 beta 0.04"),
        _trl("grpo-lr1e-4-s4", 4, "GRPO lr 1e-4", learning_rate=1e-4),
        _trl("grpo-iter2-s1", 1, "GRPO num_iterations 2", quick=True, num_iterations=2),
        _trl("grpo-iter2-s2", 2, "GRPO num_iterations 2", num_iterations=2),
        _trl("grpo-beta0-s1", 1, "GRPO beta 0", beta=0.0),
        _trl("grpo-beta0-s2", 2, "GRPO beta 0 num_iterations 2", beta=0.0, num_iterations=2),
        _trl("rloo-s1", 1, "RLOO lr 1e-3", algorithm="rloo"),
        _trl("grpo-slow-s1", 1, "GRPO, one 8 s step", slow_at=5, slow_seconds=8.0),
        _tokens("tokens-s1", 1, quick=True),
        _tokens("tokens-s2", 2),
        _tokens("tokens-s3", 3),
    ]


LENGTH_HACK = ("Length", "completion_truncated_frac", "RefKL", "ref_kl")
ENTROPY = ("Entropy", "entropy_normalized", "Entropy shift", "Entropy fall", "entropy")
NON_FINITE = ("non-finite", "nonfinite")
INF = float("inf")
BROKEN: tuple[tuple[str, dict[str, Any], str, tuple[str, ...], int, bool], ...] = (
    # name, settings (TRL's learning rate HEALTHY_LR unless given), in a few words,
    # expected rules, onset, in --quick
    (
        "grpo-padding-hack",
        {"learning_rate": 5e-2, "hack": True},
        "GRPO lr 5e-2, reward = length",
        LENGTH_HACK,
        0,
        True,
    ),
    (
        "grpo-beta0-high-lr",
        {"learning_rate": 5e-2, "beta": 0.0},
        "GRPO beta 0, lr 5e-2",
        (*ENTROPY, "Grad", "grad_norm"),
        0,
        False,
    ),
    (
        "grpo-entropy-collapse",
        {"learning_rate": 2e-1, "num_iterations": 2},
        "GRPO lr 2e-1, 2 iterations",
        (*ENTROPY, "RefKL", "ref_kl"),
        0,
        False,
    ),
    (
        "grpo-equal-rewards",
        {"constant_reward": 1.0},
        "GRPO, constant reward",
        ("reward_std", "reward_zero_std_frac"),
        0,
        True,
    ),
    (
        "grpo-nan-reward",
        {"nan_at": 5},
        "GRPO, reward NaN from step 5",
        (*NON_FINITE, "reward_mean"),
        5,
        True,
    ),
    (
        "grpo-inf-reward",
        {"nan_at": 5, "bad_reward": INF},
        "GRPO, reward inf from step 5",
        NON_FINITE,
        5,
        True,
    ),
    ("grpo-lr-inf", {"learning_rate": INF}, "GRPO lr inf", NON_FINITE, 0, False),
    (
        "rloo-padding-hack",
        {"learning_rate": 5e-2, "hack": True, "algorithm": "rloo"},
        "RLOO lr 5e-2, reward = length",
        LENGTH_HACK,
        0,
        False,
    ),
    (
        "tokens-huge-lr",
        {"learning_rate": 0.3},
        "token-level PPO lr 0.3",
        ("KL", "approx_kl", "Clip", "clip_fraction", "Entropy", "RefKL", "Grad"),
        0,
        True,
    ),
)
"""The broken cases; TRL's run on seed 0, ours on seed 1."""
WHY = {
    "grpo-padding-hack": "The reward pays for length and the learning rate is 50x too high, so "
    "the policy learns to run every completion to the cap while drifting far from its "
    "reference.",
    "grpo-beta0-high-lr": "Nothing holds the policy near its reference (beta 0) and the "
    "learning rate is 50x too high, so it collapses onto a few tokens: entropy falls, "
    "gradients jump.",
    "grpo-entropy-collapse": "A learning rate 200x too high, applied twice per batch, drives "
    "the next-token distribution to a point mass within a few steps: the entropy collapses "
    "and the policy leaves its reference (beta 0.04 cannot hold it).",
    "grpo-equal-rewards": "Every completion earns the same reward, so every group's rewards "
    "are equal, every advantage is 0 and GRPO learns nothing: reward_std 0, all groups "
    "zero-std.",
    "grpo-nan-reward": "From its 6th call the reward function returns NaN, which TRL reads as "
    "no reward (0 for every completion) and logs as None, so the recorded reward vanishes and "
    "training goes on learning nothing: a reward gone non-finite must fail the run.",
    "grpo-inf-reward": "From its 6th call the reward model overflows to inf: the reward is inf, "
    "each advantage inf - inf = NaN, and the loss, the gradients and the weights follow.",
    "grpo-lr-inf": "An infinite learning rate makes the first update's weights non-finite; "
    "every figure after it is NaN.",
    "rloo-padding-hack": "RLOO's form of the padding hack: length pays, the learning rate is "
    "far too high, completions run to the cap and the policy leaves its reference.",
    "tokens-huge-lr": "Our token-level PPO with a learning rate 1000x its example's: each "
    "update moves the policy far past the trust region (KL, clip) and off its reference.",
}
"""Why each broken case's expected rules should fail it."""


def _broken(
    name: str,
    settings: dict[str, Any],
    described: tuple[str, tuple[str, ...], str, int],
    quick: bool = False,
    split: str = "tune",
) -> LlmCase:
    """A broken case: ours (token-level, seed 1 when tuned, 6 held out, PPO or for a held-out
    run GRPO) or TRL's (seed 0 or 11, at :data:`HEALTHY_LR` unless ``settings`` say);
    ``described``: in a few words, the expected rules, why, the onset."""
    setting, expected, why, onset = described
    held = split == "heldout"
    if name.startswith("tokens-"):
        config = "token_grpo.toml" if held else "token_ppo.toml"
        seed = 6 if held else 1
        return LlmCase(
            name,
            False,
            "tokens",
            settings,
            setting,
            expected,
            why,
            onset,
            quick,
            seed,
            split=split,
            config=config,
        )
    changes = {"learning_rate": HEALTHY_LR, **settings}
    return LlmCase(
        name,
        False,
        "trl",
        changes,
        setting,
        expected,
        why,
        onset,
        quick,
        11 if held else 0,
        split=split,
    )


def broken_cases() -> list[LlmCase]:
    """Each failure language-model RL runs into, with the rules that should see it."""
    return [
        _broken(name, settings, (setting, expected, WHY[name], onset), quick)
        for name, settings, setting, expected, onset, quick in BROKEN
    ]


HELDOUT_BROKEN: tuple[tuple[str, dict[str, Any], str, tuple[str, ...], int, str], ...] = (
    # name, settings, in a few words, expected rules, onset, why; recorded on seed 11 (TRL)
    # or 6 (ours), settings no tuned run had
    (
        "grpo-drgrpo-padding-hack",
        {"learning_rate": 5e-2, "hack": True, "extra": {"loss_type": "dr_grpo"}},
        "Dr. GRPO lr 5e-2, reward = length",
        LENGTH_HACK,
        0,
        "The padding hack under Dr. GRPO's loss (no length normalisation): length pays and "
        "the learning rate is 50x too high.",
    ),
    (
        "grpo-g8-equal-rewards",
        {"constant_reward": 0.0, "num_generations": 8, "batch": 16},
        "GRPO 8 per group, reward always 0",
        ("reward_std", "reward_zero_std_frac"),
        0,
        "A reward that pays nothing for anything: every group of 8 is equal and GRPO learns "
        "nothing.",
    ),
    (
        "grpo-len24-nan-reward",
        {"nan_at": 8, "max_completion_length": 24},
        "GRPO completions to 24, reward NaN from step 8",
        (*NON_FINITE, "reward_mean"),
        8,
        "The reward function returns NaN from its 9th call on.",
    ),
    (
        "grpo-beta0-lr1e-1",
        {"learning_rate": 1e-1, "beta": 0.0},
        "GRPO beta 0, lr 1e-1",
        (*ENTROPY, "Grad", "grad_norm"),
        0,
        "Nothing holds the policy near its reference and the learning rate is 100x too high: "
        "it collapses onto a few tokens.",
    ),
    (
        "tokens-grpo-huge-lr",
        {"learning_rate": 0.3},
        "token-level GRPO lr 0.3",
        ("Clip", "clip_fraction", "Entropy", "RefKL", "Grad", "KL", "approx_kl"),
        0,
        "Our token-level GRPO with a learning rate 1000x its example's: each update leaves the "
        "trust region and the reference.",
    ),
)
"""Broken runs added once the rules were fixed (``split = heldout``)."""


def heldout_broken_cases() -> list[LlmCase]:
    """The broken runs of the held-out split."""
    return [
        _broken(name, settings, (setting, expected, why, onset), split="heldout")
        for name, settings, setting, expected, onset, why in HELDOUT_BROKEN
    ]


LEFT_OUT = {
    name: "GRPO lr 5e-3 (reward 0.23 -> 0.7): the tiny model starts near uniform over its 34 "
    "tokens, so learning the vowel reward moves it about 1 nat per token from its reference "
    "(ln 34 minus the entropy it ends at), a drift no fine-tune of a competent reference "
    "needs; neither healthy nor broken, so not counted"
    for name in ("grpo-lr5e-3-s1", "grpo-lr5e-3-s2")
}
"""Runs in the corpus folder that the figures leave out, and why (``cases.json`` says so)."""


def cases(quick: bool) -> list[LlmCase]:
    every = healthy_cases() + broken_cases() + heldout_healthy_cases() + heldout_broken_cases()
    return [c for c in every if c.quick] if quick else every


def record_trl(case: LlmCase, run_dir: Path, quick: bool) -> None:
    """Train ``case`` with TRL, recorded by SanctumCallback into ``run_dir/<name>``."""
    from lib.trl_runs import TrlRun, trainer  # torch and TRL: only in the recording process
    from telemetry.integrations.trl import SanctumCallback

    steps = QUICK_STEPS if quick else TRL_STEPS
    run = TrlRun(name=case.name, steps=steps, seed=case.seed, **case.settings)
    callback = SanctumCallback(run_dir=run_dir, run_id=case.name)
    with tempfile.TemporaryDirectory(prefix="llm-corpus-") as work, callback:
        trainer(run, callbacks=[callback], output_dir=work).train()


def token_command(case: LlmCase, run_dir: Path, quick: bool) -> list[str]:
    """``ppo train`` for a token-level case, on one torch thread."""
    updates = QUICK_UPDATES if quick else TOKEN_UPDATES
    sets = {"updates": updates, "torch_threads": 1, **case.settings}
    config = str(EXAMPLES / case.config)
    command = [sys.executable, "-m", "ppo", "train", "--headless", "--config", config]
    command += ["--seed", str(case.seed), "--run-dir", str(run_dir), "--run-id", case.name]
    for key, value in sets.items():
        command += ["--set", f"{key}={value}"]
    return command


def record(case: LlmCase, run_dir: Path, quick: bool) -> None:
    """Record ``case`` into ``run_dir/<name>/events.jsonl`` in this process (TRL) or in
    ``ppo train`` (token-level)."""
    if case.trainer == "tokens":
        subprocess.run(token_command(case, run_dir, quick), check=True)
    else:
        record_trl(case, run_dir, quick)
