"""``bench/token_grpo_trl_bench.py`` at its smallest, as a real process: one run of our
token-level GRPO and one of TRL's GRPOTrainer on the same job; its last line is the JSON
comparison, and both sides count the same tokens."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests import processes

BENCH = Path(__file__).resolve().parents[2] / "bench" / "token_grpo_trl_bench.py"
UPDATES, PROMPTS, GROUP, MAX_NEW = 2, 2, 2, 4
pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("trl") is None or importlib.util.find_spec("transformers") is None,
        reason="needs the trl extra: pip install 'sanctum-ppo[trl]'",
    ),
    pytest.mark.slow,
]


def test_the_last_line_compares_tokens_per_second_and_reward_gains(tmp_path: Path) -> None:
    sizes = {"--updates": UPDATES, "--prompts": PROMPTS, "--group": GROUP,
             "--max-new-tokens": MAX_NEW, "--reader-steps": 1, "--repeats": 1}  # fmt: skip
    proc = processes.run(
        [sys.executable, str(BENCH), *(str(a) for item in sizes.items() for a in item)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    last = json.loads(proc.stdout.splitlines()[-1])
    expected = {"tokens_per_s", "trl_tokens_per_s", "ratio", "reward_gain", "trl_reward_gain"}
    assert expected <= last.keys()
    assert last["ratio"] == pytest.approx(last["tokens_per_s"] / last["trl_tokens_per_s"], rel=0.01)
    settings = last["settings"]
    assert (settings["updates"], settings["prompts"], settings["group"]) == (
        UPDATES,
        PROMPTS,
        GROUP,
    )
    # completion tokens only, on both sides: TRL's own num_tokens is them plus its prompts'
    trl = zip(last["trl_prompt_tokens"], last["trl_completion_tokens"], strict=True)
    assert last["trl_num_tokens"] == [prompt + completion for prompt, completion in trl]
    completions = UPDATES * PROMPTS * GROUP
    for tokens in (*last["completion_tokens"], *last["trl_completion_tokens"]):
        assert completions <= tokens <= completions * MAX_NEW
