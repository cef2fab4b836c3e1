"""UpdateProbe: the figures it measures against their closed forms, and real runs of a plain
PyTorch PPO loop (examples/probe_ppo.py) recorded through it and judged by ``sanctum``."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip(
    "torch", reason="needs the train extra: pip install 'sanctum-ppo[train]'"
)
pytest.importorskip("gymnasium", reason="needs the train extra: pip install 'sanctum-ppo[train]'")

from torch import nn  # noqa: E402
from torch.distributions import Categorical, Distribution, Independent, Normal  # noqa: E402

from sanctum.cli import main as sanctum_main  # noqa: E402
from telemetry import PPOUpdatePayload, Recorder, RunFinishedPayload, read_events  # noqa: E402
from telemetry.events import AnomalyPayload  # noqa: E402
from tests.cli_runner import run_main  # noqa: E402
from tests.examples import load_example, payloads  # noqa: E402
from tests.sanctum.recorded import check_report  # noqa: E402
from torchprobe.probe import UpdateProbe  # noqa: E402


class Gaussian(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mean = nn.Linear(3, 2)
        self.log_std = nn.Parameter(torch.tensor([-0.3, 0.2]))

    def forward(self, obs: torch.Tensor) -> Distribution:
        return Independent(Normal(self.mean(obs), self.log_std.exp().expand(obs.shape[0], 2)), 1)


class Softmax(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.logits = nn.Linear(3, 4)

    def forward(self, obs: torch.Tensor) -> Distribution:
        return Categorical(logits=self.logits(obs))


def _gaussian_kl(before: Distribution, after: Distribution) -> float:
    """KL(N0 || N1) per sample by its closed form, summed over the action's dimensions."""
    m0, s0 = before.base_dist.loc.double(), before.base_dist.scale.double()  # type: ignore[attr-defined]
    m1, s1 = after.base_dist.loc.double(), after.base_dist.scale.double()  # type: ignore[attr-defined]
    per = (s1 / s0).log() + (s0**2 + (m0 - m1) ** 2) / (2 * s1**2) - 0.5
    return float(per.sum(-1).mean())


def _categorical_kl(before: Distribution, after: Distribution) -> float:
    p0, p1 = before.probs.double(), after.probs.double()  # type: ignore[attr-defined]
    return float((p0 * (p0.log() - p1.log())).sum(-1).mean())


def _one_update(
    policy: nn.Module, tmp_path: Path, steps: int = 3, limit: float = 0.5, **probe: Any
) -> tuple[PPOUpdatePayload, Distribution, Distribution, list[float], torch.Tensor]:
    """Record one update of ``steps`` SGD steps on a surrogate; the policy's distribution
    on the batch before and after, and what clip_grad_norm_ returned at each step."""
    torch.manual_seed(0)
    obs = torch.randn(64, 3)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.3)
    with torch.no_grad():
        before = policy(obs)
        actions = before.sample()
    advantages = torch.randn(64)
    p = UpdateProbe(policy, optimizer, max_grad_norm=limit, **probe)
    returned = []
    with Recorder(path=tmp_path / "events.jsonl", config=p.settings()) as rec:
        with p.update(rec, obs, actions, global_step=64):
            for _ in range(steps):
                loss = -(policy(obs).log_prob(actions) * advantages).mean()
                optimizer.zero_grad()
                loss.backward()
                returned.append(float(nn.utils.clip_grad_norm_(policy.parameters(), limit)))
                optimizer.step()
        with torch.no_grad():
            after = policy(obs)
    (update,) = payloads(tmp_path, PPOUpdatePayload)
    return update, before, after, returned, actions


@pytest.mark.parametrize(
    ("policy", "closed_form"), [(Gaussian, _gaussian_kl), (Softmax, _categorical_kl)]
)
def test_the_kl_is_the_closed_form_kl_of_the_policy_before_and_after(
    tmp_path: Path, policy: Callable[[], nn.Module], closed_form: Callable[..., float]
) -> None:
    update, before, after, _, _ = _one_update(policy(), tmp_path)
    expected = closed_form(before, after)
    assert expected > 1e-4  # the update moved the policy
    assert update.kl_final == pytest.approx(expected, abs=1e-6)


