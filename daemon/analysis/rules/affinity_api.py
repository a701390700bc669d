"""affinity_api: msprof-analyze's affinity API rule ("亲和API接口"): torch calls in the host
timeline (readers/affinity.py) that torch_npu has a fused, NPU-affine replacement for.

A pattern is ops joined by ``-``; ``(a|b)`` with a regex count suffix (``{0,1}``, ``*``) is
optional or repeated. ``PATTERNS`` is msprof-analyze's rules/timeline_fusion_ops.yaml at its
default versions (CANN 8.0.0, torch 2.1.0: rule sets 0-3; the MindSpeed rules are for 8.0.RC3
only). Where the capture has call stacks, each replacement names the code locations of its
first op (at most ``PLACES_NAMED``)."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from npumon.daemon.analysis.evidence import ATEN, OPTIMIZER, Evidence, Range, Timeline
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "affinity_api"
ORDER = 190
ADVICE = (
    "The host timeline runs sequences of torch calls that torch_npu has one "
    "fused, NPU-affine API for (msprof-analyze's affinity API analysis): each sequence launches "
    "several kernels where the replacement launches one. Replace them in the model code (find "
    "them with with_stack=True in the profiler's call stacks) and capture again; check the "
    "replacement's documentation for the shapes and dtypes it supports."
)

_TRANSPOSE = tuple(
    f"({a})-(contiguous){{0,1}}-({b})"
    for a, b in (
        ("permute", "reshape"),
        ("permute", "view"),
        ("transpose", "reshape"),
        ("transpose", "view"),
        ("reshape", "permute"),
        ("reshape", "transpose"),
        ("view", "permute"),
        ("view", "transpose"),
    )
)


_SPLIT = ("slice", "chunk")


# (sequence, replacement, patterns)
PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("aten", "torch_npu.npu_confusion_transpose", _TRANSPOSE),
    ("aten", "torch_npu.fast_gelu", ("gelu",)),
    (
        "aten",
        "torch_npu.npu_scaled_masked_softmax",
        ("softmax-(mul){0,1}-(masked_fill_)", "softmax-(mul){0,1}-(add)"),
    ),
    ("aten", "optimizer.clip_grad_norm_fused_", ("add-reciprocal-mul",)),
    (
        "aten",
        "torch_npu.npu_fusion_attention",
        (
            "matmul-(add){0,1}-(mul){0,1}-(masked_fill_){0,1}-softmax-(dropout){0,1}-matmul",
            "matmul-(add){0,1}-(mul){0,1}-(add){0,1}-softmax-(dropout){0,1}-matmul",
        ),
    ),
    (
        "aten",
        "torch_npu.npu_rotary_mul",
        ("(chunk)-neg-cat-(mul){0,2}-add", "(slice)-neg-cat-(mul){0,2}-add"),
    ),
    (
        "aten",
        "torch_npu.npu_rms_norm",
        ("(pow){0,1}-(mean){0,1}-(add){0,1}-rsqrt-mul-(type_as){0,1}",),
    ),
    (
        "aten",
        "torch_npu.npu_swiglu",
        tuple(
            f"({s})-{rest}"
            for s in _SPLIT
            for rest in (
                "silu-mul",
                "mul-silu",
                "sigmoid-mul-mul",
                "mul-sigmoid-mul",
                "mul-mul-sigmoid",
            )
        ),
    ),
    (
        "aten",
        "torch_npu.npu_geglu",
        tuple(f"({s})-{rest}" for s in _SPLIT for rest in ("gelu-mul", "mul-gelu")),
    ),
    ("aten", "torch_npu.npu_group_norm_silu", ("group_norm-silu",)),
    ("aten", "torch.addmm", ("mul-mul-add",)),
    ("aten", "torch_npu.npu_add_layer_norm", ("add-layer_norm",)),
    *(
        ("optimizer", f"torch_npu.optim.NpuFused{name}", (f"{name}.step",))
        for name in (
            "AdamW",
            "SGD",
            "Adadelta",
            "Lamb",
            "AdamP",
            "BertAdam",
            "RMSprop",
            "RMSpropTF",
            "Adam",
        )
    ),
)


PLACES_NAMED = 3  # code locations named per replacement


@dataclass(frozen=True, slots=True)
class Match:
    sequence: str  # aten or optimizer
    replacement: str
    pattern: str
    calls: int  # sequences matched, over every rank read
    host_ns: int  # the host time of their ops
    ranks: int
    where: tuple[tuple[str, int], ...] = ()  # code locations of their first op, most first


def _regex(pattern: str) -> re.Pattern[str]:
    """``softmax-(mul){0,1}-(add)`` -> ``(?:-softmax-)(?:-mul-){0,1}(?:-add-)`` over the joined
    sequence ``-op--op--op-``."""
    parts = []
    for part in pattern.split("-"):
        group = re.fullmatch(r"\(([\w.|]+)\)(.*)", part)
        names, suffix = (group[1], group[2]) if group else (part, "")
        alternatives = "|".join(f"-{re.escape(n.strip())}-" for n in names.split("|"))
        parts.append(f"(?:{alternatives}){suffix}")
    return re.compile("".join(parts))


_COMPILED = tuple(
    (sequence, replacement, pattern, _regex(pattern))
    for sequence, replacement, patterns in PATTERNS
    for pattern in patterns
)


@dataclass(frozen=True, slots=True)
class _Joined:
    """A sequence as ``-op--op-`` and where each op starts in it."""

    ranges: Sequence[Range]
    text: str
    starts: list[int]


def _joined(ranges: Sequence[Range]) -> _Joined:
    starts, at = [], 0
    for r in ranges:
        starts.append(at)
        at += len(r.name) + 2
    return _Joined(ranges, "".join(f"-{r.name}-" for r in ranges), starts)


def _matches(seq: _Joined, regex: re.Pattern[str]) -> list[tuple[int, str]]:
    """The host ns and the first op's code location of each non-overlapping match."""
    found = []
    for match in regex.finditer(seq.text):
        if match.end() == match.start():
            continue
        first = bisect_right(seq.starts, match.start()) - 1
        last = bisect_right(seq.starts, match.end() - 1)
        found.append((sum(r.dur_ns for r in seq.ranges[first:last]), seq.ranges[first].where))
    return found


