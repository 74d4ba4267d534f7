"""How many examples property tests try, and the Hypothesis profiles that run them.

Two profiles (registered in conftest.py, chosen by ``$HYPOTHESIS_PROFILE``):

* ``ci``, the default: each property test with its own small count, every run drawing the same
  examples (derandomised, no example database), so a failure in CI fails again on a rerun and
  on a laptop, and a pass does not depend on the day's seed;
* ``stress`` (``benchmarks/stress.py``): new examples on every run, each test's count times
  ``$XCSH_FUZZ_SCALE`` (default ``STRESS_SCALE``).

Neither has a deadline: the machines that run the suite are shared, and a slow example there is
not a failure.
"""

from __future__ import annotations

import os

FUZZ_SCALE_ENV = "XCSH_FUZZ_SCALE"
PROFILE_ENV = "HYPOTHESIS_PROFILE"
PROFILES = ("ci", "stress")
# The stress profile's multiple of the CI counts when $XCSH_FUZZ_SCALE does not say.
STRESS_SCALE = 40


def profile() -> str:
    """The profile ``$HYPOTHESIS_PROFILE`` names (default ``ci``)."""
    name = os.environ.get(PROFILE_ENV, "ci")
    if name not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}={name!r}: the profiles are {', '.join(PROFILES)}")
    return name


def scale() -> float:
    """``$XCSH_FUZZ_SCALE``; by default 1, or STRESS_SCALE under the stress profile."""
    default = STRESS_SCALE if profile() == "stress" else 1
    return float(os.environ.get(FUZZ_SCALE_ENV, default))


def examples(ci_count: int) -> int:
    """``ci_count`` scaled by :func:`scale`."""
    return max(1, round(ci_count * scale()))
