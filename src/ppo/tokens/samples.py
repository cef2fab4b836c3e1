"""The samples of a batch as records: one :class:`telemetry.rollouts.RolloutRecord` per
generated sequence, the lines of ``rollouts.jsonl`` (the file and telemetry's type keep
their documented names; here a token-level sample is a sample, not a rollout)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.generate import Generation
from ppo.tokens.reward import RewardTerms
from telemetry.rollouts import RolloutRecord


def build_samples(
    first_id: int,
    gen: Generation,
    digit_probs: Tensor,
    digit_true: Tensor,
    terms: RewardTerms,
    config: TokenPPOConfig,
) -> list[RolloutRecord]:
    """One record per sample (sequence) of ``gen``, numbered from ``first_id``."""
    valid = gen.valid.tolist()
    columns = {
        name: tensor.tolist()
        for name, tensor in {
            "prompt": gen.prompts,
            "tokens": gen.tokens,
            "logp": gen.logp,
            "entropy": gen.entropy,
            "values": gen.values,
            "probs": digit_probs,
            "pred": digit_probs.argmax(-1),
            "true": digit_true,
            "answered": gen.answered,
            "mask": terms.applied_mask,
            "applied": terms.applied_count,
            "correct": terms.correct_count,
            "full": terms.reward_full,
            "partial": terms.reward_partial,
            "final": terms.reward_final,
        }.items()
    }
    return [_sample(first_id + i, i, valid[i], columns, config) for i in range(len(valid))]


def _sample(
    sample_id: int, i: int, valid: list[bool], c: dict[str, list[Any]], config: TokenPPOConfig
) -> RolloutRecord:
    n = sum(valid)
    generated = c["tokens"][i][:n]
    return RolloutRecord(
        id=sample_id,
        input_ids=c["prompt"][i],
        generated_ids=generated,
        terminated_by="answer" if c["answered"][i] else "max_new_tokens",
        num_generated=n,
        digit_probs=c["probs"][i],
        digit_pred=c["pred"][i],
        digit_true=c["true"][i],
        reward_full=c["full"][i],
        partial_scale=config.partial_scale,
        keep_prob=list(config.keep_prob),
        applied_mask=c["mask"][i],
        applied_count=c["applied"][i],
        correct_count=c["correct"][i],
        reward_partial=c["partial"][i],
        length_penalty=config.length_penalty,
        reward_final=c["final"][i],
        actions=generated,
        logp_old=c["logp"][i][:n],
        entropy=c["entropy"][i][:n],
        values=c["values"][i][:n],
    )
