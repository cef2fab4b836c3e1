"""Settings shared by every test package."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default", max_examples=2_000)
"""What CI runs: at least 2,000 examples per property."""
settings.register_profile("long", max_examples=50_000)
"""For a thorough local run: HYPOTHESIS_PROFILE=long pytest tests/telemetry."""
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
