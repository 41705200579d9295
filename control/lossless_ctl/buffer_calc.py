"""Lossless buffer profile sizing from MTU and the chip's buffer cell size.

The MTU-cell model is the Edgecore SONiC RoCE tuning guide (seed 000): buffers are allocated
in whole cells, so every quantity is a multiple of the cell-rounded MTU. Its worked example
(AS7726-32X, Trident 3, 256 B cells, 4174 B RoCE MTU, 32 ports) gives size 69632, xoff 13056,
xon 512.

The guide's prose says xon = 2 x MTU_cell but its worked example computes 2 x cell (512); the
example is what operators copied into their configs, so we follow the example.
"""

from __future__ import annotations

from dataclasses import dataclass

# Packet buffer cell size in bytes per chip family (seed 000, appendix 2).
CHIP_CELL_BYTES: dict[str, int] = {
    "trident3": 256,
    "helix5": 256,
    "tomahawk2": 208,
    "tomahawk3": 254,
}

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
