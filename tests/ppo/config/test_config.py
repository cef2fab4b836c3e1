"""PPOConfig: defaults, validation (C-01), TOML loading and --set overrides."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Literal

import pytest

from ppo.config import ConfigError, PPOConfig
from ppo.config import validators as valid
from ppo.config.limits import MAX_SEED
from ppo.config.settings import Settings, setting
from ppo.core.kl import ESTIMATORS
from ppo.tokens.config import TokenPPOConfig
from telemetry.files import InputFileError

KL_FIELDS_NONNEG = ["kl_penalty_coefficient"]
KL_FIELDS_POSITIVE_OPTIONAL = ["max_kl", "kl_target"]


def errors_of(**kwargs: object) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as info:
        PPOConfig(**kwargs)  # type: ignore[arg-type]
    return info.value.errors


def test_defaults_are_cleanrl_cartpole_baseline() -> None:
    c = PPOConfig()
    assert (c.num_envs, c.num_steps, c.num_minibatches, c.update_epochs) == (4, 128, 4, 4)
    assert (c.learning_rate, c.anneal_lr, c.gamma, c.gae_lambda) == (2.5e-4, True, 0.99, 0.95)
    assert (c.clip_range, c.ent_coef, c.vf_coef, c.max_grad_norm) == (0.2, 0.01, 0.5, 0.5)
    assert c.norm_adv and c.kl_estimator == "k3" and c.max_kl is None
    assert c.kl_penalty_coefficient == 0.0 and c.clip_ratio_c is None
    assert c.batch_size == 512


@pytest.mark.parametrize("value", [-0.5, math.nan, math.inf, -math.inf])
def test_c01_kl_penalty_coefficient_invalid_names_field_and_value(value: float) -> None:
    assert errors_of(kl_penalty_coefficient=value) == (
        f"kl_penalty_coefficient must be finite and >= 0, got {value!r}",
    )


@pytest.mark.parametrize("field", KL_FIELDS_POSITIVE_OPTIONAL)
@pytest.mark.parametrize("value", [-0.01, 0.0, math.nan, math.inf])
def test_c01_optional_kl_thresholds_invalid(field: str, value: float) -> None:
    extra = {"kl_penalty_coefficient": 0.1} if field == "kl_target" else {}
    assert errors_of(**{field: value, **extra}) == (
        f"{field} must be finite and > 0 (or none), got {value!r}",
    )


@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf])
def test_c01_log_ratio_clamp_invalid(value: float) -> None:
    assert errors_of(log_ratio_clamp=value) == (
        f"log_ratio_clamp must be finite and > 0, got {value!r}",
    )


def test_c01_kl_estimator_and_scope_invalid() -> None:
    assert errors_of(kl_estimator="k4", early_stop_scope="update") == (
        "kl_estimator must be one of k1, k2, k3, low_var_kl, abs (each also with '+': "
        "straight-through), got 'k4'",
        "early_stop_scope must be one of minibatch, epoch, got 'update'",
    )


def test_c01_every_error_reported_at_once_in_field_order() -> None:
    with pytest.raises(ConfigError) as info:
        PPOConfig(max_kl=math.nan, gamma=1.5, kl_penalty_coefficient=-1.0, clip_ratio_c=1.0)
    assert str(info.value) == (  # one line, every problem in field order
        "invalid PPO config (4 errors): "
        "gamma must be finite and in [0, 1], got 1.5; "
        "clip_ratio_c must be finite and > 1 (or none), got 1.0; "
        "kl_penalty_coefficient must be finite and >= 0, got -1.0; "
        "max_kl must be finite and > 0 (or none), got nan"
    )


def test_c01_error_text_is_deterministic() -> None:
    texts = set()
    for _ in range(3):
        with pytest.raises(ConfigError) as info:
            PPOConfig(kl_penalty_coefficient=math.nan, max_kl=-1.0)
        texts.add(str(info.value))
    assert len(texts) == 1


def test_kl_target_needs_a_penalty_within_the_adaptive_range() -> None:
    assert errors_of(kl_target=0.01) == (
        "kl_target needs kl_penalty_coefficient in [1e-06, 1e+06] to adapt from, got 0.0",
    )
    assert errors_of(kl_target=0.01, kl_penalty_coefficient=2e6) == (
        "kl_target needs kl_penalty_coefficient in [1e-06, 1e+06] to adapt from, got 2000000.0",
    )
    assert PPOConfig(kl_target=0.01, kl_penalty_coefficient=0.2).kl_target == 0.01


def test_minibatches_cannot_exceed_batch() -> None:
    assert errors_of(num_envs=2, num_steps=2, num_minibatches=5) == (
        "num_minibatches must be <= num_envs * num_steps (4), got 5",
    )


def test_wrong_types_are_named() -> None:
    assert errors_of(total_steps=1.5, norm_adv="yes", hidden_sizes=(64, 0)) == (
        "total_steps must be an integer >= 1, got 1.5",
        "norm_adv must be true or false, got 'yes'",
        "hidden_sizes must be a list of 1 to 64 integers in [1, 1000000], got (64, 0)",
    )


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        (["torch_threads=1000000"], "torch_threads must be an integer in [1, 1024], got 1000000"),
        (
            ["hidden_sizes=[" + ",".join(["4"] * 65) + "]"],
            "hidden_sizes must be a list of 1 to 64 integers in [1, 1000000], got (4, 4,",
        ),
        (["hidden_sizes=[10000000]"], "hidden_sizes must be a list of 1 to 64 integers"),
        (
            ["update_epochs=1000000000"],
            "update_epochs must be an integer in [1, 10000], got 1000000000",
        ),
        (
            ["update_epochs=10000", "num_minibatches=11"],
            "update_epochs x num_minibatches must be <= 100000 (minibatch steps per update), "
            "got 10000 x 11",
        ),
    ],
)
def test_settings_that_would_exhaust_the_machine_are_bounded(
    settings: list[str], says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        PPOConfig().with_overrides(settings)
    assert len(refused.value.errors) == 1 and refused.value.errors[0].startswith(says)


@pytest.mark.parametrize("config", [PPOConfig, TokenPPOConfig])
def test_every_field_has_a_validator_a_one_line_doc_and_what_it_allows(
    config: type[Settings],
) -> None:
    """The metadata ``ppo config`` lists: a doc on one line (it is wrapped there), and the
    allowed values of every bounded field with the bound its validator enforces."""
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        validator, doc = f.metadata["validator"], f.metadata["doc"]
        assert isinstance(validator, valid.Validator), f.name
        assert doc.strip() == doc and doc.endswith(".") and "\n" not in doc, f.name
        assert validator.allowed, f.name
    fields = {f.name: f.metadata["validator"] for f in dataclasses.fields(config)}  # type: ignore[arg-type]
    assert fields["seed"].allowed == f"[0, {MAX_SEED}]"
    assert fields["seed"](MAX_SEED + 1) is not None and fields["seed"](MAX_SEED) is None
    assert fields["max_kl"].allowed == "> 0 or none"


def test_a_field_declared_without_a_validator_takes_the_one_its_annotation_implies() -> None:
    @dataclasses.dataclass(frozen=True)
    class Derived(Settings):
        flag: bool = setting(False, doc="A flag.")
        mode: Literal["fast", "slow"] = setting("fast", doc="A mode.")

    fields = {f.name: f.metadata for f in dataclasses.fields(Derived)}
    assert fields["flag"]["validator"] is valid.boolean and fields["flag"]["doc"] == "A flag."
    assert fields["mode"]["validator"].allowed == "one of fast, slow"
    with pytest.raises(ConfigError) as refused:
        Derived.from_mapping({"flag": "maybe", "mode": "medium"})
    assert refused.value.errors == (
        "flag must be true or false, got 'maybe'",
        "mode must be one of fast, slow, got 'medium'",
    )


def test_a_field_whose_annotation_implies_no_validator_must_name_one() -> None:
    with pytest.raises(TypeError, match=r"Bare\.count: no validator derives from <class 'int'>"):

        @dataclasses.dataclass(frozen=True)
        class Bare(Settings):
            count: int = setting(1, doc="A count.")


def test_the_named_number_validators_enforce_and_list_the_bound_they_name() -> None:
    assert valid.positive.allowed == "> 0" and valid.positive_or_none.allowed == "> 0 or none"
    assert valid.non_negative.allowed == ">= 0"
    assert valid.positive(0.0) == "must be finite and > 0, got 0.0"
    assert valid.positive_or_none(None) is None and valid.positive(1e-8) is None
    assert valid.non_negative(0.0) is None
    assert valid.non_negative(-1.0) == "must be finite and >= 0, got -1.0"


def test_overrides_parse_by_field_type() -> None:
    c = PPOConfig().with_overrides(
        [
            "max_kl=0.03",
            "total_steps=1e5",
            "hidden_sizes=32,16",
            "clip_range_vf=none",
            "norm_adv=false",
            "kl_estimator=low_var_kl",
            "seed=7",
            "learning_rate=1",
        ]
    )
    assert c.max_kl == 0.03 and c.total_steps == 100_000 and c.hidden_sizes == (32, 16)
    assert c.clip_range_vf is None and c.norm_adv is False and c.kl_estimator == "low_var_kl"
    assert c.seed == 7 and c.learning_rate == 1.0 and isinstance(c.learning_rate, float)


def test_overrides_report_unknown_key_with_suggestion_and_bad_values() -> None:
    with pytest.raises(ConfigError) as info:
        PPOConfig().with_overrides(["max_kll=0.1", "gamma=abc", "kl_penalty_coefficient=nan"])
    assert info.value.errors == (
        "unknown config key 'max_kll' (did you mean 'max_kl'?)",
        "gamma must be a number, got 'abc'",
        "kl_penalty_coefficient must be finite and >= 0, got nan",
    )
    assert "in --set" in str(info.value)


def test_overrides_need_key_equals_value() -> None:
    with pytest.raises(ConfigError, match="expected key=value, got 'max_kl'"):
        PPOConfig().with_overrides(["max_kl"])


def test_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "ppo.toml"
    path.write_text('max_kl = 0.02\nkl_estimator = "k2"\nhidden_sizes = [32, 32]\ngamma = 1\n')
    c = PPOConfig.from_toml(path)
    assert (c.max_kl, c.kl_estimator, c.hidden_sizes, c.gamma) == (0.02, "k2", (32, 32), 1.0)


def test_from_toml_errors_name_file_key_and_value(tmp_path: Path) -> None:
    error = toml_error(_written(tmp_path, "kl_penaltycoefficient = 0.1\nmax_kl = -inf\n"))
    assert error.errors == (
        "unknown config key 'kl_penaltycoefficient' (did you mean 'kl_penalty_coefficient'?)",
        "max_kl must be finite and > 0 (or none), got -inf",
    )
    assert str(tmp_path / "config.toml") in str(error)


def test_from_toml_missing_and_malformed(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no such config file"):
        PPOConfig.from_toml(tmp_path / "nope.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("max_kl = = 1\n")
    with pytest.raises(InputFileError, match="config file is not valid TOML"):
        PPOConfig.from_toml(broken)


def test_to_dict_round_trips_through_from_mapping() -> None:
    c = PPOConfig(hidden_sizes=(8,), max_kl=0.05, clip_ratio_c=3.0)
    assert PPOConfig.from_mapping(c.to_dict()) == c


def test_schedules_anneal_linearly() -> None:
    c = PPOConfig(total_steps=4 * 512, ent_coef=0.02, ent_coef_final=0.0)
    assert c.num_updates == 4
    assert [c.learning_rate_at(u) for u in range(4)] == pytest.approx(
        [2.5e-4, 1.875e-4, 1.25e-4, 0.625e-4]
    )
    assert [c.ent_coef_at(u) for u in range(4)] == pytest.approx([0.02, 0.015, 0.01, 0.005])
    assert PPOConfig(anneal_lr=False).learning_rate_at(100) == 2.5e-4


def test_reference_kl_settings_are_validated_together() -> None:
    assert errors_of(ref_kl_target=0.01) == (
        "ref_kl_target needs ref_kl_loss_coef > 0 or ref_kl_in_reward",
    )
    assert errors_of(
        ref_kl_target=0.01, ref_kl_in_reward=True, ref_kl_reward_coef=0.0, ref_kl_loss_coef=2e6
    ) == (
        "ref_kl_loss_coef must be in [1e-06, 1e+06] for ref_kl_target to adapt it, got 2000000.0",
        "ref_kl_reward_coef must be in [1e-06, 1e+06] for ref_kl_target to adapt it, got 0.0",
    )
    assert errors_of(ref_kl_loss_coef=-1.0, ref_kl_horizon=0, init_from="", reference="") == (
        "init_from must be a non-empty string, got ''",
        "reference must be a non-empty string, got ''",
        "ref_kl_loss_coef must be finite and >= 0, got -1.0",
        "ref_kl_horizon must be an integer >= 1, got 0",
    )


def test_straight_through_estimators_and_fine_tuning_settings_parse_from_the_command_line() -> None:
    cfg = PPOConfig().with_overrides(
        [
            "kl_estimator=k3+",
            "ref_kl_loss_estimator=low_var_kl+",
            "ref_kl_loss_coef=0.1",
            "init_from=runs/base",
            "ref_kl_target=0.02",
            "normalize_returns=true",
        ]
    )
    assert (cfg.kl_estimator, cfg.ref_kl_loss_estimator) == ("k3+", "low_var_kl+")
    assert cfg.init_from == "runs/base" and cfg.uses_reference and cfg.normalize_returns
    assert PPOConfig().with_overrides(["init_from=none"]).init_from is None
    assert not PPOConfig().uses_reference


def test_the_config_accepts_every_registered_estimator_and_only_those() -> None:
    for name in ESTIMATORS:
        assert PPOConfig(kl_estimator=name, ref_kl_loss_estimator=name).kl_estimator == name
    with pytest.raises(ConfigError, match="ref_kl_reward_estimator must be one of k1, k2"):
        PPOConfig(ref_kl_reward_estimator="k5")


def test_device_is_cpu_by_default_parses_from_set_and_names_a_bad_value(tmp_path: Path) -> None:
    assert PPOConfig().device == "cpu"
    assert PPOConfig().with_overrides(["device=cuda"]).device == "cuda"
    path = tmp_path / "ppo.toml"
    path.write_text('device = "cpu"\n', encoding="utf-8")
    assert PPOConfig.from_toml(path).device == "cpu"
    assert errors_of(device="tpu") == ("device must be one of auto, cpu, cuda, got 'tpu'",)
    assert PPOConfig.from_mapping(PPOConfig(device="cuda").to_dict()).device == "cuda"


def test_a_typed_source_keeps_its_types_where_set_parses_text(tmp_path: Path) -> None:
    quoted = _written(tmp_path, 'norm_adv = "false"\nnum_envs = "4"\nmax_kl = "none"\n')
    assert toml_error(quoted).errors == (
        "num_envs must be an integer in [1, 4096], got '4'",
        "norm_adv must be true or false, got 'false'",
    )  # max_kl's none word is how TOML, which has no null, says none
    assert PPOConfig.from_toml(_written(tmp_path, 'max_kl = "none"\n')).max_kl is None
    parsed = PPOConfig().with_overrides(["norm_adv=false", "num_envs=4"])
    assert (parsed.norm_adv, parsed.num_envs) == (False, 4)


def toml_error(path: Path) -> ConfigError:
    """The error loading ``path`` raises."""
    with pytest.raises(ConfigError) as caught:
        PPOConfig.from_toml(path)
    return caught.value


def _written(folder: Path, text: str) -> Path:
    path = folder / "config.toml"
    path.write_text(text)
    return path
