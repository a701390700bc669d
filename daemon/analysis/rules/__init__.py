"""The diagnosis rules: one module per finding kind, each a pure function of the profile's
typed evidence (evidence.py) and the thresholds (daemon/model/profile.py ``Thresholds``); none
reads a file.

A rule module holds ``ORDER`` (where its findings come in the report), ``ADVICE`` (and
``GRAPH_ADVICE`` where graph mode needs other advice) and
``judge(evidence, thresholds) -> tuple[Bottleneck, ...]``. ``RULES`` is every module of this
package, found at import: adding a diagnosis is adding its module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.sizes import sized
from npumon.daemon.model.profile import Bottleneck, Thresholds

Judge = Callable[[Evidence, Thresholds], tuple[Bottleneck, ...]]


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str  # the module's name: the finding kind it reports
    order: int
    judge: Judge


def _discover() -> tuple[Rule, ...]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.append(Rule(info.name, module.ORDER, module.judge))
    return tuple(sorted(found, key=lambda r: (r.order, r.kind)))


RULES = _discover()


DEFAULT_THRESHOLDS = Thresholds()


def diagnose(
    evidence: Evidence, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> tuple[Bottleneck, ...]:
    """Every finding of every rule with its size (sizes.py), the largest first; findings of
    the same size (unmeasured ones) in the rules' order."""
    return sized(tuple(b for rule in RULES for b in rule.judge(evidence, thresholds)), evidence)