def test_k3_is_the_estimator_on_the_batch_actions(tmp_path: Path) -> None:
    update, before, after, _, actions = _one_update(Softmax(), tmp_path, kl_estimator="k3")
    log_r = (after.log_prob(actions) - before.log_prob(actions)).double()
    assert update.kl_final == pytest.approx(float((log_r.exp() - 1 - log_r).mean()), abs=1e-6)
    assert update.kl_final == pytest.approx(_categorical_kl(before, after), rel=0.5)


def test_the_gradient_norm_is_the_one_before_clipping(tmp_path: Path) -> None:
    update, _, _, returned, _ = _one_update(Gaussian(), tmp_path, steps=4, limit=0.3)
    assert update.minibatches_completed == 4
    assert update.grad_norm == pytest.approx(sum(returned) / 4, rel=1e-5)
    assert update.grad_norm_max == pytest.approx(max(returned), rel=1e-5)
    assert min(returned) > 0.3  # clipping scaled them: the probe read them before
    expected_scale = sum(min(1.0, 0.3 / n) for n in returned) / 4
    assert update.grad_clip_scale == pytest.approx(expected_scale, rel=1e-5)


def test_clip_fraction_and_ratio_range_after_the_update(tmp_path: Path) -> None:
    update, _, after, _, _ = _one_update(Softmax(), tmp_path, clip_range=0.1)
    assert update.ratio_min is not None and update.ratio_max is not None
    assert 0 < update.ratio_min <= 1 <= update.ratio_max
    assert update.clip_fraction is not None and 0 < update.clip_fraction <= 1
    entropy = float(after.entropy().mean())
    assert update.entropy == pytest.approx(entropy, rel=1e-6)
    assert update.entropy_normalized == pytest.approx(entropy / math.log(4), rel=1e-6)


def test_a_distribution_without_a_closed_form_is_told_to_declare_k3(tmp_path: Path) -> None:
    class Mixed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.loc = nn.Linear(3, 1)

        def forward(self, obs: torch.Tensor) -> Distribution:
            from torch.distributions import StudentT

            return Independent(StudentT(3.0, self.loc(obs), torch.ones(obs.shape[0], 1)), 1)

    with pytest.raises(NotImplementedError, match="kl_estimator='k3'"):
        _one_update(Mixed(), tmp_path)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_a_plain_pytorch_run_is_judged_on_kl_clip_grad_and_entropy(
    tmp_path: Path, env_id: str
) -> None:
    run = load_example("probe_ppo").main(
        [
            "--env-id",
            env_id,
            "--updates",
            "8",
            "--num-steps",
            "64",
            "--run-dir",
            str(tmp_path),
            "--run-id",
            "probe",
        ]
    )
    report = check_report(run)
    rows = {row["name"]: row for row in report["rows"]}
    for metric in ("approx_kl", "clip_fraction", "grad_norm", "entropy"):
        assert rows[metric]["updates_measured"] == 8, metric
    assert report["exit_code"] == 0
    assert report["verdict_unmeasured"] == []  # discrete: normalised entropy; a Box: none


def test_nan_observations_end_the_run_failed_in_every_view(tmp_path: Path) -> None:
    # torch's Categorical refuses NaN logits, or (once skrl or TorchRL, imported in this
    # process, turned torch's argument checks off) its sampling refuses NaN probabilities
    with pytest.raises((ValueError, RuntimeError), match=r"invalid values|probability tensor"):
        load_example("probe_ppo").main(
            [
                "--updates",
                "6",
                "--num-steps",
                "32",
                "--run-dir",
                str(tmp_path),
                "--run-id",
                "nan",
                "--nan-observations-from",
                "3",
            ]
        )
    run = tmp_path / "nan"
    (finished,) = [
        e.payload
        for e in read_events(run / "events.jsonl").events
        if isinstance(e.payload, RunFinishedPayload)
    ]
    assert finished.status == "failed"
    assert finished.reason is not None and "\n" not in finished.reason
    assert finished.reason.startswith(("ValueError: Expected", "RuntimeError: probability"))
    assert check_report(run)["exit_code"] == 1
    summary = run_main(sanctum_main, "summary", run)
    assert "FAIL" in summary.stdout
    once = run_main(sanctum_main, run, "--once")
    assert "FAIL" in once.stdout
    table = run_main(sanctum_main, "--once", tmp_path)
    assert "FAIL" in table.stdout


