"""fusible_ops: msprof-analyze's fusible operator rule, on the sequences readers/fusible.py found:
the rank whose sequences cover the largest share of its kernel table's span."""

from __future__ import annotations

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.findings import finding
from npumon.daemon.model.profile import Bottleneck, Thresholds

KIND = "fusible_ops"
ORDER = 110
ADVICE = (
    "The same short runs of operators recur many times and either leave the device "
    "waiting between launches (host-bound) or spend their time moving data (MTE-bound) "
    "(msprof-analyze's fusible operator analysis). Find the model code that launches them "
    "(a capture with with_stack=True), check that it uses the NPU-affine APIs (affinity_api), "
    "then fuse the run: a fused torch_npu operator where one exists (npu_rms_norm, "
    "npu_rotary_mul, npu_fusion_attention, npu_swiglu), graph mode (torchair), or ask the "
    "operator developers for a fused kernel."
)


def judge(e: Evidence, t: Thresholds) -> tuple[Bottleneck, ...]:
    """msprof-analyze's fusible operator rule (fusible.py): the rank whose reported sequences
    cover the largest share of its kernel table's span, over fusible_ops_ratio."""
    judged = [r for r in e.sequences if r.span_us > 0 and r.sequences]
    if not judged:
        return ()
    worst = max(judged, key=lambda r: (r.union_us / r.span_us, r.rank))
    share = worst.union_us / worst.span_us
    if share < t.fusible_ops_ratio:
        return ()
    named = "; ".join(
        f"{len(s.ops)} ops {s.ops[0]} ... {s.ops[-1]} x{s.count}, {s.wall_us / 1e3:.3f} ms "
        f"({'host' if s.host_bound else 'MTE'}-bound)"
        for s in worst.sequences[:3]
    )
    advisor_ms = sum(s.wall_us for s in worst.sequences) / 1e3
    return (
        finding(
            ADVICE,
            KIND,
            f"{worst.rank}: {len(worst.sequences)} operator sequence(s) of 3-10 compute tasks, "
            f"each recurring over {t.fusible_min_count} times host-bound (busy under "
            f"{t.fusible_host_ratio:.0%} of its wall time) or MTE-bound (MTE over "
            f"{t.fusible_mte_ratio:.0%} of aicore time), cover {worst.union_us / 1e3:.3f} ms, "
            f"{share:.0%} of its kernel table's {worst.span_us / 1e3:.3f} ms (counted once; "
            f"threshold {t.fusible_ops_ratio:.0%}; {len(judged)} rank(s) with such sequences; "
            "msprof-analyze's rule adds up the overlapping windows: "
            f"{advisor_ms:.3f} ms). Longest: " + named,
            share,
            t.fusible_ops_ratio,
        ),
    )
