"""The fault catalog (fault_catalog.yaml) as the metric series npumon serves for each scenario.

Each scenario is a timeline of events on a small node (two 910B3 chips, or what the scenario
names); ``series(scenario)`` gives, per scrape (every ``STEP`` seconds), the samples a scrape of
npumon would return: the families and labels of the exporter (tests/fixtures/nodes/*/expected.prom
holds real expositions with the same names; the network, optical and interconnect families are
the default collectors' per-port and per-chip aggregates, not the detail ones), plus the scrape's
own ``up``. Every series carries
the target labels ``cluster`` (the scenario's name: the rules aggregate per cluster, so scenarios
replayed side by side do not meet), ``instance`` (``<scenario>-<node>``) and ``job``. A value
None is no sample at that scrape (the series is gone: a card off the bus, a failed scrape).

The tests replay these series through Prometheus (promtool) and VictoriaMetrics + vmalert
(tests/alerts/); nothing here knows of either engine.
"""

from __future__ import annotations

import math
import random
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CATALOG = Path(__file__).with_name("fault_catalog.yaml")
STEP = 15  # seconds between scrapes, unless a scenario says `scrape`
JOB = "npumon"
RATED_HZ = 1.8e9
HBM_TOTAL = 64 * 2**30
PFC_QUIET_PER_SECOND = 2.0  # pause frames a healthy lossless fabric still sends now and then
RX_POWER_W = 0.0010  # a healthy lane: -0 dBm
RX_LOW_W = 0.0001  # the module's low alarm threshold (-10 dBm)
RX_HIGH_W = 0.0035

UB_PORTS = ("4", "5", "6")  # a 950 chip's UB ports the catalog serves
HEARTBEAT_LOST = "40F84E00"  # the driver's heartbeat-loss code (simulator/state.py)
DEFAULT_OWNER = ("ml", "train-0", "trainer")
Labels = tuple[tuple[str, str], ...]
SeriesMap = dict[tuple[str, Labels], list[float | None]]


class CatalogError(ValueError):
    """A catalog entry that cannot be turned into series (names the scenario)."""


def seconds(text: str | float | int) -> float:
    """'90s', '10m', '2h', '1h30m' or a number of seconds."""
    if isinstance(text, int | float):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhd])", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise CatalogError(f"not a duration: {text!r} (e.g. 90s, 10m, 2h)")
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(float(n) * unit[u] for n, u in parts)


@dataclass(frozen=True)
class Chip:
    npu: int
    chip: int = 0
    name: str = "910B3"
    owner: tuple[str, str, str] | None = DEFAULT_OWNER  # namespace, pod, container
    utilization: float = 0.9
    process: str | None = None  # the process npu-smi lists on the chip (its name), if any
    role_label: str | None = None  # the holding pod's npumon.io/role label (kube_pod_labels)


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str  # "fault" or "must_not_page"
    about: str
    duration: float
    fault_start: float
    events: tuple[dict[str, Any], ...]
    chips: tuple[Chip, ...]
    nodes: int
    expect: tuple[str, ...]
    also: tuple[str, ...]
    resolves: float | None  # every expected alert resolves within this of the fault's end
    step: float  # seconds between scrapes
    seed: int = field(default=0)
    # expected alert -> distinct alerts it may raise (absent: 1)
    identities: dict[str, int] = field(default_factory=dict)
    guards: tuple[str, ...] = ()  # must_not_page: the alerts this near miss is the twin of
    # expected alert -> labels every alert it raises carries (what it must name)
    names: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Catalog:
    delays: dict[str, float]  # alert -> the delay its runbook states (seconds)
    scenarios: tuple[Scenario, ...]


def _owner(value: Any) -> tuple[str, str, str] | None:
    """[namespace, pod, container] or null (nobody holds the chip)."""
    if value is None:
        return None
    namespace, pod, container = (str(v) for v in value)
    return namespace, pod, container