def test_the_probe_draws_nothing_from_the_trainers_random_stream(tmp_path: Path) -> None:
    """A policy that samples as it evaluates (skrl's act) and a Monte Carlo entropy leave
    torch's generator where the trainer left it."""

    class Sampling(Gaussian):
        def forward(self, obs: torch.Tensor) -> Distribution:
            dist = super().forward(obs)
            dist.sample()  # as skrl's act() does
            return dist

    torch.manual_seed(3)
    obs, actions = torch.randn(16, 3), torch.randn(16, 2)
    policy = Sampling()
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    probe = UpdateProbe(policy, optimizer)
    state = torch.get_rng_state()
    with (
        Recorder(path=tmp_path / "events.jsonl") as rec,
        probe.update(rec, obs, actions, global_step=16),
    ):
        pass
    assert torch.equal(torch.get_rng_state(), state)


def test_non_finite_observations_are_a_critical_anomaly(tmp_path: Path) -> None:
    obs = torch.randn(8, 3)
    obs[2, 1] = math.nan
    obs[5, 0] = math.inf
    policy = Softmax()

    def unchecked(batch: torch.Tensor) -> Distribution:  # as skrl's and TorchRL's are
        return Categorical(logits=policy.logits(batch), validate_args=False)

    probe = UpdateProbe(unchecked, torch.optim.SGD(policy.parameters(), lr=0.1))
    actions = Categorical(logits=torch.zeros(8, 4)).sample()
    with (
        Recorder(path=tmp_path / "events.jsonl") as rec,
        probe.update(rec, obs, actions, global_step=8),
    ):
        pass
    events = read_events(tmp_path / "events.jsonl").events
    (anomaly,) = [e.payload for e in events if isinstance(e.payload, AnomalyPayload)]
    assert (anomaly.severity, anomaly.metric, anomaly.update) == ("critical", "observations", 0)
    assert "2 of the 8 samples the probe evaluated hold NaN or Inf" in anomaly.message
    assert check_report(tmp_path / "events.jsonl")["exit_code"] == 1


def test_accumulated_gradients_give_the_norm_of_their_sum_before_clipping(
    tmp_path: Path,
) -> None:
    """Two backward passes before each step: the norm is the accumulated gradient's."""
    torch.manual_seed(1)
    policy = Gaussian()
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    obs, actions = torch.randn(32, 3), torch.randn(32, 2)
    probe = UpdateProbe(policy, optimizer, max_grad_norm=0.1)
    returned = []
    with (
        Recorder(path=tmp_path / "events.jsonl") as rec,
        probe.update(rec, obs, actions, global_step=32),
    ):
        for _ in range(2):
            optimizer.zero_grad()
            for half in (obs[:16], obs[16:]):
                (-policy(half).log_prob(actions[:16]).mean()).backward()
            returned.append(float(nn.utils.clip_grad_norm_(policy.parameters(), 0.1)))
            optimizer.step()
    (update,) = payloads(tmp_path, PPOUpdatePayload)
    assert min(returned) > 0.1  # clipped after it was read
    assert update.minibatches_completed == 2
    assert update.grad_norm == pytest.approx(sum(returned) / 2, rel=1e-5)


async def test_a_plain_run_failed_on_nan_reads_fail_in_the_run_table(tmp_path: Path) -> None:
    """The run table of a sweep, beside a healthy run of the same loop."""
    from sanctum.health.thresholds import DEFAULT_THRESHOLDS
    from sanctum.tui.runs_app import RunsApp
    from sanctum.tui.widgets.runs import RunTable
    from tests.sanctum.tui.test_runs_app import wait_for

    example = load_example("probe_ppo")
    small = ["--updates", "6", "--num-steps", "32", "--run-dir", str(tmp_path)]
    example.main([*small, "--run-id", "healthy"])
    with pytest.raises((ValueError, RuntimeError)):
        example.main([*small, "--run-id", "nan", "--nan-observations-from", "3"])
    app = RunsApp([tmp_path / n / "events.jsonl" for n in ("healthy", "nan")], DEFAULT_THRESHOLDS)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda a: all(r.update is not None for r in a.board.rows), "rows")
        _, *lines = app.query_one(RunTable).text()
        nan = next(line for line in lines if line.split()[1] == "nan")
        assert "FAIL: run failed" in nan, nan
        healthy = next(line for line in lines if line.split()[1] == "healthy")
        assert "FAIL" not in healthy, healthy


