"""The fault catalog's series through the real rule engines, on a compressed clock.

Prometheus: one `promtool test rules` file, a test group per scenario (its series as
input_series, one scrape every 15 s, rules every 30 s); the group's single promql_expr_test asks,
at the scenario's end, for the first and last time each alert was firing (from the engine's own
ALERTS series) and expects nothing, so promtool prints what it got.

VictoriaMetrics: every scenario's samples imported with their timestamps into a real
victoria-metrics, then `vmalert -replay.*` evaluates the same rules file over the range and writes
ALERTS back by remote write; /api/v1/export reads them.

Both give ``Firing`` rows: which alert, its labels, first and last firing second after the
scenario start.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from npumon.simulator.fault_catalog import Scenario, SeriesMap, series
from tests.helpers.processes import listening_port, stop
from tests.helpers.wait import scaled, wait_for

EVALUATION = 30  # seconds between rule evaluations on both engines
EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z: every scenario starts here on VictoriaMetrics
# promtool's Go runtime collects garbage at 4x the live heap instead of 2x: a fifth less CPU on
# the catalog for about 100 MB more memory
PROMTOOL_ENV = {**os.environ, "GOGC": "400"}


@dataclass(frozen=True)
class Firing:
    scenario: str
    alertname: str
    labels: tuple[tuple[str, str], ...]
    first: float  # seconds after the scenario start
    last: float


def generate(scenarios: Iterable[Scenario]) -> dict[str, SeriesMap]:
    """Each scenario's series by scenario name: built once and given to every engine."""
    return {scenario.name: series(scenario) for scenario in scenarios}


def _inputs(scenario: Scenario, inputs: Mapping[str, SeriesMap] | None) -> SeriesMap:
    return inputs[scenario.name] if inputs is not None else series(scenario)


def scenario_of(labels: dict[str, str]) -> str:
    """Each scenario is its own ``cluster`` (fault_catalog._Node)."""
    return labels.get("cluster", "?")


# ------------------------------------------------------------------------------------ promtool
def _number(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value))


def encode(values: list[float | None]) -> str:
    """promtool's expanding notation: runs of a constant step as ``a+bxn``, gaps as ``_``, a
    staleness marker where a series ends (as a real scrape writes)."""
    out: list[str] = []
    i = 0
    previous: float | None = None
    while i < len(values):
        value = values[i]
        if value is None:
            out.append("stale" if previous is not None else "_")
            previous = None
            i += 1
            continue
        j = i
        delta = values[i + 1] - value if i + 1 < len(values) and values[i + 1] is not None else 0.0  # type: ignore[operator]
        while j + 1 < len(values) and values[j + 1] is not None:
            step = values[j + 1] - values[j]  # type: ignore[operator]
            if abs(step - delta) > 1e-9 * max(1.0, abs(delta)):
                break
            j += 1
        if j == i:
            out.append(_number(value))
        elif delta == 0:
            out.append(f"{_number(value)}x{j - i}")
        else:
            sign = "+" if delta > 0 else "-"
            out.append(f"{_number(value)}{sign}{_number(abs(delta))}x{j - i}")
        previous = values[j]
        i = j + 1
    return " ".join(out)


def _selector(name: str, labels: tuple[tuple[str, str], ...]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in labels)
    return f"{name}{{{inner}}}"


_FIRING = 'ALERTS{alertstate="firing"}'


def evaluation(scenario: Scenario) -> int:
    """Seconds between rule evaluations: every 30 s, or every scrape where that is longer."""
    return int(max(EVALUATION, scenario.step))


def _promql(end: float, interval: int) -> str:
    window = f"{int(end)}s:{interval}s"
    first = f"min_over_time(timestamp({_FIRING})[{window}])"
    last = f"max_over_time(timestamp({_FIRING})[{window}])"
    return (
        f'label_replace({first}, "edge", "first", "", "")'
        f' or label_replace({last}, "edge", "last", "", "")'
    )


def promtool_file(
    rules: Path,
    scenarios: list[Scenario],
    path: Path,
    interval: int | None = None,
    inputs: Mapping[str, SeriesMap] | None = None,
) -> None:
    """All ``scenarios`` (of one evaluation interval) side by side in one test group: each has
    its own ``cluster``, and the rules' work per evaluation is mostly per rule, not per series.
    ``interval``: seconds between rule evaluations, if not the catalog's (``evaluation``);
    ``inputs``: the scenarios' series if already built (``generate``)."""
    end = max(s.duration for s in scenarios)
    interval = interval or evaluation(scenarios[0])
    test = {
        "interval": f"{int(scenarios[0].step)}s",
        "input_series": [
            {"series": _selector(name, labels), "values": encode(values)}
            for scenario in scenarios
            for (name, labels), values in _inputs(scenario, inputs).items()
        ],
        "promql_expr_test": [
            {"expr": _promql(end, interval), "eval_time": f"{int(end)}s", "exp_samples": []}
        ],
    }
    document = {
        "rule_files": [str(rules)],
        "evaluation_interval": f"{interval}s",
        "tests": [test],
    }
    # libyaml's emitter: the pure-Python one takes seconds on the catalog's series
    path.write_text(yaml.dump(document, Dumper=yaml.CSafeDumper, sort_keys=False, width=1 << 20))


