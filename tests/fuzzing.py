"""How many examples property tests try: their CI count, times ``$XCSH_FUZZ_SCALE``.

CI runs each property test with its own small count; ``benchmarks/stress.py`` sets the scale to
run the same tests far longer.
"""

from __future__ import annotations

import os

FUZZ_SCALE_ENV = "XCSH_FUZZ_SCALE"


def examples(ci_count: int) -> int:
    """``ci_count`` scaled by ``$XCSH_FUZZ_SCALE`` (default 1)."""
    return max(1, round(ci_count * float(os.environ.get(FUZZ_SCALE_ENV, "1"))))