def test_a_grad_scalers_scale_is_divided_out_of_the_norm(tmp_path: Path) -> None:
    """Mixed precision: backward leaves the loss scale in the gradients (skrl's update)."""
    torch.manual_seed(2)
    policy = Gaussian()
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    obs, actions = torch.randn(32, 3), torch.randn(32, 2)
    probe = UpdateProbe(policy, optimizer, grad_scaler=scaler)
    returned = []
    with (
        Recorder(path=tmp_path / "events.jsonl") as rec,
        probe.update(rec, obs, actions, global_step=32),
    ):
        for _ in range(3):
            optimizer.zero_grad()
            scaler.scale(-policy(obs).log_prob(actions).mean()).backward()
            scaler.unscale_(optimizer)
            returned.append(float(nn.utils.clip_grad_norm_(policy.parameters(), 0.5)))
            scaler.step(optimizer)
            scaler.update()
    (update,) = payloads(tmp_path, PPOUpdatePayload)
    assert update.grad_norm == pytest.approx(sum(returned) / 3, rel=1e-4)


def test_discrete_actions_stored_as_a_column_are_read_as_scalars(tmp_path: Path) -> None:
    """(N, 1) actions for a Categorical over (N,): the same figures as (N,) actions, not a
    log_prob broadcast to (N, N)."""
    figures = []
    for shape in ((64,), (64, 1)):
        torch.manual_seed(0)
        run = tmp_path / str(len(shape))
        run.mkdir()
        policy = Softmax()
        obs = torch.randn(64, 3)
        actions = Categorical(logits=torch.zeros(64, 4)).sample().reshape(shape)
        optimizer = torch.optim.SGD(policy.parameters(), lr=0.3)
        probe = UpdateProbe(policy, optimizer, clip_range=0.2, kl_estimator="k3")
        with (
            Recorder(path=run / "events.jsonl") as rec,
            probe.update(rec, obs, actions, global_step=64),
        ):
            optimizer.zero_grad()
            (-policy(obs).log_prob(actions.reshape(-1)).mean()).backward()
            optimizer.step()
        (update,) = payloads(run, PPOUpdatePayload)
        figures.append((update.kl_final, update.clip_fraction, update.ratio_max))
    assert figures[0] == pytest.approx(figures[1])
    assert figures[0][0] < 1


def test_a_policy_built_on_a_view_of_its_parameters_keeps_its_before(tmp_path: Path) -> None:
    """``Normal(mu(obs), self.std)``: the distribution entered with holds a view of a
    parameter the step moves; the probe's "before" is a copy, so the KL is the real one."""

    class SharedStd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mu = nn.Linear(3, 1)
            self.std = nn.Parameter(torch.ones(1))

        def forward(self, obs: torch.Tensor) -> Distribution:
            return Independent(Normal(self.mu(obs), self.std), 1)

    torch.manual_seed(0)
    policy = SharedStd()
    obs = torch.randn(64, 3)
    with torch.no_grad():
        before = Independent(Normal(policy.mu(obs).clone(), policy.std.clone()), 1)
        actions = before.sample()
    optimizer = torch.optim.SGD(policy.parameters(), lr=1.0)
    probe = UpdateProbe(policy, optimizer)
    with (
        Recorder(path=tmp_path / "events.jsonl") as rec,
        probe.update(rec, obs, actions, global_step=64),
    ):
        optimizer.zero_grad()
        (-policy(obs).log_prob(actions).mean() - 3 * policy.std.sum()).backward()
        optimizer.step()
    with torch.no_grad():
        after = Independent(Normal(policy.mu(obs), policy.std.detach()), 1)
    (update,) = payloads(tmp_path, PPOUpdatePayload)
    assert float(policy.std.detach()) > 2  # the step moved the shared std a long way
    assert update.kl_final == pytest.approx(_gaussian_kl(before, after), abs=1e-6)


def test_a_policy_left_non_finite_is_a_failed_ending() -> None:
    policy = Gaussian()
    probe = UpdateProbe(policy, torch.optim.SGD(policy.parameters(), lr=0.1))
    assert probe.ending() is None  # finite: the run ends as the trainer did
    with torch.no_grad():
        policy.mean.bias[1] = math.nan
    assert probe.ending() == (
        "failed",
        "the policy's parameters hold NaN or Inf after training (1 of 3 tensors the optimizer "
        "steps): the trainer returned without raising",
    )
