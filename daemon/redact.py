"""What a bundle (daemon/bundle.py) leaves out or renames before it leaves the node.

Secrets are removed always: a config value whose key looks like a password, token or key, and
every basic-auth entry of a web config, becomes ``<redacted>``; an argv word ``--token=...``
keeps its flag only. Identities are renamed unless redaction is turned off: serial numbers, IPv4
addresses, MAC addresses, host names and pod names each get a pseudonym of the same shape
(``SN000001``, ``10.255.0.1``, ``02:00:00:00:00:01``, ``host-1``, ``pod-1``), the same one
wherever the value occurs, so a replayed bundle still parses and its series still join.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "<redacted>"
# keys whose values are secrets; "key_file" and "cert_file" are paths, kept
_SECRET_KEY = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|credential|api[_-]?key|private[_-]?key|"
    r"bearer|auth(orization)?$|^key$|_key$)",
    re.IGNORECASE,
)
_SECRET_FLAG = re.compile(
    r"^(--?[\w.-]*(pass(word|wd)?|secret|token|credential|key)[\w.-]*=).+$", re.IGNORECASE
)
_SECTIONS_OF_SECRETS = frozenset({"basic_auth_users"})

_IPV4 = re.compile(
    r"(?<![\w.])((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)(?![\w.])"
)
_MAC = re.compile(r"(?<![\w:])([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}(?![\w:])")
# npu-smi's "Serial Number", hccn_tool's "vendor serial number" / "Vendor SN"
_SERIAL = re.compile(
    r"(?im)^[^\S\n]*(?:\[devid \d+\])?[^\S\n]*(?:vendor )?(?:serial number|sn)\s*:\s*(\S+)"
)
_LLDP_NAME = re.compile(r"System Name TLV\s*\n\s*(\S+)")  # the switch's host name
_VERSION_LINE = re.compile(r"version", re.IGNORECASE)  # 4-part versions are not addresses


def scrub(data: Any, key: str = "") -> Any:
    """``data`` (parsed YAML/JSON) with every secret-looking value replaced."""
    if isinstance(data, dict):
        if key in _SECTIONS_OF_SECRETS:
            return {REDACTED: REDACTED} if data else {}
        return {k: scrub(v, str(k)) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [scrub(v, key) for v in data]
    if isinstance(data, str):
        flagged = _SECRET_FLAG.match(data)
        if flagged:
            return flagged.group(1) + REDACTED
    if data is not None and key and _SECRET_KEY.search(key) and not key.endswith("_file"):
        return REDACTED
    return data


def scrub_argv(argv: Iterable[str]) -> list[str]:
    """argv with ``--password=...``-like words cut to their flag."""
    return [scrub(word) for word in argv]


class Pseudonyms:
    """One mapping per bundle: each real value to its pseudonym, in order of first sight."""

    def __init__(self, hostnames: Iterable[str] = (), pods: Iterable[str] = ()) -> None:
        self._names: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._words: dict[str, str] = {}  # hostnames, pod names, serials: replaced as words
        for host in sorted(set(hostnames), key=len, reverse=True):
            if len(host) >= 3:
                self._word(host, "host")
        for pod in pods:
            if pod:
                self._word(pod, "pod")

    def _next(self, kind: str) -> int:
        self._counts[kind] = self._counts.get(kind, 0) + 1
        return self._counts[kind]

    def _word(self, value: str, kind: str) -> str:
        if value not in self._words:
            n = self._next(kind)
            self._words[value] = f"SN{n:06d}" if kind == "serial" else f"{kind}-{n}"
        return self._words[value]

    def learn(self, text: str) -> None:
        """Note the serial numbers ``text`` shows, so they are renamed everywhere."""
        for match in _SERIAL.finditer(text):
            if match.group(1) not in ("NA", "N/A", "-"):
                self._word(match.group(1), "serial")
        for match in _LLDP_NAME.finditer(text):
            self._word(match.group(1), "host")

    def _ip(self, match: re.Match[str]) -> str:
        real = match.group(0)
        if real.startswith(("0.", "127.", "255.")):
            return real  # not an identity: unset, loopback, masks
        if real not in self._names:
            n = self._next("ip")
            self._names[real] = f"10.255.{n // 256}.{n % 256}"
        return self._names[real]

    def _mac(self, match: re.Match[str]) -> str:
        real = match.group(0).lower().replace("-", ":")
        if real in ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"):
            return match.group(0)
        if real not in self._names:
            n = self._next("mac")
            self._names[real] = "02:00:00:" + ":".join(f"{(n >> s) & 255:02x}" for s in (16, 8, 0))
        return self._names[real]

    def apply_all(self, data: Any) -> Any:
        """``apply`` on every string in ``data`` (parsed JSON), keys included."""
        if isinstance(data, str):
            return self.apply(data)
        if isinstance(data, dict):
            return {self.apply_all(k): self.apply_all(v) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.apply_all(v) for v in data]
        return data

    def apply(self, text: str) -> str:
        """``text`` with every known and every address-shaped identity renamed."""
        if self._words:
            words = sorted(self._words, key=len, reverse=True)
            pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, words)) + r")(?![\w-])")
            text = pattern.sub(lambda m: self._words[m.group(1)], text)
        text = _MAC.sub(self._mac, text)
        return "".join(
            line if _VERSION_LINE.search(line) else _IPV4.sub(self._ip, line)
            for line in text.splitlines(keepends=True)
        )
