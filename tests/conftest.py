"""Settings shared by every test package."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("dev", max_examples=100, deadline=None)
"""The local loop's default: each property still runs, at Hypothesis's own default count."""
settings.register_profile("ci", max_examples=2_000, deadline=None)
"""What CI runs (.ci/run sets HYPOTHESIS_PROFILE=ci): at least 2,000 examples per property."""
settings.register_profile("long", max_examples=50_000, deadline=None)
"""For a thorough local run: HYPOTHESIS_PROFILE=long pytest tests/telemetry."""
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