_SAMPLE = re.compile(r"\{([^{}]*)\} ([-+.0-9eE]+|NaN)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _rows(
    samples: Iterable[tuple[dict[str, str], float]], starts: dict[str, float]
) -> list[Firing]:
    """(labels with edge first/last, unix-ish time) -> one Firing per alert series."""
    edges: dict[tuple[tuple[str, str], ...], dict[str, float]] = {}
    for labels, value in samples:
        edge = labels.pop("edge")
        labels.pop("alertstate", None)
        labels.pop("__name__", None)
        labels.pop("alertgroup", None)
        edges.setdefault(tuple(sorted(labels.items())), {})[edge] = value
    out = []
    for key, seen in edges.items():
        labels = dict(key)
        scenario = scenario_of(labels)
        start = starts.get(scenario, 0.0)
        out.append(
            Firing(
                scenario=scenario,
                alertname=labels.pop("alertname"),
                labels=tuple(sorted(labels.items())),
                first=seen["first"] - start,
                last=seen["last"] - start,
            )
        )
    return sorted(out, key=lambda f: (f.scenario, f.alertname, f.labels))


def run_promtool(
    rules: Path,
    scenarios: list[Scenario],
    workdir: Path,
    interval: int | None = None,
    inputs: Mapping[str, SeriesMap] | None = None,
) -> list[Firing]:
    """One `promtool test rules` per evaluation interval, run side by side, on the rules as one
    group in dependency order (promtool evaluates separate groups in no fixed order, so an alert
    would read the recording rule of this evaluation or of the previous one by chance).
    ``interval``: evaluate every so many seconds instead of the catalog's (a scaled replay);
    ``inputs``: the scenarios' series if already built (``generate``)."""
    ordered = workdir / "rules.yml"
    levels = rule_levels(rules)
    flat = [rule for level in levels for group in level["groups"] for rule in group["rules"]]  # type: ignore[attr-defined]
    ordered.write_text(yaml.safe_dump({"groups": [{"name": "npumon", "rules": flat}]}))
    rules = ordered
    classes: dict[int, list[Scenario]] = {}
    for scenario in scenarios:
        classes.setdefault(interval or evaluation(scenario), []).append(scenario)
    if any({s.step for s in members} != {members[0].step} for members in classes.values()):
        raise AssertionError("scenarios of one evaluation interval must share their scrape step")
    running = []
    for interval, members in sorted(classes.items()):
        path = workdir / f"catalog-{interval}s.test.yml"
        promtool_file(rules, members, path, interval, inputs)
        running.append(
            subprocess.Popen(
                ["promtool", "test", "rules", path.name],
                cwd=workdir,
                env=PROMTOOL_ENV,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    samples = []
    for process in running:
        output, _ = process.communicate(timeout=scaled(600))
        got = [line.split("got:", 1)[1] for line in output.splitlines() if "got:" in line]
        if process.returncode != 0 and not got:
            raise AssertionError(f"promtool failed:\n{output[-4000:]}")
        for line in got:
            for labels, value in _SAMPLE.findall(line):
                samples.append((dict(_LABEL.findall(labels)), float(value)))
    return _rows(samples, {s.name: 0.0 for s in scenarios})


# ------------------------------------------------------------------- VictoriaMetrics + vmalert
@contextmanager
def victoria_metrics(workdir: Path) -> Iterator[str]:
    """A real victoria-metrics on loopback (port 0, read back from the process)."""
    log = workdir / "victoria-metrics.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                "victoria-metrics",
                f"-storageDataPath={workdir / 'vmdata'}",
                "-httpListenAddr=127.0.0.1:0",
                "-retentionPeriod=100y",
                "-search.disableCache",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        ports: list[int] = []

        def listening() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"victoria-metrics exited; see {log}")
            port = listening_port(process.pid)
            if port:
                ports.append(port)
            return bool(ports)

        wait_for(listening, 60, "victoria-metrics to listen", poll=0.1)
        url = f"http://127.0.0.1:{ports[0]}"
        wait_for(
            lambda: _get(f"{url}/health") == b"OK",
            60,
            "victoria-metrics /health",
            tolerate=(OSError,),
            poll=0.1,
        )
        yield url
    finally:
        stop(process)


def _get(url: str, data: bytes | None = None) -> bytes:
    request = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    with urllib.request.urlopen(request, timeout=scaled(60)) as response:
        body: bytes = response.read()
        return body


def _import_lines(scenario: Scenario, built: SeriesMap) -> Iterator[str]:
    step = int(scenario.step * 1000)
    for (name, labels), values in built.items():
        times = [EPOCH * 1000 + i * step for i, v in enumerate(values) if v is not None]
        kept = [v for v in values if v is not None]
        if name.endswith("_timestamp_seconds"):  # seconds after the scenario start: + the epoch
            kept = [v + EPOCH for v in kept]
        if kept:
            metric = {"__name__": name, **dict(labels)}
            yield json.dumps({"metric": metric, "values": kept, "timestamps": times})


def _rfc3339(unix: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix))


