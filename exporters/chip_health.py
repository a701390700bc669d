"""Who a chip is and whether it is healthy: identity info metrics, health state, error codes."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from npumon.daemon.model.reading import HEALTH_STATES
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import Family, Info, Members, StateSet, render_table, sample

IDENTITY: tuple[Family, ...] = (
    Info(
        "npu_chip_info",
        "Identity of a chip (always 1): logic and physical IDs, model name, PCI bus ID, serial,"
        " die ID, firmware; only the known labels. Join on (npu, chip).",
        "identity",
    ),
)

HEALTH: tuple[Family, ...] = (
    StateSet(
        "npu_health_state",
        "1 for the chip's current health state, 0 for the others (the driver's own verdict).",
        "state",
        HEALTH_STATES,
        "health_state",
    ),
    Members(
        "npu_error_code_info",
        "1 per error code the chip reports now (hex, as the driver prints it), with the handling"
        " level the fault table gives it (not_handle ... separate_npu, or unknown).",
        ("code", "level"),
        "error_codes",
    ),
)

render_chip_identity = render_table(IDENTITY)
render_health = render_table(HEALTH)


def render_identity(snap: NodeSnapshot) -> Iterator[Metric]:
    """Chip identity, and the node's NPU software versions (only the known ones).

    npu_chip_info{npu="0",chip="0",name="910B4",bus_id="0000:C1:00.0",logic_id="0"} 1
    npu_node_info{driver_version="23.0.rc2",npu_smi_version="23.0.rc2"} 1
    """
    yield from render_chip_identity(snap)
    node = snap.node
    known = {
        "npu_smi_version": node.npu_smi_version,
        "driver_version": node.driver_version,
        "cann_version": node.cann_version,
    }
    info = Metric("npu_node_info", "Versions of the node's NPU software (always 1).", "gauge")
    labels = {k: v for k, v in known.items() if v}
    if labels:
        info.samples.append(sample("npu_node_info", labels, 1.0))
    yield info
