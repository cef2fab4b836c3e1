"""Which heavy libraries a command loads: its commands run in turn in one fresh interpreter
(``sys.modules`` is only clean in a process that nothing else has run in), each reporting
which of the libraries named were loaded once it had run."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from tests import processes

_PROBE = """
import contextlib, io, json, sys
from {module} import main
heavy, runs, loaded = json.loads(sys.argv[1]), json.loads(sys.argv[2]), {{}}
for argv in runs:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
    loaded[" ".join(argv)] = sorted(name for name in heavy if name in sys.modules)
print(json.dumps(loaded))
"""


def heavy_loaded(
    module: str, runs: Sequence[Sequence[str]], heavy: Sequence[str], cwd: Path
) -> dict[str, list[str]]:
    """For each command line of ``runs`` (given to ``module.main`` in that order), which of
    ``heavy`` were in ``sys.modules`` once it had run."""
    argv = [json.dumps(list(heavy)), json.dumps([list(r) for r in runs])]
    code = _PROBE.format(module=module)
    proc = processes.run(
        [processes.PYTHON, "-c", code, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stderr
    loaded: dict[str, list[str]] = json.loads(proc.stdout)
    return loaded
