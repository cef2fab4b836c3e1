"""``task = "hf"``: a tiny random Llama and its tokenizer, saved to a temporary folder by
the documented example (nothing downloaded), trained end to end by ``ppo train`` as a real
process and judged by ``sanctum check``; unusable input is one line and exit 2."""

from __future__ import annotations

import importlib.util
import json
import pickle
import random
import shutil
import sys
from pathlib import Path

import pytest
import torch

from ppo.cli import main
from ppo.exits import EXIT_USAGE
from ppo.tokens.config import TokenPPOConfig
from tests import processes
from tests.cli_runner import run_main

EXAMPLES = Path(__file__).parents[3] / "examples"
needs_transformers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None,
    reason="needs the hf extra: pip install 'sanctum-ppo[hf]'",
)
SHORT = {
    "updates": "3",
    "rollouts_per_update": "16",
    "num_minibatches": "2",
    "update_epochs": "2",
    "warm_start_steps": "5",
    "max_new_tokens": "6",
}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``examples/tiny_hf_model.py``'s model and tokenizer, saved to a temporary folder."""
    spec = importlib.util.spec_from_file_location("tiny_hf_model", EXAMPLES / "tiny_hf_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = tmp_path_factory.mktemp("tiny-llama")
    module.save_tiny_model(str(folder))
    return folder


def run(*args: str, cwd: Path, python: list[str] | None = None) -> tuple[int, str]:
    """``ppo ARGS`` from ``cwd`` in this process (or, given ``python``, that real process):
    exit code, stderr."""
    if python is None:
        ran = run_main(main, *args, cwd=cwd)
        code, err = ran.returncode, ran.stderr
    else:
        proc = processes.run([*python, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
        code, err = proc.returncode, proc.stderr
    assert "Traceback" not in err, err
    return code, err


def train(tmp_path: Path, model: Path | str, *settings: str) -> tuple[int, str]:
    """``ppo train --headless`` of ``examples/token_hf.toml`` on ``model``, made short."""
    sets = [f"hf_model={model}", *(f"{k}={v}" for k, v in SHORT.items()), *settings]
    overrides = [arg for s in sets for arg in ("--set", s)]
    config = str(EXAMPLES / "token_hf.toml")
    return run(
        "train", "--headless", "--config", config, "--run-id", "hf", *overrides, cwd=tmp_path
    )


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err.strip()


@needs_transformers
def test_a_saved_tiny_model_trains_end_to_end_and_sanctum_judges_it(
    tmp_path: Path, tiny_model: Path
) -> None:
    code, err = train(tmp_path, tiny_model)
    assert code == 0, err
    run_dir = tmp_path / "runs" / "hf"
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events].count("ppo_update") == 3
    started = next(e["payload"] for e in events if e["type"] == "run_started")
    vocab = started["config"]["vocab"]
    allowed = {vocab.index(t) for t in [*TokenPPOConfig().hf_z_tokens, "<ANSWER>"]}
    samples = [json.loads(line) for line in (run_dir / "rollouts.jsonl").read_text().splitlines()]
    assert len(samples) == 3 * 16
    generated = {i for s in samples for i in s["generated_ids"]}
    assert generated and generated <= allowed  # the action set is the named tokens only
    checked, _ = run("check", str(run_dir), cwd=tmp_path, python=["sanctum"])
    assert checked in (0, 1)  # judged: passed or failed a rule, never "could not judge"


@needs_transformers
def test_the_value_head_is_the_seeds_on_the_hidden_states(tiny_model: Path) -> None:
    from torch import nn

    from ppo.tokens.hf import HFPolicy, make_task

    task = make_task(TokenPPOConfig(task="hf", hf_model=str(tiny_model), warm_start_steps=1))
    assert isinstance(task.model, HFPolicy)
    head = task.model.value_head
    assert [type(m) for m in head] == [nn.Linear, nn.Tanh, nn.Linear]
    assert (head[0].in_features, head[0].out_features, head[2].out_features) == (32, 32, 1)
    prompts, truth = task.sample(4, 0)
    logits, values = task.model(prompts)
    assert logits.shape[:2] == values.shape == prompts.shape
    assert truth.shape == (4, task.num_digits)
    read = task.read_digits(prompts, torch.full((4,), prompts.shape[1] - 1))
    assert read.shape == (4, task.num_digits, 10)


@needs_transformers
def test_generation_feeds_the_policy_one_token_at_a_time_through_its_cache(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the prompt, each generated token is fed alone with the key-value cache of the
    ones before; the samples, log-probabilities and values are those of the forward on
    the whole sequence, which the update recomputes."""
    from torch import Tensor, nn

    from ppo.tokens import masking
    from ppo.tokens.generate import generate
    from ppo.tokens.hf import make_task
    from ppo.tokens.update import TokenBatch, evaluate

    task = make_task(TokenPPOConfig(task="hf", hf_model=str(tiny_model), warm_start_steps=1))
    policy = task.model
    fed: list[int] = []
    step = policy.step

    def recording(ids: Tensor, cache: object) -> tuple[Tensor, Tensor, object]:
        fed.append(ids.shape[1])
        return step(ids, cache)

    monkeypatch.setattr(policy, "step", recording)

    class WholeSequence(nn.Module):  # the same model without a cache
        def forward(self, ids: Tensor) -> tuple[Tensor, Tensor]:
            out: tuple[Tensor, Tensor] = policy(ids)
            return out

    prompts, _ = task.sample(32, 0)
    cached = generate(policy, prompts, task.vocab, 6, 1.0, torch.Generator().manual_seed(5))
    whole = generate(WholeSequence(), prompts, task.vocab, 6, 1.0, torch.Generator().manual_seed(5))
    assert fed == [prompts.shape[1]] + [1] * (cached.tokens.shape[1] - 1)
    assert torch.equal(cached.tokens, whole.tokens)
    assert torch.allclose(cached.logp, whole.logp, atol=1e-5)
    assert torch.allclose(cached.values, whole.values, atol=1e-5)
    actions = cached.tokens.masked_fill(~cached.valid, task.vocab.answer_id)
    batch = TokenBatch(cached.sequences, prompts.shape[1], actions, cached.valid, cached.logp,
                       cached.values, torch.zeros(32), None)  # fmt: skip
    allowed = masking.allowed_mask(len(task.vocab.names), task.vocab.allowed_ids, prompts.device)
    logp, _, _ = evaluate(policy, batch, torch.arange(32), allowed, 1.0)
    assert torch.allclose(logp[cached.valid], cached.logp[cached.valid], atol=1e-5)


@needs_transformers
def test_a_token_the_tokenizer_lacks_is_one_line_naming_it(
    tmp_path: Path, tiny_model: Path
) -> None:
    code, err = train(tmp_path, tiny_model, "hf_z_tokens=Z0,Z1,Q7")
    assert code == EXIT_USAGE
    assert one_line(err) == (
        "ppo train: hf_z_tokens: the tokenizer has no token 'Q7' "
        "(add it to the tokenizer and resize the model's embeddings)"
    )
    assert not (tmp_path / "runs").exists()


@needs_transformers
def test_a_folder_that_is_not_a_model_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    code, err = train(tmp_path, folder)
    assert code == EXIT_USAGE
    assert one_line(err).startswith(
        f"ppo train: hf_model {folder} is not a Hugging Face model folder: "
    )
    assert not (tmp_path / "runs").exists()


@needs_transformers
def test_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    code, err = train(tmp_path, tmp_path / "nowhere")
    assert code == EXIT_USAGE
    assert one_line(err) == f"ppo train: hf_model {tmp_path / 'nowhere'}: no such folder"
    assert not (tmp_path / "runs").exists()


def test_without_transformers_the_line_names_the_hf_extra(tmp_path: Path) -> None:
    hidden = (  # an import of transformers fails, as when it is not installed
        "import sys; sys.modules['transformers'] = None; from ppo.cli import main; sys.exit(main())"
    )
    config = str(EXAMPLES / "token_hf.toml")
    code, err = run(
        "train", "--headless", "--config", config, cwd=tmp_path,
        python=[sys.executable, "-c", hidden],
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert one_line(err) == (
        "ppo train: task 'hf' needs transformers: pip install 'sanctum-ppo[hf]'"
    )
    assert not (tmp_path / "runs").exists()


def _broken_copy(tiny_model: Path, folder: Path, damage: str) -> Path:
    """The tiny model with its weights cut short, random, or a pickle that runs code."""
    shutil.copytree(tiny_model, folder)
    weights = folder / "model.safetensors"
    if damage == "cut":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif damage == "random":
        weights.write_bytes(random.Random(0).randbytes(100_000))
    else:
        weights.unlink()
        ran = folder.parent / "ran"
        (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_RunsCode(str(ran))))
    return folder


class _RunsCode:
    """Unpickled, it would create a file: what a hostile pytorch_model.bin does."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (shutil.copyfile, (__file__, self.path))


@needs_transformers
@pytest.mark.parametrize("damage", ["cut", "random", "pickle"])
def test_weights_that_cannot_be_loaded_are_one_line_and_nothing_runs(
    tmp_path: Path, tiny_model: Path, damage: str
) -> None:
    """A cut or random model.safetensors, or a pickle in pytorch_model.bin, used to end in
    a traceback (the pickle refused, not run, but shown as one)."""
    folder = _broken_copy(tiny_model, tmp_path / "model", damage)
    code, err = train(tmp_path, folder)
    assert code == EXIT_USAGE
    line = one_line(err)
    assert line.startswith(f"ppo train: hf_model {folder}: no causal LM could be loaded: ")
    assert "weights_only" not in line  # never the advice to load it unsafely
    assert not (tmp_path / "ran").exists()  # the pickle's code never ran
    assert not (tmp_path / "runs").exists()


@needs_transformers
def test_what_transformers_reports_about_a_hostile_folder_is_escaped(
    tmp_path: Path, tiny_model: Path
) -> None:
    """Its load report names the folder: a name with an OSC title and a clear-screen used
    to retitle and clear the terminal (our own line escaped it)."""
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "evil\x1b]0;owned\x07\x1b[2J"
    shutil.copytree(tiny_model, folder)
    weights = load_file(folder / "model.safetensors")
    del weights[next(k for k in weights if "layers.0" in k)]  # a load report: MISSING
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    sets = [f"hf_model={folder}", *(f"{k}={v}" for k, v in SHORT.items())]
    argv = ["train", "--headless", "--config", str(EXAMPLES / "token_hf.toml"), "--run-id", "hf"]
    argv += [arg for s in sets for arg in ("--set", s)]
    done = processes.python_m("ppo", *argv, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "LOAD REPORT" in done.stderr and "\\x1b]0;owned\\x07" in done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
