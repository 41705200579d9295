"""Lossless buffer profile sizing: the Edgecore MTU-cell formula and SONiC's headroom model.

The MTU-cell model is the Edgecore SONiC RoCE tuning guide (seed 000): buffers are allocated
in whole cells, so every quantity is a multiple of the cell-rounded MTU. Its worked example
(AS7726-32X, Trident 3, 256 B cells, 4174 B RoCE MTU, 32 ports) gives size 69632, xoff 13056,
xon 512.

The guide's prose says xon = 2 x MTU_cell but its worked example computes 2 x cell (512); the
example is what operators copied into their configs, so we follow the example.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The guide's starting constants: XOFF of three MTU cells, XON two cells.
XOFF_MTU_CELLS = 3
XON_CELLS = 2


@dataclass(frozen=True)
class BufferProfile:
    """A SONiC BUFFER_PROFILE for a lossless priority group, in bytes."""

    size: int
    xoff: int
    xon: int

    def as_config(self, pool: str = "ingress_lossless_pool") -> dict[str, str]:
        """The profile as config_db.json writes it: every value a string."""
        return {
            "pool": f"[BUFFER_POOL|{pool}]",
            "size": str(self.size),
            "xoff": str(self.xoff),
            "xon": str(self.xon),
        }


def mtu_cell(mtu: int, cell: int) -> int:
    """The MTU rounded up to whole buffer cells."""
    if mtu <= 0 or cell <= 0:
        raise ValueError(f"mtu and cell size must be positive (mtu={mtu}, cell={cell})")
    return -(-mtu // cell) * cell


def seed000_profile(mtu: int, cell: int, ports: int) -> BufferProfile:
    """Size a lossless profile for the worst 1:1 incast on a `ports`-port switch.

    With half the ports sending into the other half, at most ports/2 senders converge on one
    egress, so the profile holds one MTU cell per sender (16 on the guide's 32-port switch).
    """
    if ports < 2:
        raise ValueError(f"a switch needs at least 2 ports to congest (ports={ports})")
    unit = mtu_cell(mtu, cell)
    return BufferProfile(size=unit * (ports // 2), xoff=unit * XOFF_MTU_CELLS, xon=cell * XON_CELLS)


# Peer response time in pause quanta per port speed (Mb/s), IEEE 802.3 31B.3.7 as SONiC's
# headroom scripts quote it.
PEER_RESPONSE_QUANTA: dict[int, int] = {
    10000: 67,
    25000: 80,
    40000: 118,
    50000: 147,
    100000: 394,
    200000: 453,
    400000: 905,
}
# Signal speed in copper and fibre, m/s, as SONiC's headroom model takes it.
CABLE_SPEED_M_PER_S = 198_000_000
MIN_PACKET = 64


@dataclass(frozen=True)
class HeadroomInputs:
    """SONiC's inputs: LOSSLESS_TRAFFIC_PATTERN (mtu, small_packet_percentage) and the ASIC's
    STATE_DB ASIC_TABLE (cell size, pipeline latency, MAC/PHY delay), in bytes."""

    speed_mbps: int
    cable_m: float
    port_mtu: int
    lossless_mtu: int
    cell: int
    small_packet_percent: int = 100
    pipeline_latency: int = 18 * 1024
    mac_phy_delay: int = 820
    gearbox_delay_ns: int = 0
    shared_headroom: bool = False


def parse_cable_length(text: str) -> float:
    """SONiC's CABLE_LENGTH values: `5m`, `40m`, `300m` (a bare number is metres too)."""
    value = text.strip().removesuffix("m")
    try:
        metres = float(value)
    except ValueError:
        raise ValueError(f"cable length {text!r} is not a length like 5m") from None
    if metres < 0:
        raise ValueError(f"cable length {text!r} is negative")
    return metres


def sonic_headroom(inp: HeadroomInputs) -> BufferProfile:
    """SONiC's dynamic headroom calculation (buffer_headroom_<vendor>.lua, the "dynamically
    headroom calculation" HLD), with the results rounded up to whole cells:

    - worst-case cell factor: cell / 64 if cell > 128, else 2 cell / (1 + cell); cell occupancy
      = (100 - small% + small% x factor) / 100 (small packets waste most of their cells);
    - bytes in flight after XOFF: port MTU + 2 x (cable + gearbox bytes) + MAC/PHY delay + peer
      response (quanta x 512 bits; doubled at 400G as SONiC does);
    - xoff = lossless MTU + in-flight bytes x occupancy; xon = pipeline latency;
    - size = xon + xoff, or xon alone when headroom comes from a shared headroom pool.
    """
    if inp.speed_mbps not in PEER_RESPONSE_QUANTA:
        known = ", ".join(str(s) for s in PEER_RESPONSE_QUANTA)
        raise ValueError(f"no peer response time for speed {inp.speed_mbps} (known: {known})")
    if not 0 <= inp.small_packet_percent <= 100:
        raise ValueError(f"small packet percentage {inp.small_packet_percent} is not 0..100")
    mtu_cell(inp.lossless_mtu, inp.cell)  # checks both are positive
    if inp.cell > 2 * MIN_PACKET:
        factor = inp.cell / MIN_PACKET
    else:
        factor = 2 * inp.cell / (1 + inp.cell)
    small = inp.small_packet_percent
    occupancy = (100 - small + small * factor) / 100
    bps = inp.speed_mbps * 1_000_000
    on_cable = inp.cable_m / CABLE_SPEED_M_PER_S * bps / 8
    on_gearbox = inp.gearbox_delay_ns * 1e-9 * bps / 8
    peer = PEER_RESPONSE_QUANTA[inp.speed_mbps] * 512 / 8
    if inp.speed_mbps == 400000:
        peer *= 2
    in_flight = inp.port_mtu + 2 * (on_cable + on_gearbox) + inp.mac_phy_delay + peer
    xoff = mtu_cell(math.ceil(inp.lossless_mtu + in_flight * occupancy), inp.cell)
    xon = mtu_cell(max(inp.pipeline_latency, 1), inp.cell)
    size = xon if inp.shared_headroom else xon + xoff
    return BufferProfile(size=size, xoff=xoff, xon=xon)


def sonic_profile_name(speed_mbps: int, cable: str) -> str:
    """SONiC's name for a generated lossless profile: pg_lossless_<speed>_<cable>_profile."""
    return f"pg_lossless_{speed_mbps}_{cable}_profile"