def load(path: Path = CATALOG) -> Catalog:
    data = yaml.safe_load(path.read_text())
    delays = {name: seconds(spec["delay"]) for name, spec in data["alerts"].items()}
    scenarios = []
    for raw in data["scenarios"]:
        name = raw["name"]
        try:
            chips = tuple(
                Chip(
                    npu=c["npu"],
                    chip=c.get("chip", 0),
                    name=c.get("name", "910B3"),
                    owner=_owner(c.get("owner", DEFAULT_OWNER)),
                    utilization=c.get("utilization", 0.9),
                    process=c.get("process"),
                    role_label=c.get("role_label"),
                )
                for c in raw.get("chips", [{"npu": 0}, {"npu": 1}])
            )
            events = tuple(raw.get("events", ()))
            # the fault starts with its first event; `background` events are the setting
            starts = [seconds(e.get("start", 0)) for e in events if not e.get("background")]
            scenario = Scenario(
                name=name,
                kind=raw["kind"],
                about=raw["about"],
                duration=seconds(raw["duration"]),
                fault_start=min(starts) if starts else 0.0,
                events=events,
                chips=chips,
                nodes=raw.get("nodes", 1),
                expect=tuple(raw.get("expect", ())),
                also=tuple(raw.get("also", ())),
                resolves=seconds(raw["resolves"]) if "resolves" in raw else None,
                identities={str(k): int(v) for k, v in raw.get("identities", {}).items()},
                guards=tuple(raw.get("guards", ())),
                names={
                    str(alert): {str(k): str(v) for k, v in labels.items()}
                    for alert, labels in raw.get("names", {}).items()
                },
                step=seconds(raw.get("scrape", STEP)),
                seed=zlib.crc32(name.encode()),  # by name: adding a scenario moves no other
            )
        except (KeyError, TypeError) as error:
            raise CatalogError(f"scenario {name}: {error!r}") from error
        if scenario.kind not in ("fault", "must_not_page"):
            raise CatalogError(f"scenario {name}: kind must be fault or must_not_page")
        if set(scenario.names) - set(scenario.expect):
            raise CatalogError(f"scenario {name}: `names` only for alerts it expects")
        if scenario.guards and scenario.kind != "must_not_page":
            raise CatalogError(f"scenario {name}: only a must_not_page case guards alerts")
        for alert in scenario.expect + scenario.also + scenario.guards:
            if alert not in delays:
                raise CatalogError(f"scenario {name}: {alert} has no stated delay under alerts")
        scenarios.append(scenario)
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise CatalogError("scenario names must be unique")
    return Catalog(delays, tuple(scenarios))


def _window(event: dict[str, Any], duration: float) -> tuple[float, float]:
    return seconds(event.get("start", 0)), seconds(event.get("end", duration))


def _active(event: dict[str, Any], t: float, duration: float) -> bool:
    """Inside the event's window and, for a periodic event, in the 'on' part of its period."""
    start, end = _window(event, duration)
    if not start <= t < end:
        return False
    if "period" not in event:
        return True
    return (t - start) % seconds(event["period"]) < seconds(event["lasting"])


def _matches(event: dict[str, Any], chip: Chip) -> bool:
    return int(event.get("npu", chip.npu)) == chip.npu and int(event.get("chip", 0)) == chip.chip


