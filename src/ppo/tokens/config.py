"""TokenPPOConfig: the settings of token-level RL (PPO with its value head, or GRPO),
validated like :class:`PPOConfig`.

A TOML file with ``algorithm = "token_ppo"`` or ``algorithm = "grpo"`` is read into this
config by ``ppo train``. Every field is checked on construction and every problem reported
at once; ``--set`` works as for PPOConfig. A step is a generated token: ``ref_kl_horizon``
counts tokens.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ppo.config import kl_settings as shared
from ppo.config import validators as valid
from ppo.config.limits import MAX_MINIBATCH_STEPS, MAX_SEED, MAX_TORCH_THREADS, MAX_UPDATE_EPOCHS
from ppo.config.settings import Settings, setting
from ppo.core.choices import DeviceName, LossAggMode, Precision
from ppo.core.kl import KLEstimator
from ppo.core.kl_control import KL_COEF_MAX, KL_COEF_MIN

Algorithm: TypeAlias = Literal["token_ppo", "grpo"]
ALGORITHMS: tuple[str, ...] = typing.get_args(Algorithm)

EXAMPLE_TASK = "ppo.tokens.digit_sum:make_task"


@dataclass(frozen=True)
class TokenPPOConfig(Settings):
    """Hyperparameters of one token-level PPO run (defaults: the shipped digit-sum task)."""

    # --- run ---
    algorithm: Algorithm = setting(  # noqa: RUF009
        "token_ppo",
        doc="Marks a TOML file as token-level: token_ppo (PPO with the model's value head) or "
        "grpo (group-relative advantages, no critic).",
    )
    task: str = setting(
        EXAMPLE_TASK,
        valid.text,
        "`module:function` returning a ppo.tokens.task.TokenTask (the model, its vocabulary, "
        "prompts with their true digits, and the digit reader).",
    )
    seed: int = setting(
        1,
        valid.integer(0, MAX_SEED),
        "Seed of the task's data, the model's initialisation, sampling and minibatch order.",
    )
    updates: int = setting(
        80, valid.integer(1), "PPO updates to run, each on a fresh batch of rollouts."
    )
    rollouts_per_update: int = setting(
        256,
        valid.integer(1),
        "Sequences generated per update (one rollout each): rollouts_per_update / group_size "
        "prompts, group_size completions each.",
    )
    group_size: int = setting(
        1,
        valid.integer(1),
        "Completions sampled per prompt (GRPO's G; grpo needs >= 2). A group's samples "
        "share a prompt and are compared with one another.",
    )
    torch_threads: int = setting(
        1, valid.integer(1, MAX_TORCH_THREADS), "PyTorch intra-op threads."
    )
    device: DeviceName = setting(  # noqa: RUF009
        "auto",
        doc="Where the policy, the reference, generation and the update run: auto (CUDA when "
        "torch sees a device, else the CPU), cpu or cuda. The task's reader and the reward "
        "stay on the CPU; run_started's config records the device used (device_used).",
    )
    precision: Precision = setting(  # noqa: RUF009
        "fp32",
        doc="Forwards in fp32, or under bf16 autocast (log-probabilities and losses in fp32).",
    )
    warm_start_steps: int = setting(
        550,
        valid.integer(0),
        "Supervised steps the example task trains first (the stand-in for a pretrained model).",
    )
    warm_start_lr: float = setting(3e-3, valid.positive, "Learning rate of the warm start.")

    # --- generation ---
    max_new_tokens: int = setting(
        10, valid.integer(1), "Generation stops here when the answer token has not come (reward 0)."
    )
    temperature: float = setting(
        1.0,
        valid.positive,
        "Logits are divided by this, identically when sampling and when updating.",
    )

    # --- reward ---
    partial_scale: float = setting(
        0.5,
        valid.number(0, 1),
        "Reward of a partly right answer: partial_scale * correct / applied.",
    )
    keep_prob: tuple[float, ...] = setting(
        (0.5, 0.5, 0.5, 0.5, 0.5),
        valid.probabilities,
        "Per answer digit: probability that a position whose true digit is 0 counts.",
    )
    length_penalty: float = setting(
        0.0,
        valid.number(),
        "reward_final = reward - length_penalty * num_generated (0: off; negative pays per token, "
        "which a policy games by never answering).",
    )

    # --- optimisation ---
    learning_rate: float = setting(3e-4, valid.positive, "Adam learning rate.")
    adam_eps: float = setting(1e-5, valid.positive, "Adam epsilon.")
    update_epochs: int = setting(
        4,
        valid.integer(1, MAX_UPDATE_EPOCHS),
        "Optimisation passes over each batch (PPO's epochs, GRPO's num_iterations).",
    )
    num_minibatches: int = setting(
        4, valid.integer(1, MAX_MINIBATCH_STEPS), "Minibatches of sequences per epoch."
    )
    max_grad_norm: float | None = setting(
        1.0,
        valid.positive_or_none,
        "Clip the global gradient norm to this (none: no clipping; the norm is still measured).",
    )
    norm_adv: bool = setting(
        True,
        doc="token_ppo: normalise advantages over each minibatch's generated tokens (grpo "
        "normalises within each group instead: scale_rewards).",
    )
    scale_rewards: bool = setting(
        True,
        doc="grpo: divide each group's centred rewards by the group's standard deviation (false: "
        "only centred, the Dr. GRPO variant).",
    )
    loss_agg_mode: LossAggMode = setting(  # noqa: RUF009
        "token-mean",
        doc="How the per-token policy and reference-KL losses become one (verl's loss_agg_mode): "
        "token-mean, seq-mean-token-sum or seq-mean-token-mean.",
    )
    adv_std_min: float = setting(
        1e-8, valid.positive, "Advantages are divided by max(std, adv_std_min)."
    )

    # --- loss ---
    clip_range: float = setting(0.2, valid.positive, "PPO ratio clip.")
    vf_coef: float = setting(
        0.5, valid.non_negative, "token_ppo: weight of the value loss mean (V_t - R)^2."
    )
    ent_coef: float = setting(0.0, valid.non_negative, "Entropy bonus coefficient.")
    kl_estimator: KLEstimator = shared.kl_estimator(  # noqa: RUF009
        reads="approx_kl and the early stop"
    )
    max_kl: float | None = shared.max_kl(when="before a minibatch whose")
    log_ratio_clamp: float = shared.log_ratio_clamp()

    # --- reference KL (a frozen copy of the warm-started model) ---
    ref_kl_loss_coef: float = shared.ref_kl_loss_coef(per="token")
    ref_kl_loss_estimator: KLEstimator = shared.ref_kl_loss_estimator(  # noqa: RUF009
        what="per-token reference KL in the loss"
    )
    ref_kl_target: float | None = shared.ref_kl_target(
        adapts="ref_kl_loss_coef", controller="Ziegler et al.'s controller"
    )
    ref_kl_horizon: int = shared.ref_kl_horizon(steps="Generated tokens")

    # --- the Hugging Face task (task = "hf", ppo.tokens.hf) ---
    hf_model: str | None = setting(
        None,
        valid.text_or_none,
        'task = "hf": the local folder of a Hugging Face causal LM (config, weights, '
        "tokenizer); nothing is downloaded.",
    )
    hf_z_tokens: tuple[str, ...] = setting(
        tuple(f"Z{d}" for d in range(10)),
        valid.texts,
        'task = "hf": the Z tokens (the reasoning) as the tokenizer spells them; the default '
        "reader reads the k-th as digit k.",
    )
    hf_answer_token: str = setting(
        "<ANSWER>", valid.text, 'task = "hf": the answer token, as the tokenizer spells it.'
    )
    hf_prompts: str = setting(
        "ppo.tokens.hf:digit_sum_prompts",
        valid.text,
        'task = "hf": `module:function` (tokenizer, config) -> a PromptSampler in the '
        "tokenizer's ids.",
    )
    hf_reader: str = setting(
        "ppo.tokens.hf:digit_heads",
        valid.text,
        'task = "hf": `module:function` (a ppo.tokens.hf.ReaderContext) -> the DigitReader '
        "(default: linear digit heads on the frozen model's hidden state at the answer).",
    )

    def problems(self) -> list[str]:
        """Every problem, in field order: each field's own, then the cross-field ones."""
        found = valid.field_problems(self)
        if found:
            return found
        coef = self.ref_kl_loss_coef
        if self.ref_kl_target is not None and not KL_COEF_MIN <= coef <= KL_COEF_MAX:
            return [
                f"ref_kl_target needs ref_kl_loss_coef in [{KL_COEF_MIN:g}, {KL_COEF_MAX:g}] "
                f"to adapt, got {coef!r}"
            ]
        if self.algorithm == "grpo" and self.group_size < 2:
            return [f"grpo needs group_size >= 2 completions per prompt, got {self.group_size!r}"]
        if self.rollouts_per_update % self.group_size:
            return [
                f"rollouts_per_update ({self.rollouts_per_update}) must be a multiple of "
                f"group_size ({self.group_size})"
            ]
        if self.num_minibatches > self.rollouts_per_update:
            return [
                f"num_minibatches must be <= rollouts_per_update ({self.rollouts_per_update}), "
                f"got {self.num_minibatches!r}"
            ]
        return []
