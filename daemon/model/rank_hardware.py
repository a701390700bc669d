"""What a rank's own chip and NIC ports did during a capture window (daemon/profiling/window.py
measures it from the snapshots the daemon published meanwhile): the evidence that explains a
slow rank by its hardware, or says the node saw nothing."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ConfigDict, with_config

# the kinds of npu_rank_capture_errors, in the order a finding names them
ERROR_KINDS = (
    "hbm_ecc",
    "hccs_crc",
    "sio_crc",
    "retransmissions",
    "pfc",
    "cnp",
    "link_flaps",
)
_SAID = {
    "hbm_ecc": "{n} new HBM ECC errors",
    "hccs_crc": "{n} HCCS CRC errors",
    "sio_crc": "{n} SIO CRC errors",
    "retransmissions": "its RoCE ports retransmitted {n} packets",
    "pfc": "{n} PFC pause frames on its ports",
    "cnp": "{n} congestion notifications (CNP) received",
    "link_flaps": "its ports went down {n} times",
}
MIN_THROTTLED_SHARE = 0.05  # under this share of the window a throttle is not named


@with_config(ConfigDict(allow_inf_nan=False, strict=True))  # as model/profile.py's FINITE
@dataclass(frozen=True, slots=True)
class RankHardware:
    """One rank's chip and ports over one capture window."""

    rank: int
    npu: int
    chip: int
    samples: int  # snapshots of the window the figures are over
    throttled_share: float | None = None  # of the judged samples; None: none could be judged
    throttle_reason: str | None = None  # the most frequent reason (THROTTLE_REASONS)
    aicore_hertz: float | None = None  # mean AI Core clock over the window
    rated_hertz: float | None = None
    temperature_max_celsius: float | None = None
    errors: tuple[tuple[str, int], ...] = ()  # (ERROR_KINDS value, new in the window), > 0 only

    @property
    def throttled(self) -> bool:
        return self.throttled_share is not None and self.throttled_share >= MIN_THROTTLED_SHARE

    @property
    def saw_something(self) -> bool:
        return self.throttled or bool(self.errors)

    def said(self) -> str:
        """E.g. "rank 37 on NPU 5: throttled by power 31 % of the window; AI Core clock 1.1 of
        1.8 GHz", or that nothing was seen."""
        head = f"rank {self.rank} on NPU {self.npu}" + (f" chip {self.chip}" if self.chip else "")
        if self.samples == 0:
            return f"{head}: no telemetry of its chip during the capture window"
        parts = []
        if self.throttled:
            assert self.throttled_share is not None
            parts.append(
                f"throttled by {self.throttle_reason or 'an unknown cause'} "
                f"{self.throttled_share:.0%} of the window"
            )
            if self.aicore_hertz is not None and self.rated_hertz:
                clock, rated = self.aicore_hertz / 1e9, self.rated_hertz / 1e9
                parts.append(f"AI Core clock {clock:.1f} of {rated:.1f} GHz")
            if self.throttle_reason == "thermal" and self.temperature_max_celsius is not None:
                parts.append(f"up to {self.temperature_max_celsius:.0f} °C")
        parts += [_SAID[kind].format(n=n) for kind, n in self.errors]
        if not parts:
            return (
                f"{head}: nothing seen on this node's chip or ports during the capture window "
                "(look at the host or the data)"
            )
        return f"{head}: " + "; ".join(parts)