class _Node:
    """One node's series over the scenario, built scrape by scrape."""

    def __init__(self, scenario: Scenario, node: int) -> None:
        self.s = scenario
        self.instance = f"{scenario.name}-{node}"
        self.node = node
        self.step = scenario.step
        self.steps = int(scenario.duration // self.step) + 1
        self.out: SeriesMap = {}
        self.rng = random.Random(f"{scenario.seed}-{node}")
        self.target = {"cluster": scenario.name, "instance": self.instance, "job": JOB}
        # the series key of each (metric, labels as passed): built and sorted once
        self.keys: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[str, Labels]] = {}
        self.by_kind: dict[str, list[dict[str, Any]]] = {}
        for e in scenario.events:
            if int(e.get("node", node)) == node:
                self.by_kind.setdefault(e["kind"], []).append(e)
        # capture k of a workload is the same whenever asked (its own seed): computed once
        self.captures: dict[tuple[int, int], tuple[int, float, float, float]] = {}

    def put(self, index: int, metric: str, value: float | None, **labels: str) -> None:
        passed = (metric, tuple(labels.items()))
        key = self.keys.get(passed)
        if key is None:
            key = self.keys[passed] = (metric, tuple(sorted({**self.target, **labels}.items())))
        column = self.out.get(key)
        if column is None:
            column = self.out[key] = [None] * self.steps
        column[index] = value

    def events(self, kind: str) -> list[dict[str, Any]]:
        return self.by_kind.get(kind, [])

    def any_active(self, kind: str, t: float, chip: Chip | None = None) -> dict[str, Any] | None:
        for event in self.events(kind):
            if (chip is None or _matches(event, chip)) and _active(event, t, self.s.duration):
                return event
        return None

    def build(self) -> SeriesMap:
        counters: dict[str, float] = {}
        for join in self.events("join"):
            counters.update({k: float(v) for k, v in join.get("counters", {}).items()})
        for index in range(self.steps):
            t = index * self.step
            if not self.joined(t):
                continue
            if self.any_active("restart", t):
                self.put(index, "up", 0.0)
                continue
            if self.events("unmonitored"):  # the node as kube-state-metrics sees it
                self.put(
                    index,
                    "kube_node_labels",
                    1.0,
                    node=self.instance,
                    label_accelerator="huawei-Ascend910",
                )
            if self.any_active("unmonitored", t):  # no npumon target on the node at all
                continue
            self.put(index, "up", 1.0)
            for chip in self.s.chips:
                if self.any_active("off_bus", t, chip):
                    continue
                self.chip(index, t, chip, counters)
            for workload in self.events("step_time"):
                self.step_time(index, t, workload)
            self.agent(index, t, counters)
        return self.out

    def agent(self, index: int, t: float, counters: dict[str, float]) -> None:
        """npumon's own series where a scenario has events about them: its sources, its
        profiler's captures and bottleneck verdicts, the ranks of a job across nodes."""
        for event in self.events("source_failing"):
            source = str(event["source"])
            start, end = _window(event, self.s.duration)
            withdrawn = "withdrawn" in event and t >= seconds(event["withdrawn"])
            if withdrawn:  # turned off by a reload: its series leave (exporter: withdraw)
                continue
            failing = start <= t < end
            last = f"{source}/last_success"
            if not failing:
                counters[last] = t
            self.put(index, "npumon_source_up", 0.0 if failing else 1.0, source=source)
            # a timestamp: seconds after the scenario start (each engine adds its epoch)
            self.put(
                index,
                "npumon_source_last_success_timestamp_seconds",
                counters.get(last, 0.0),
                source=source,
            )
        for event in self.events("captures"):
            # one capture every 10 minutes: its result, counted per result
            every = seconds(event.get("every", "10m"))
            if index == 0 or int(t // every) != int((t - self.step) // every):
                result = "failed" if _active(event, t, self.s.duration) else "ok"
                if "failed_every" in event and result == "failed":
                    k = int(t // every)
                    result = "failed" if k % int(event["failed_every"]) == 0 else "ok"
                counters[f"captures/{result}"] = counters.get(f"captures/{result}", 0.0) + 1
            for result in ("ok", "failed"):
                self.put(
                    index,
                    "npumon_captures_total",
                    counters.get(f"captures/{result}", 0.0),
                    result=result,
                )
        for event in self.events("bottleneck"):
            on = _active(event, t, self.s.duration)
            for kind in ("input_pipeline", "format_conversion"):
                self.put(
                    index,
                    "npu_profile_bottleneck",
                    1.0 if on and kind == event["bottleneck"] else 0.0,
                    workload=str(event["workload"]),
                    kind=kind,
                )
        for event in self.events("ranks"):
            # this node's ranks of a job: computing seconds per step, `slower` on `slow_node`
            slow = int(event.get("slow_node", -1)) == self.node and _active(
                event, t, self.s.duration
            )
            per_node = int(event.get("ranks_per_node", 2))
            first_npu = int(event.get("first_npu", 0))
            for local in range(per_node):
                # the daemon's rank label (exporters/profiles.py) and the chip the rank runs on
                rank, npu = f"rank{self.node * per_node + local}", str(first_npu + local)
                value = float(event["seconds"]) * (1 + self.rng.uniform(-0.01, 0.01))
                if slow and local == int(event.get("slow_local", 0)):
                    value *= 1 + float(event["slower"])
                workload = str(event["workload"])
                self.put(index, "npu_rank_npu_info", 1.0, workload=workload, rank=rank, npu=npu)
                self.put(
                    index,
                    "npu_rank_step_duration_seconds",
                    round(value, 6),
                    workload=workload,
                    rank=rank,
                    stat="computing",
                )

    def joined(self, t: float) -> bool:
        """Before its `join`, the node is not a target: no series at all, not even `up`."""
        return all(t >= seconds(join["start"]) for join in self.events("join"))

    def chip(self, index: int, t: float, chip: Chip, counters: dict[str, float]) -> None:
        ids = {"npu": str(chip.npu), "chip": str(chip.chip)}
        put = self.put
        put(index, "npu_chip_info", 1.0, name=chip.name, **ids)
        health = self.any_active("health", t, chip)
        if health is not None or self.events("health"):
            state = str(health["state"]) if health is not None else "ok"
            for s in ("ok", "warning", "alarm", "critical", "unknown"):
                put(index, "npu_health_state", 1.0 if s == state else 0.0, state=s, **ids)
            for code, level in (health or {}).get("codes", []):
                put(index, "npu_error_code_info", 1.0, code=str(code), level=str(level), **ids)
        elif self.events("heartbeat_lost"):
            # npumon keeps serving a chip whose heartbeat is lost: its identity, its owner, the
            # state heartbeat_lost and the driver's code; no readings (npu-smi prints zeros)
            lost = self.any_active("heartbeat_lost", t, chip) is not None
            put(index, "npu_health_state", 0.0 if lost else 1.0, state="ok", **ids)
            put(index, "npu_health_state", 1.0 if lost else 0.0, state="heartbeat_lost", **ids)
            if lost:
                put(
                    index,
                    "npu_error_code_info",
                    1.0,
                    code=HEARTBEAT_LOST,
                    level="restart_npu",
                    **ids,
                )
                self.owner(index, t, chip, ids)
                return
        else:
            put(index, "npu_health_state", 1.0, state="ok", **ids)
        # temperature, clocks, throttling (npumon judges the reason: thermal only at the limit)
        temperature = 55.0 + self.rng.uniform(-1, 1)
        frequency = RATED_HZ
        reason: str | None = None
        hot = self.any_active("hot", t, chip)
        if hot is not None:
            temperature = float(hot["celsius"]) + self.rng.uniform(-0.5, 0.5)
        throttle = self.any_active("throttle", t, chip)
        if throttle is not None:
            frequency = 1.1e9
            start, _ = _window(throttle, self.s.duration)
            period = seconds(throttle.get("period", self.s.duration))
            on_end = (
                start + ((t - start) // period) * period + seconds(throttle.get("lasting", period))
            )
            # the first and last scrape of an episode read below the limit: reason unknown
            lasting = seconds(throttle.get("lasting", period))
            edge = lasting > 2 * self.step and (
                (t - start) % period < self.step or on_end - t <= self.step
            )
            by = str(throttle.get("reason", "thermal"))  # power: at the power limit, not hot
            temperature = 70.0 if by == "power" else 84.0 if edge else 96.0
            reason = "unknown" if edge else by
        for r in ("thermal", "power", "unknown"):
            put(index, "npu_throttled", 1.0 if r == reason else 0.0, reason=r, **ids)
        put(index, "npu_temperature_celsius", round(temperature, 1), **ids)
        put(index, "npu_aicore_frequency_hertz", frequency, **ids)
        put(index, "npu_aicore_rated_frequency_hertz", RATED_HZ, **ids)
        # load and ownership
        utilization = chip.utilization
        load = self.any_active("load", t, chip)
        if load is not None:
            utilization = float(load["percent"]) / 100
            if "noise" in load:
                utilization += self.rng.uniform(-1, 1) * float(load["noise"]) / 100
        utilization = min(1.0, max(0.0, utilization + self.rng.uniform(-0.02, 0.02)))
        put(index, "npu_aicore_utilization_ratio", round(utilization, 3), **ids)
        put(index, "npu_profiling_active", 0.0, **ids)
        held = chip.owner is not None
        put(index, "npu_hbm_total_bytes", float(HBM_TOTAL), **ids)
        put(index, "npu_hbm_used_bytes", float(HBM_TOTAL * (0.8 if held else 0.06)), **ids)
        self.owner(index, t, chip, ids)
        if chip.process is not None:  # npu-smi's process list, the pod's owner attributed
            namespace, pod, container = chip.owner or ("", "", "")
            owner = {"namespace": namespace, "pod": pod, "container": container}
            put(
                index,
                "npu_process_hbm_used_bytes",
                float(HBM_TOTAL * 0.7),
                pid=str(4000 + chip.npu),
                process_name=chip.process,
                **{k: v for k, v in owner.items() if v},
                **ids,
            )
        self.counters(index, t, chip, ids, counters)

    def owner(self, index: int, t: float, chip: Chip, ids: dict[str, str]) -> None:
        """The kubelet's answer: who holds the chip (pod-resources), whatever the chip does."""
        put = self.put
        if chip.owner is not None:
            namespace, pod, container = chip.owner
            churn = self.any_active("pod_churn", t, chip)
            if churn is not None:  # the job's pod is replaced every `every`: a new name each time
                start, _ = _window(churn, self.s.duration)
                pod = f"{pod}-{int((t - start) // seconds(churn['every']))}"
            if chip.role_label is not None:  # kube-state-metrics, the label allow-listed
                put(
                    index,
                    "kube_pod_labels",
                    1.0,
                    namespace=namespace,
                    pod=pod,
                    label_npumon_io_role=chip.role_label,
                )
            put(index, "npu_chip_allocated", 1.0, **ids)
            put(
                index,
                "npu_chip_allocation_info",
                1.0,
                namespace=namespace,
                pod=pod,
                container=container,
                **ids,
            )
        else:
            put(index, "npu_chip_allocated", 0.0, **ids)

    def counters(
        self, index: int, t: float, chip: Chip, ids: dict[str, str], counters: dict[str, float]
    ) -> None:
        """The device counters and the interconnect's readings of one chip."""
        put = self.put
        # lifetime hardware counters: device counters, kept across exporter restarts
        key = f"{self.instance}/{chip.npu}/{chip.chip}"

        def count(name: str, per_second: float, start: float = 0.0) -> float:
            value = (
                counters.get(f"{key}/{name}", counters.get(name, start)) + per_second * self.step
            )
            counters[f"{key}/{name}"] = value
            return value

        ecc = self.any_active("ecc_burst", t, chip)
        ecc_rate = float(ecc["per_second"]) if ecc else 0.0
        put(index, "npu_hbm_ecc_errors_total", count("ecc_double", ecc_rate), bits="double", **ids)
        put(index, "npu_hbm_ecc_errors_total", count("ecc_single", 0.0), bits="single", **ids)
        hccs = self.any_active("hccs_crc_burst", t, chip)
        # the default interconnect collector: CRC errors summed over the chip's HCCS links
        put(
            index,
            "npu_hccs_errors_total",
            count("hccs_crc", float(hccs["per_second"]) if hccs else 0.0),
            kind="crc",
            **ids,
        )
        port = {"port": "0", **ids}
        storm = self.any_active("pfc_storm", t, chip)
        pfc = float(storm["per_second"]) if storm else PFC_QUIET_PER_SECOND
        put(
            index,
            "npu_network_pause_frames_total",
            count("pfc_receive", pfc),
            kind="pfc",
            direction="receive",
            **port,
        )
        down = self.any_active("link_down", t, chip) or self.any_active("flap", t, chip)
        was_down = counters.get(f"{key}/down", 0.0)
        if was_down and not down:  # the link came back: one more up transition
            counters[f"{key}/carrier_up"] = (
                counters.get(f"{key}/carrier_up", counters.get("carrier_up", 0.0)) + 1
            )
        counters[f"{key}/down"] = 1.0 if down else 0.0
        put(index, "npu_network_up", 0.0 if down else 1.0, **port)
        put(
            index,
            "npu_network_carrier_up_changes_total",
            count("carrier_up", 0.0),
            **port,
        )
        if self.events("ub_link_down") or self.events("ub_retry_burst"):
            # a 950's UB link (per chip) and one UB port's retries, as hccn_tool gives them
            ub_down = self.any_active("ub_link_down", t, chip)
            for state in ("up", "down"):
                put(
                    index,
                    "npu_ub_link_state",
                    float((state == "down") == bool(ub_down)),
                    state=state,
                    **ids,
                )
            # the chip's UB ports as hccn_tool reports them: down while the UB link is
            # (tests/e2e/test_950.py: npu_network_up 0 on a port of the chip whose link is down)
            for ub_port in UB_PORTS:
                up = 0.0 if ub_down else 1.0
                put(index, "npu_network_up", up, port=ub_port, **ids)
            burst = self.any_active("ub_retry_burst", t, chip)
            put(
                index,
                "npu_ub_retries_total",
                count("ub_retries", float(burst["per_second"]) if burst else 0.0),
                kind="request",
                port="4",
                **ids,
            )
        rx = RX_POWER_W
        drift = self.any_active("optics_drift", t, chip)
        if drift is not None:
            start, _ = _window(drift, self.s.duration)
            share = min(1.0, (t - start) / seconds(drift.get("ramp", "10m")))
            rx = RX_POWER_W + (float(drift["to_watts"]) - RX_POWER_W) * share
        low = self.any_active("optics_low", t, chip)
        if low is not None and low.get("quantity", "rx_power") == "rx_power":
            rx = float(low["to_watts"])
        # the default optical collector: the lowest lane, and the module against its own
        # thresholds (-1 below the low one, 1 above the high one, 0 inside)
        put(index, "npu_optical_rx_power_min_watts", rx, **port)
        out = -1.0 if rx < RX_LOW_W else 1.0 if rx > RX_HIGH_W else 0.0
        put(index, "npu_optical_out_of_range", out, quantity="rx_power", **port)
        for quantity in ("tx_power", "temperature"):  # out of range: `optics_low` with quantity
            off = low is not None and low.get("quantity") == quantity
            put(index, "npu_optical_out_of_range", -1.0 if off else 0.0, quantity=quantity, **port)
        # error counters of the port and the chip's links, at `per_second` while an event runs
        for kind, metric, extra in (
            ("rx_errors", "npu_network_receive_errors_total", port),
            ("roce_retransmissions", "npu_roce_retransmissions_total", port),
            ("sio_crc", "npu_sio_crc_errors_total", {"direction": "receive", **ids}),
            ("pcie_errors", "npu_pcie_link_errors_total", ids),
        ):
            burst = self.any_active(kind, t, chip)
            put(index, metric, count(kind, float(burst["per_second"]) if burst else 0.0), **extra)

    def step_time(self, index: int, t: float, workload: dict[str, Any]) -> None:
        """A profiled workload: a capture every ``every`` (default 10 min) of ``steps`` steps,
        each ``seconds`` long with relative Gaussian ``noise``; captures from ``start`` on are
        ``regression`` slower. The gauges hold the latest capture, judged as the daemon's gate
        (daemon/profiling/gate.py, default thresholds) does: against the median of the previous
        (up to 20) captures' medians, with a noise band of the larger of 3 % and 3 robust
        deviations (1.4826 x MAD) of those medians, voting only with at least 20 steps and
        ``min_captures`` (default 5, the daemon's baseline.min_captures) earlier captures."""
        every = seconds(workload.get("every", "10m"))
        latest = int(t // every)
        medians = [self._capture(workload, k, every)[1] for k in range(max(0, latest - 20), latest)]
        steps, median, mean, p99 = self._capture(workload, latest, every)
        labels = {"workload": str(workload["workload"])}
        for stat, value in (("mean", mean), ("p50", median), ("p99", p99)):
            self.put(index, "npu_step_duration_seconds", round(value, 6), stat=stat, **labels)
        self.put(index, "npu_step_captured_steps", float(steps), **labels)
        judged = steps >= 20 and len(medians) >= int(workload.get("min_captures", 5))
        if medians:
            baseline = _median(medians)
            mad = _median([abs(m - baseline) for m in medians])
            band = max(0.03, 3 * 1.4826 * mad / baseline)
            self.put(index, "npu_step_duration_baseline_seconds", round(baseline, 6), **labels)
            self.put(index, "npu_step_duration_baseline_band_ratio", round(band, 6), **labels)
        self.put(index, "npu_step_regression_judged", 1.0 if judged else 0.0, **labels)

    def _capture(
        self, workload: dict[str, Any], k: int, every: float
    ) -> tuple[int, float, float, float]:
        """(steps, median, mean, p99) of capture ``k``: the same figures whenever asked."""
        known = self.captures.get((id(workload), k))
        if known is None:
            known = self.captures[(id(workload), k)] = self._measure(workload, k, every)
        return known

    def _measure(
        self, workload: dict[str, Any], k: int, every: float
    ) -> tuple[int, float, float, float]:
        rng = random.Random(f"{self.s.seed}-{workload['workload']}-{k}")
        slower = 1 + float(workload["regression"]) if k * every >= seconds(workload["start"]) else 1
        count = int(workload["steps"])
        base = float(workload["seconds"]) * slower
        steps = sorted(
            base * max(0.1, rng.gauss(1, float(workload["noise"]))) for _ in range(count)
        )
        p99 = steps[min(count - 1, math.ceil(0.99 * count) - 1)]
        return count, _median(steps), sum(steps) / count, p99


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def series(scenario: Scenario) -> SeriesMap:
    """Every series of every node of the scenario, one value (or None) per scrape."""
    out: SeriesMap = {}
    for node in range(scenario.nodes):
        out.update(_Node(scenario, node).build())
    return out
