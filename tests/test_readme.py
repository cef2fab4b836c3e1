"""The README's fresh-machine commands and .ci/run must not drift apart."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    blocks = _bash_blocks((ROOT / "README.md").read_text())
    test_command = next(b for b in blocks if b.endswith("&& pytest"))
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_readme_installs_the_cpu_torch_before_the_project() -> None:
    for block in _bash_blocks((ROOT / "README.md").read_text())[:2]:
        assert block.index("pip install torch==2.13.0") < block.index("pip install -e")


def test_ci_runs_the_hypothesis_ci_profile_and_the_default_is_the_fast_one() -> None:
    from hypothesis import settings

    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "export HYPOTHESIS_PROFILE=ci" in ci_lines
    assert settings.get_profile("ci").max_examples >= 2_000
    assert settings.get_profile("dev").max_examples < settings.get_profile("ci").max_examples
    readme = (ROOT / "README.md").read_text()
    assert "`HYPOTHESIS_PROFILE=ci`" in readme
