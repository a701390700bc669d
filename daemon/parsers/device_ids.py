"""Ascend device IDs, as the device plugin names them and as the runtime sees them.

Pure functions, one ``ParseError`` per string that is no known form:

- whole chip ``Ascend910-3``, ``Ascend310P-0``, ``npu-5``: the last field is the physical ID;
- vNPU ``Ascend910-2c-100-1``, ``Ascend310P-4c.3cpu-102-0``: spec, vNPU ID (vdevID), physical ID
  (the plugin's ``GetDeviceID``: the last ``-`` field is the physical ID, field 2 the vdevID);
- 310/310P share mode ``Ascend310P-0-2``: physical ID then a share index;
- HAMi ``185011D4-21104518-A0C4ED94-14CC040A-56102003-3``: the chip's VDie ID (DCMI's five hex
  words joined by ``-``), then a slice index (Project-HAMi/ascend-device-plugin
  ``internal/server/server.go:260-263`` at ed35e1c4: ``fmt.Sprintf("%s-%d", dev.UUID, i)``, the
  UUID from ``GetDieID(ID, dcmi.VDIE)``, ``internal/manager/manager.go:186``); the chip is found
  by its ``vdie_id`` later (model/attribution.py);
- Ascend DRA driver (``npu.huawei.com``) device names ``Ascend910-<phyID>`` / ``npu-<phyID>``:
  the whole-chip form (mind-cluster ``component/ascend-dynamic-resource-allocation/internal/
  device/generation_910.go:92`` at 22bb3d98);
- ``ASCEND_VISIBLE_DEVICES`` (Ascend Docker Runtime): ``0,1``, ranges ``0-3`` (at most 128),
  names ``Ascend910-0``, or ``void``/empty for none.
"""

from __future__ import annotations

import re

from npumon.daemon.model.kubelet import UNRESOLVED, DeviceRef
from npumon.daemon.parsers.errors import ParseError

_WHOLE = re.compile(r"(?:Ascend[0-9A-Za-z]+|npu)-(\d{1,4})")
_VNPU = re.compile(r"(?:Ascend[0-9A-Za-z]+|npu)-(\d+c[0-9A-Za-z.]*)-(\d{3,5})-(\d{1,4})")
_SHARE = re.compile(r"(?:Ascend310P?|Ascend310B)-(\d{1,4})-(\d{1,4})")
_HAMI = re.compile(r"([0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{8}){4})-(\d{1,4})")
_NAME = re.compile(r"(?:Ascend(?:910|310B|310P|310)|npu)-(\d+)")
_RANGE = re.compile(r"(\d+)-(\d+)")
MAX_VISIBLE = 128  # the runtime refuses more


def parse_device_id(device_id: str) -> DeviceRef:
    """A device plugin ID as the physical chip (and vNPU) it names."""
    text = device_id.strip()
    whole = _WHOLE.fullmatch(text)
    if whole:
        return DeviceRef(device_id, int(whole[1]))
    vnpu = _VNPU.fullmatch(text)
    if vnpu:
        vdev, phy = int(vnpu[2]), int(vnpu[3])
        if not phy * 16 + 100 <= vdev <= phy * 16 + 115:
            raise ParseError(
                f"vNPU ID {vdev} outside {phy * 16 + 100}..{phy * 16 + 115} "
                f"of physical chip {phy}: {device_id!r}"
            )
        return DeviceRef(device_id, phy, vdev)
    share = _SHARE.fullmatch(text)
    if share:
        return DeviceRef(device_id, int(share[1]))
    hami = _HAMI.fullmatch(text)
    if hami:
        return DeviceRef(device_id, UNRESOLVED, vdie_id=hami[1].upper())
    raise ParseError(f"not an Ascend device ID: {device_id!r}")


def parse_visible_devices(value: str) -> tuple[int, ...]:
    """``ASCEND_VISIBLE_DEVICES`` as device numbers (physical IDs, or vdevIDs for a vNPU)."""
    text = value.strip()
    if text in ("", "void"):
        return ()
    found: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        name, span = _NAME.fullmatch(part), _RANGE.fullmatch(part)
        if part.isdigit():
            found.append(int(part))
        elif name:
            found.append(int(name[1]))
        elif span and int(span[1]) <= int(span[2]):
            found.extend(range(int(span[1]), int(span[2]) + 1))
        else:
            raise ParseError(f"ASCEND_VISIBLE_DEVICES entry {part!r} is no id, range or name")
        if len(found) > MAX_VISIBLE:
            raise ParseError(f"ASCEND_VISIBLE_DEVICES lists more than {MAX_VISIBLE} devices")
    return tuple(dict.fromkeys(found))