def find(timelines: Sequence[Timeline]) -> tuple[Match, ...]:
    """Every pattern matched in some rank, most calls first."""
    joined = [{"aten": _joined(t.aten), "optimizer": _joined(t.optimizer)} for t in timelines]
    found = []
    for sequence, replacement, pattern, regex in _COMPILED:
        calls = host = ranks = 0
        where: dict[str, int] = {}
        for seqs in joined:
            hits = _matches(seqs[sequence], regex)
            calls, ranks = calls + len(hits), ranks + bool(hits)
            host += sum(ns for ns, _ in hits)
            for _, at in hits:
                if at:
                    where[at] = where.get(at, 0) + 1
        if calls:
            places = tuple(sorted(where.items(), key=lambda kv: (-kv[1], kv[0])))
            found.append(Match(sequence, replacement, pattern, calls, host, ranks, places))
    return tuple(sorted(found, key=lambda m: (-m.calls, m.replacement, m.pattern)))


def _where(m: Match) -> str:
    """Where the model code calls the sequence (its call stacks), or that the capture has none."""
    if not m.where:
        return " (no call stack in the capture: profile with with_stack=True to get its code line)"
    named = ", ".join(f"{at} {n} time(s)" for at, n in m.where[:PLACES_NAMED])
    more = len(m.where) - PLACES_NAMED
    return f", called from {named}" + (f" and {more} other place(s)" if more > 0 else "")


def _judge(timelines: Sequence[Timeline], t: Thresholds) -> tuple[Bottleneck, ...]:
    """One affinity_api finding naming each replacement whose sequences ran at least
    affinity_api_min_calls times, with their host time; () without a host timeline."""
    named = [m for m in find(timelines) if m.calls >= t.affinity_api_min_calls]
    if not named:
        return ()
    items = [
        f"{ATEN if m.sequence == 'aten' else OPTIMIZER}{m.pattern} ran {m.calls} time(s) in "
        f"{m.ranks} of "
        f"{len(timelines)} rank(s), {m.host_ns / 1e6:.3f} ms of host time: {m.replacement}"
        + _where(m)
        for m in named
    ]
    replacements = list(dict.fromkeys(m.replacement for m in named))
    return (
        Bottleneck(
            KIND,
            f"{len(replacements)} torch API(s) of the host timeline (trace_view.json or "
            f"PYTORCH_API) have an NPU-affine replacement (rule: msprof-analyze's affinity API "
            f"patterns, a pattern matched at least {t.affinity_api_min_calls} time(s)): "
            + "; ".join(items),
            ADVICE + " Here: use " + ", ".join(replacements) + ".",
            float(sum(m.calls for m in named)),
            float(t.affinity_api_min_calls),
        ),
    )


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    return _judge(e.timelines, t)
