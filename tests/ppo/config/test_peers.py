"""Names from SB3, CleanRL and others: refused with the field and value to write instead,
converted where the units differ, on the command line and in TOML files alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppo.config import ConfigError, PPOConfig
from ppo.config.peers import BY_NAME, PEER_NAMES
from ppo.tokens.config import TokenPPOConfig


def refused(*settings: str, config: PPOConfig | TokenPPOConfig | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        (config or PPOConfig()).with_overrides(list(settings))
    assert len(info.value.errors) == 1
    return info.value.errors[0]


def test_sb3_target_kl_is_max_kl_at_one_and_a_half_times_the_value_given() -> None:
    said = refused("target_kl=0.02")
    assert said.startswith(
        "unknown config key 'target_kl': `--set max_kl=0.03` is SB3's target_kl=0.02 "
        "(SB3 stops at 1.5x target_kl); "
    )
    assert "kl_target" not in said  # the adaptive penalty's target is another setting
    assert "`--set max_kl=0.02` with `--set early_stop_scope=epoch`" in said  # CleanRL's
    following = PPOConfig().with_overrides(["max_kl=0.03"])  # what it says works at once
    assert following.max_kl == 0.03


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("batch_size=64", "`--set num_minibatches=8` (num_envs x num_steps = 4 x 128 / 64)"),
        ("minibatch_size=256", "`--set num_minibatches=2`"),
        ("n_steps=256", "`--set num_steps=256`"),
        ("n_epochs=10", "`--set update_epochs=10`"),
        ("lr=1e-3", "`--set learning_rate=1e-3`"),
        ("clip_coef=0.1", "`--set clip_range=0.1`"),
        ("clip_vloss=false", "`--set clip_range_vf=none`"),
        ("total_timesteps=100000", "`--set total_steps=100000`"),
        ("normalize_advantage=false", "`--set norm_adv=false`"),
    ],
)
def test_peer_names_say_our_field_and_the_value_to_give_it(setting: str, says: str) -> None:
    said = refused(setting)
    assert said.startswith(f"unknown config key '{setting.partition('=')[0]}': ")
    assert says in said


def test_sb3_batch_size_counts_from_the_rollout_being_configured() -> None:
    """The conversion uses num_envs and num_steps as set with it, and says when the
    minibatch size does not divide the rollout."""
    assert "`--set num_minibatches=16` (num_envs x num_steps = 8 x 128 / 64)" in refused(
        "num_envs=8", "batch_size=64"
    )
    said = refused("batch_size=100")
    assert "4 x 128 = 512 samples is not a multiple of 100" in said
    assert "`--set num_minibatches=5` makes minibatches of about 102.4 samples" in said


def test_a_toml_file_gets_the_same_hints_as_toml_lines(tmp_path: Path) -> None:
    path = tmp_path / "sb3.toml"
    path.write_text("target_kl = 0.02\nn_steps = 256\nclip_vloss = true\n")
    with pytest.raises(ConfigError) as info:
        PPOConfig.from_toml(path)
    first, second, third = info.value.errors
    assert "`max_kl = 0.03` is SB3's target_kl=0.02" in first
    assert '`early_stop_scope = "epoch"`' in first
    assert second.endswith("here: `num_steps = 256`")
    assert '`clip_range_vf = 0.2` (on, at clip_range) or `clip_range_vf = "none"` (off)' in third


def test_a_typo_still_gets_the_closest_field() -> None:
    assert refused("max_kll=0.1") == "unknown config key 'max_kll' (did you mean 'max_kl'?)"


def test_the_token_config_gets_the_hints_for_the_fields_it_has() -> None:
    tokens = TokenPPOConfig()
    assert "`--set update_epochs=2`" in refused("n_epochs=2", config=tokens)
    assert "(rollouts_per_update = 256 / 64)" in refused("batch_size=64", config=tokens)
    assert refused("n_steps=8", config=tokens) == "unknown config key 'n_steps'"  # no num_steps


def test_one_table_each_name_once_each_mapping_to_real_fields() -> None:
    assert len(BY_NAME) == len(PEER_NAMES)
    fields = set(PPOConfig().to_dict()) | set(TokenPPOConfig().to_dict())
    for peer in PEER_NAMES:
        assert set(peer.fields) <= fields, peer.name
        assert peer.name not in fields, peer.name  # a name of ours is simply accepted
