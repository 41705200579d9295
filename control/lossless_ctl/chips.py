"""Switch chips the controller knows: buffer cell size and PFC limits.

Cell sizes and the platform-to-chip table are the Edgecore tuning guide's appendix 2 (seed 000);
its restriction "PFC only can apply to 1 or 2 queues" on the AS7726-32X (Trident 3) is the one
PFC limit on record, so only Trident 3 and Helix 5 (a Trident 3 X3) carry it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chip:
    name: str
    cell_bytes: int
    # Most priorities PFC may be enabled on per port; None where no limit is documented.
    max_pfc_priorities: int | None = None


CHIPS: dict[str, Chip] = {
    chip.name: chip
    for chip in (
        Chip("trident3", 256, max_pfc_priorities=2),
        Chip("helix5", 256, max_pfc_priorities=2),
        Chip("tomahawk2", 208),
        Chip("tomahawk3", 254),
    )
}

# Edgecore platform (as it appears in DEVICE_METADATA platform/hwsku) -> chip.
PLATFORM_CHIPS: dict[str, str] = {
    "as4630-54pe": "helix5",
    "as5835-54x": "trident3",
    "as7326-56x": "trident3",
    "as7726-32x": "trident3",
    "as7816-64x": "tomahawk2",
    "as9716-32d": "tomahawk3",
    "as8000": "tomahawk3",
}


def chip_for_platform(*names: str) -> Chip | None:
    """The chip of the first platform/hwsku string naming a known platform."""
    for name in names:
        lowered = name.lower()
        for platform, chip in PLATFORM_CHIPS.items():
            if platform in lowered:
                return CHIPS[chip]
    return None
