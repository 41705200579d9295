"""Switch chips the controller knows: buffer cell size, PFC limits, Edgecore platforms.

The table is data shared with the switch's traffic manager: `chips.json` in this package is a
link to toolchain/switch-tm/chips.json, which switch-tm compiles in, so both read one table
(seed 000's appendix 2; the file names its sources).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Chip:
    name: str
    cell_bytes: int
    # Most priorities PFC may be enabled on per port; None where no limit is documented.
    max_pfc_priorities: int | None = None


def _load() -> tuple[dict[str, Chip], dict[str, str]]:
    table = json.loads((resources.files(__package__) / "chips.json").read_text())["chips"]
    chips = {
        name: Chip(name, spec["cell_bytes"], spec.get("max_pfc_priorities"))
        for name, spec in table.items()
    }
    platforms = {platform: name for name, spec in table.items() for platform in spec["platforms"]}
    return chips, platforms


CHIPS: dict[str, Chip]
# Edgecore platform (as it appears in DEVICE_METADATA platform/hwsku) -> chip.
PLATFORM_CHIPS: dict[str, str]
CHIPS, PLATFORM_CHIPS = _load()


def chip_for_platform(*names: str) -> Chip | None:
    """The chip of the first platform/hwsku string naming a known platform."""
    for name in names:
        lowered = name.lower()
        for platform, chip in PLATFORM_CHIPS.items():
            if platform in lowered:
                return CHIPS[chip]
    return None
