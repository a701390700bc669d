"""The hccn_tool fixtures, which parser reads each one (by the command in its file name)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npumon.daemon.parsers import hccn_950, hccn_tool, optical
from tests import support

FIXTURES = support.FIXTURES / "hccn_tool"

# `<command>__<source>.txt` -> the parser npumon uses for that command
PARSERS: dict[str, Callable[[str], Any]] = {
    "link-g": hccn_tool.parse_link,
    "link-g-u-p": hccn_tool.parse_link,
    "speed-g-u-p": hccn_950.parse_speed_table,
    "link_stat-g": hccn_tool.parse_link_stat,
    "link_stat-g-u-p": hccn_950.parse_link_stat_table,
    "stat-g": hccn_tool.parse_stat,
    "stat-g-u-p": hccn_tool.parse_stat,
    "optical-g": optical.parse_optical,
    "net_health-g": hccn_tool.parse_net_health,
    "ip-g": hccn_tool.parse_ip,
    "ip-g-8dev": hccn_tool.parse_ip,
    "lldp-g": hccn_tool.parse_lldp,
    "lldp-g-grep-ifname-8dev": hccn_tool.parse_lldp,
    "dev_info-g": hccn_950.parse_dev_info,
    "bandwidth-g-u-p": hccn_950.parse_bandwidth,
    "ub_connect-g": hccn_950.parse_ub_connect,
}
# Commands npumon never runs; their captures are kept as real samples anyway.
NOT_PARSED_BY_DESIGN = {
    "peak_bw-g-u-p": "a peak since an unknown reset is no Prometheus sample",
    "port_info-g-u-p": "-link, -speed and -link_stat -u -p already give the 950 port's state",
    "fec-g": "the FEC mode is static; its errors are in -stat",
    "tls-g-grep-switch": "the TLS switch is static configuration, no metric",
    "tls-g-grep-switch-8dev": "the TLS switch is static configuration, no metric",
}


def names() -> list[str]:
    return sorted(p.name for p in FIXTURES.glob("*.txt"))


def text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def parse(name: str) -> Any:
    return PARSERS[name.split("__")[0]](text(name))