_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def rule_levels(rules: Path) -> list[dict[str, object]]:
    """The rules file split into files by dependency level: level 0 reads only scraped series,
    level n reads recording rules of levels below n. Replayed one level after the other, every
    recording rule a rule reads is written (and flushed) before that rule is evaluated: what
    vmalert's -replay.rulesDelay waits a second per rule for."""
    groups = yaml.safe_load(rules.read_text())["groups"]
    recorded = {r["record"] for g in groups for r in g["rules"] if "record" in r}
    level: dict[str, int] = {}
    pending = [(g["name"], r) for g in groups for r in g["rules"]]
    files: list[dict[str, object]] = []
    placed: list[tuple[int, str, dict[str, object]]] = []
    while pending:
        later = []
        for group, rule in pending:
            reads = set(_NAME.findall(str(rule["expr"]))) & recorded
            if reads - level.keys():
                later.append((group, rule))
                continue
            mine = 1 + max((level[name] for name in reads), default=-1)
            if "record" in rule:
                level[str(rule["record"])] = max(level.get(str(rule["record"]), 0), mine)
            placed.append((mine, group, rule))
        if len(later) == len(pending):
            raise AssertionError(f"recording rules read each other in a cycle: {later}")
        pending = later
    for depth in range(max(p[0] for p in placed) + 1):
        by_group: dict[str, list[dict[str, object]]] = {}
        for mine, group, rule in placed:
            if mine == depth:
                by_group.setdefault(group, []).append(rule)
        files.append({"groups": [{"name": n, "rules": r} for n, r in by_group.items()]})
    return files


def run_vmalert(
    rules: Path,
    scenarios: list[Scenario],
    workdir: Path,
    inputs: Mapping[str, SeriesMap] | None = None,
) -> list[Firing]:
    end = EPOCH + max(s.duration for s in scenarios)
    with victoria_metrics(workdir) as url:
        body = "\n".join(line for s in scenarios for line in _import_lines(s, _inputs(s, inputs)))
        _get(f"{url}/api/v1/import", body.encode())
        _get(f"{url}/internal/force_flush")
        for depth, level in enumerate(rule_levels(rules)):
            for group in level["groups"]:  # type: ignore[attr-defined]
                for rule in group["rules"]:
                    # vmalert's replay mode refuses the `query` template function (the owner
                    # annotation); annotations are no part of an alert's identity or timing
                    rule.pop("annotations", None)
            path = workdir / f"rules-{depth}.yml"
            path.write_text(yaml.safe_dump(level, sort_keys=False))
            _replay(url, path, end, workdir / f"vmalert-{depth}.log")
            _get(f"{url}/internal/force_flush")
        query = urllib.parse.urlencode(
            {"match[]": _FIRING, "start": str(EPOCH), "end": str(int(end) + EVALUATION)}
        )
        exported = _get(f"{url}/api/v1/export?{query}").decode()
    samples = []
    for line in exported.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        stamps = sorted(t / 1000 - EPOCH for t in item["timestamps"])
        samples.append(({**item["metric"], "edge": "first"}, stamps[0]))
        samples.append(({**item["metric"], "edge": "last"}, stamps[-1]))
    return _rows(samples, {})


def _replay(url: str, rules: Path, end: float, log: Path) -> None:
    with log.open("wb") as out:
        result = subprocess.run(
            [
                "vmalert",
                f"-rule={rules}",
                f"-datasource.url={url}",
                f"-remoteWrite.url={url}",
                f"-replay.timeFrom={_rfc3339(EPOCH)}",
                f"-replay.timeTo={_rfc3339(end)}",
                "-replay.disableProgressBar",
                # one level's rules do not read each other (rule_levels)
                "-replay.rulesDelay=0s",
                # the step of every query is the evaluation interval, not 5 minutes
                "-datasource.queryStep=0",
                f"-evaluationInterval={EVALUATION}s",
                "-replay.maxDatapointsPerQuery=10000",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=scaled(600),
            check=False,
        )
    if result.returncode != 0:
        raise AssertionError(f"vmalert replay failed; see {log}:\n{log.read_text()[-4000:]}")


def run(
    engine: str,
    rules: Path,
    scenarios: list[Scenario],
    inputs: Mapping[str, SeriesMap] | None = None,
) -> list[Firing]:
    with tempfile.TemporaryDirectory(prefix=f"npumon-alerts-{engine}-") as tmp:
        if engine == "prometheus":
            return run_promtool(rules, scenarios, Path(tmp), inputs=inputs)
        return run_vmalert(rules, scenarios, Path(tmp), inputs)


def run_engines(
    engines: Iterable[str], rules: Path, scenarios: list[Scenario]
) -> dict[str, list[Firing]]:
    """Every engine over the same scenarios, their series built once. The engines run side by
    side: each thread mostly waits on its own promtool, victoria-metrics or vmalert process."""
    inputs = generate(scenarios)
    names = list(engines)
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = {e: pool.submit(run, e, rules, scenarios, inputs) for e in names}
        return {engine: future.result() for engine, future in futures.items()}
