"""The step-time regression gate: a capture's median step time against the workload's baseline,
with a noise band from the baseline's own spread.

The median of a capture's steps (warm-up and partial edge steps already left out) is what is
judged: one slow step (a checkpoint, a GC pause) moves it little, and the slower of two steps
is never mistaken for the job's pace. A capture of fewer than ``regression_min_steps`` steps is
too short to judge and does not vote; it does not enter the baseline either.

The baseline is the median of the previous judged captures' medians; its noise band is
``regression_noise_sigmas`` robust standard deviations of those medians (1.4826 x MAD, relative
to the baseline), never under ``regression_ratio``: a job whose own pace wanders 2 % between
captures is judged against a wider band than one that never moves."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from npumon.daemon.model.profile import StepStats, Thresholds

MAD_TO_SIGMA = 1.4826  # the MAD of normally distributed values times this is their sigma

JUDGED = "judged"
TOO_SHORT = "too_short"  # fewer steps than regression_min_steps
YOUNG = "young_baseline"  # fewer judged captures before it than baseline.min_captures
NO_STEPS = "no_steps"  # the capture has no step table


@dataclass(frozen=True, slots=True)
class Baseline:
    median_seconds: float
    band_ratio: float  # a median above median_seconds * (1 + band_ratio) is a regression
    captures: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the gate made of one capture; ``regressed`` is None unless it was judged."""

    status: str  # JUDGED, TOO_SHORT, YOUNG or NO_STEPS
    steps: int
    median_seconds: float | None
    baseline: Baseline | None
    regressed: bool | None

    @property
    def judged(self) -> bool:
        return self.status == JUDGED


def votes(step: StepStats | None, t: Thresholds) -> bool:
    """The capture is long enough to judge, and to enter the baseline."""
    return step is not None and step.count >= t.regression_min_steps


def baseline_of(medians: Sequence[float], min_captures: int, t: Thresholds) -> Baseline | None:
    """The window's median and its noise band; None while fewer than ``min_captures``."""
    if len(medians) < max(min_captures, 1):
        return None
    median = float(statistics.median(medians))
    if not math.isfinite(median) or median <= 0:  # two huge finite values can overflow
        return None
    mad = float(statistics.median(abs(m - median) for m in medians))
    spread = MAD_TO_SIGMA * mad / median
    band = max(t.regression_ratio, t.regression_noise_sigmas * spread)
    return Baseline(median, band if math.isfinite(band) else t.regression_ratio, len(medians))


def judge(step: StepStats | None, baseline: Baseline | None, t: Thresholds) -> Verdict:
    if step is None:
        return Verdict(NO_STEPS, 0, None, baseline, None)
    median = step.p50_seconds
    if not votes(step, t):
        return Verdict(TOO_SHORT, step.count, median, baseline, None)
    if baseline is None:
        return Verdict(YOUNG, step.count, median, None, None)
    regressed = median > baseline.median_seconds * (1.0 + baseline.band_ratio)
    return Verdict(JUDGED, step.count, median, baseline, regressed)
