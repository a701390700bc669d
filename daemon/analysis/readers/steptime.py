"""The rows of torch_npu or graph-mode step tables, one per step and rank, with their phases;
the step statistics over them are stepstats.py's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from npumon.daemon.analysis.readers.steps import GraphIteration, TorchStep


@dataclass(frozen=True, slots=True)
class StepRow:
    """One step of one rank, microseconds; phases None where the table has no value."""

    key: int | None  # step / iteration ID
    device_id: int | None
    total_us: float
    phases: dict[str, float | None]


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in 0..100."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# communication is Communication(Not Overlapped), the part of the step no compute hides;
# communication_overlapped (Overlapped) ran while the device computed, so it lies in computing
TORCH_PHASES = ("computing", "communication", "free", "preparing", "communication_overlapped")
GRAPH_PHASES = ("fp_bp", "iteration_refresh", "data_aug")


def _overlapped(s: TorchStep) -> float | None:
    """Overlapped, or Communication minus Communication(Not Overlapped) where a table gives
    the total alone; None (unknown) where it gives neither."""
    if s.overlapped_us is not None:
        return s.overlapped_us
    if s.communication_total_us is None or s.communication_us is None:
        return None
    return max(s.communication_total_us - s.communication_us, 0.0)


def torch_rows(steps: Sequence[TorchStep]) -> list[StepRow]:
    """Step total = Computing + Communication(Not Overlapped) + Free (= Stage when no bubble)."""
    return [
        StepRow(
            s.step,
            s.device_id,
            s.computing_us + (s.communication_us or 0.0) + (s.free_us or 0.0),
            {
                "computing": s.computing_us,
                "communication": s.communication_us,
                "free": s.free_us,
                "preparing": s.preparing_us,
                "communication_overlapped": _overlapped(s),
            },
        )
        for s in steps
    ]


def chosen_model(iterations: Sequence[GraphIteration]) -> int | None:
    """The Model ID with the most iterations (the training graph), the lowest on a tie."""
    counts = Counter(i.model_id for i in iterations)
    return min(counts, key=lambda m: (-counts[m], -1 if m is None else m), default=None)


def graph_rows(iterations: Sequence[GraphIteration]) -> dict[int | None, list[StepRow]]:
    """Rows of the Model ID with the most iterations, by device."""
    if not iterations:
        return {}
    model = chosen_model(iterations)
    by_device: dict[int | None, list[StepRow]] = {}
    for i in sorted(iterations, key=lambda i: i.iteration_id):
        if i.model_id == model:
            by_device.setdefault(i.device_id, []).append(
                StepRow(
                    i.iteration_id,
                    i.device_id,
                    i.iteration_us,
                    {
                        "fp_bp": i.fp_bp_us,
                        "iteration_refresh": i.refresh_us,
                        "data_aug": i.data_aug_us,
                    },
                )
            )
    return by_device
