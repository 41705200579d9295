"""The chip table the controller loads (shared with switch-tm) against seed 000's appendix 2."""

from __future__ import annotations

import pytest

from lossless_ctl.chips import CHIPS, chip_for_platform

# Seed 000, appendix 2 "Cell Size Table": switch model, chipset, packet buffer cell size.
SEED_000_CELLS = [
    ("AS4630-54PE", "helix5", 256),
    ("AS5835-54X", "trident3", 256),
    ("AS7326-56X", "trident3", 256),
    ("AS7726-32X", "trident3", 256),
    ("AS7816-64X", "tomahawk2", 208),
    ("AS9716-32D", "tomahawk3", 254),
    ("AS8000", "tomahawk3", 254),
]


@pytest.mark.parametrize(("model", "chip", "cell"), SEED_000_CELLS)
def test_each_seed_000_platform_maps_to_its_chip_and_cell_size(model, chip, cell):
    found = chip_for_platform(f"x86_64-accton_{model.lower()}-r0", f"Accton-{model}")
    assert found is not None and found.name == chip
    assert found.cell_bytes == cell


def test_the_table_holds_exactly_the_seeds_chips_with_the_one_documented_pfc_limit():
    assert sorted(CHIPS) == sorted({chip for _, chip, _ in SEED_000_CELLS})
    # "PFC only can apply to 1 or 2 queues" on the Trident 3 AS7726-32X; Helix 5 is a Trident 3.
    assert {name: c.max_pfc_priorities for name, c in CHIPS.items()} == {
        "trident3": 2,
        "helix5": 2,
        "tomahawk2": None,
        "tomahawk3": None,
    }


def test_an_unknown_platform_has_no_chip():
    assert chip_for_platform("x86_64-kvm_x86_64-r0", "Force10-S6000") is None
