"""What every diagnosis rule (rules/) builds its finding with: the Bottleneck, the "over its
threshold" test, and the clauses findings share (figures per step, the checklist's tiers)."""

from __future__ import annotations

from npumon.daemon.model.profile import Bottleneck, Thresholds


def finding(advice: str, kind: str, detail: str, value: float, threshold: float) -> Bottleneck:
    return Bottleneck(kind, detail, advice, value, threshold)


def advice_for(mode: str | None, advice: str, graph_advice: str | None = None) -> str:
    """A rule's advice, its graph-mode wording when it has one and the profile is graph mode."""
    return graph_advice if mode == "graph" and graph_advice is not None else advice


def over(
    advice: str, kind: str, value: float | None, threshold: float, detail: str
) -> tuple[Bottleneck, ...]:
    """The finding when ``value`` is over ``threshold`` (``detail`` formatted with both), else
    none."""
    if value is None or value <= threshold:
        return ()
    detail = detail.format(value=value, threshold=threshold)
    return (finding(advice, kind, detail, value, threshold),)


def ms(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.3f} ms"


def share(ratio: float | None) -> str:
    return "" if ratio is None else f" ({ratio:.1%} of the step)"


def figures(ms: float | None, step_ms: float | None, unit: str = "step") -> str:
    """``X ms per step, mean step Y ms; `` with what is known (opens a threshold clause)."""
    parts = ([] if ms is None else [f"{ms:.3f} ms per {unit}"]) + (
        [] if step_ms is None else [f"mean {unit} {step_ms:.3f} ms"]
    )
    return ", ".join(parts) + "; " if parts else ""


def of_ops(op_total_ms: float | None, ratio: float | None) -> str:
    """``X ms of Y ms; ``: a share of operator time as time, when the total is known."""
    if op_total_ms is None or ratio is None:
        return ""
    return f"{ratio * op_total_ms:.3f} ms of {op_total_ms:.3f} ms; "


def tier(
    value: float,
    upper: float,
    lower: float,
    names: tuple[str, str, str],
    lower_inclusive: bool = False,
) -> str:
    """The checklist's three tiers of a share: over ``upper``, over ``lower`` (or at it when
    ``lower_inclusive``), the rest."""
    if value > upper:
        return names[0]
    return names[1] if value > lower or (lower_inclusive and value == lower) else names[2]


def busy_tier(computing: float | None, t: Thresholds) -> str:
    """The checklist's device-busy tier (computing over the step), as a clause."""
    if computing is None:
        return ""
    names = ("good", "room to improve", "low")  # "low" is below device_busy_low, not at it
    named = tier(computing, t.device_busy_good, t.device_busy_low, names, lower_inclusive=True)
    return (
        f"; the device computes {computing:.0%} of the step ({named}: checklist > "
        f"{t.device_busy_good:.0%} good, < {t.device_busy_low:.0%} low)"
    )


def transfer_tier(transfer: float | None, t: Thresholds) -> str:
    """The checklist's data-transfer tier (transit, not waiting, over the step), as a clause."""
    if transfer is None:
        return ""
    named = tier(
        transfer,
        t.communication_ratio,
        t.communication_notice_ratio,
        ("severe", "attention", "fine"),
    )
    return (
        f"; data transfer (the communication table's transit, not waiting) is {transfer:.1%} of"
        f" the step ({named}: checklist > {t.communication_notice_ratio:.0%} attention, > "
        f"{t.communication_ratio:.0%} severe)"
    )
