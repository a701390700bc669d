"""The diagnosis rules: one module per finding kind, each a pure function of the profile's
typed evidence (evidence.py) and the thresholds (daemon/model/profile.py ``Thresholds``); none
reads a file.

A rule module holds ``ORDER`` (where its findings come in the report), ``ADVICE`` (and
``GRAPH_ADVICE`` where graph mode needs other advice) and
``judge(evidence, thresholds) -> tuple[Bottleneck, ...]``; ``OPERATOR_TABLE = True`` when it
judges the operator tables, which it then does only when they cover enough of the compute
(``withheld``); ``cannot_judge(evidence, thresholds) -> str | None`` when its data can show a
case it cannot weigh: why, said in the report instead of a finding. ``RULES`` is every module
of this package, found at import: adding a diagnosis is adding its module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

from npumon.daemon.analysis.evidence import Evidence, OpCoverage, coverage_of
from npumon.daemon.analysis.sizes import sized
from npumon.daemon.model.profile import Bottleneck, NotJudged, Thresholds

Judge = Callable[[Evidence, Thresholds], tuple[Bottleneck, ...]]
CannotJudge = Callable[[Evidence, Thresholds], str | None]


def _judges_all(_evidence: Evidence, _thresholds: Thresholds) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str  # the module's name: the finding kind it reports
    order: int
    judge: Judge
    operator_table: bool = False  # it judges the operator tables
    cannot_judge: CannotJudge = _judges_all  # why its data cannot be weighed, if so


def _discover() -> tuple[Rule, ...]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.append(
            Rule(
                info.name,
                module.ORDER,
                module.judge,
                getattr(module, "OPERATOR_TABLE", False),
                getattr(module, "cannot_judge", _judges_all),
            )
        )
    return tuple(sorted(found, key=lambda r: (r.order, r.kind)))


RULES = _discover()


DEFAULT_THRESHOLDS = Thresholds()


_NAMED_RANKS = 4  # ranks a withheld reason names, the lowest coverage first


def _percent(ratio: float) -> str:
    """One decimal, or two significant digits for a share under 0.1 % (never rounded to 0)."""
    return f"{ratio:.1%}" if ratio >= 0.001 else f"{ratio * 100:.2g}%"


def _coverage_reason(evidence: Evidence, t: Thresholds) -> str | None:
    """Why the operator-table rules cannot judge: the operator tables' time is under
    op_coverage_ratio of the computing time of the steps they cover (summed over the ranks
    that have both tables); None when they cover enough, or when no rank has both."""
    ratio = coverage_of(evidence.op_coverage)
    if ratio is None or ratio >= t.op_coverage_ratio:
        return None
    lowest = sorted(evidence.op_coverage, key=lambda c: (c.ratio is not None, c.ratio or 0.0))
    ranks = ", ".join(_rank_coverage(c) for c in lowest[:_NAMED_RANKS])
    if len(lowest) > _NAMED_RANKS:
        ranks += f" and {len(lowest) - _NAMED_RANKS} more rank(s)"
    return (
        f"the operator table covers {_percent(ratio)} of compute ({ranks}; threshold "
        f"{t.op_coverage_ratio:.0%}): operator findings withheld"
    )


def _rank_coverage(c: OpCoverage) -> str:
    ratio = "-" if c.ratio is None else _percent(c.ratio)
    return (
        f"{c.rank}: {c.op_us / 1e3:.3f} ms of operators against {c.compute_us / 1e3:.3f} ms "
        f"of computing in {c.steps} step(s), {ratio}"
    )


def withheld(
    evidence: Evidence, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> tuple[NotJudged, ...]:
    """The rules that do not judge this profile, each with why: the operator-table rules when
    the tables cover too little of the compute, then any rule's own ``cannot_judge``."""
    coverage = _coverage_reason(evidence, thresholds)
    found = []
    for rule in RULES:
        reason = coverage if rule.operator_table else None
        reason = reason or rule.cannot_judge(evidence, thresholds)
        if reason is not None:
            found.append(NotJudged(rule.kind, reason))
    return tuple(found)


def diagnose(
    evidence: Evidence, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> tuple[Bottleneck, ...]:
    """Every finding of every rule that judges (not ``withheld``) with its size (sizes.py),
    the largest first; findings of the same size (unmeasured ones) in the rules' order."""
    skipped = {n.kind for n in withheld(evidence, thresholds)}
    return sized(
        tuple(
            b
            for rule in RULES
            if rule.kind not in skipped
            for b in rule.judge(evidence, thresholds)
        ),
        evidence,
    )
