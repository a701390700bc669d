"""Who a chip is and whether it is healthy: identity info metrics, health state, error codes."""

from __future__ import annotations

from collections.abc import Iterator

from npumon.daemon.model.reading import HEALTH_STATES
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.spec import Family, info, members, state_set

IDENTITY_LABELS = ("logic_id", "phy_id", "name", "bus_id", "serial", "vdie_id", "firmware_version")
VERSION_LABELS = ("npu_smi_version", "driver_version", "cann_version")


def _versions(snap: NodeSnapshot) -> Iterator[tuple[dict[str, str], float]]:
    """npu_node_info{driver_version="23.0.rc2",npu_smi_version="23.0.rc2"} 1"""
    labels = {name: getattr(snap.node, name) for name in VERSION_LABELS}
    known = {k: v for k, v in labels.items() if v}
    if known:
        yield known, 1.0


IDENTITY: tuple[Family, ...] = (
    info(
        "npu_chip_info",
        "Identity of a chip (always 1): logic and physical IDs, model name, PCI bus ID, serial,"
        " die ID, firmware; only the known labels. Join on (npu, chip).",
        "identity",
        IDENTITY_LABELS,
    ),
    Family(
        "npu_node_info",
        "gauge",
        "Versions of the node's NPU software (always 1).",
        (),
        _versions,
        optional=VERSION_LABELS,
    ),
)

HEALTH: tuple[Family, ...] = (
    state_set(
        "npu_health_state",
        "1 for the chip's current health state, 0 for the others (the driver's own verdict).",
        "state",
        HEALTH_STATES,
        "health_state",
    ),
    members(
        "npu_error_code_info",
        "1 per error code the chip reports now (hex, as the driver prints it), with the handling"
        " level the fault table gives it (not_handle ... separate_npu, or unknown).",
        ("code", "level"),
        "error_codes",
    ),
)
