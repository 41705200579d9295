"""The suite's config_db.json and the mechanism-off overlays stay loadable by lossless-ctl, and
the thresholds the tests expect follow from them by p4src/README.md's formulas."""

import pytest

from lossless_ctl import config_db
from lossless_ctl.loader import plan
from lossless_ctl.p4info import read_p4info
from lossless_paths import PTF_TESTS
from ptf_harness.base import SuiteConfig

CONFIG = PTF_TESTS / "config"


@pytest.fixture(scope="module")
def p4info(compiled_pipeline):
    return read_p4info(compiled_pipeline / "lossless.p4info.txtpb")


@pytest.mark.parametrize("overlay", [None, "no_pfc.json", "no_ecn.json", "no_sfc.json"])
def test_config_validates_and_maps(overlay, p4info):
    files = [CONFIG / "config_db.json"] + ([CONFIG / overlay] if overlay else [])
    cfg = config_db.parse_checked(config_db.load_files(files))
    _model, program = plan(cfg, p4info)
    assert program.updates() > 100


def test_overlays_switch_the_mechanism_off():
    def parsed(*overlays):
        files = [CONFIG / "config_db.json", *(CONFIG / o for o in overlays)]
        cfg = config_db.parse_checked(config_db.load_files(files))
        return cfg

    base = parsed()
    assert any(p.pfc_enable for p in base.port_qos.values())
    assert not any(p.pfc_enable for p in parsed("no_pfc.json").port_qos.values())
    assert base.sfc_host_ports and not parsed("no_sfc.json").sfc_host_ports
    assert all(w.ecn_green for w in base.wred_profiles.values())
    assert not any(w.ecn_green for w in parsed("no_ecn.json").wred_profiles.values())


def test_expectations_from_the_profile():
    cfg = SuiteConfig(str(CONFIG / "config_db.json"))
    # size 8000, xoff 4000, xon 2000: pause above 8000, drop above 12000, resume below 2000.
    assert cfg.lossless() == {"xoff": 8000, "limit": 12000, "xon": 2000}
    assert cfg.host(3) == ("10.3.0.1", "02:00:00:00:03:01")
    assert cfg.port_bps[3] == 10_000_000


def actions_written(info, *overlays: str) -> dict[str, int]:
    """How many table entries of each action the controller writes for the merged config."""
    from collections import Counter

    from lossless_ctl.p4info import P4InfoIndex

    files = [CONFIG / "config_db.json", *(CONFIG / o for o in overlays)]
    _model, program = plan(config_db.parse_checked(config_db.load_files(files)), info)
    index = P4InfoIndex(info)
    out: Counter = Counter()
    for phase in program.phases:
        for update in phase.updates:
            entry = update.entity.table_entry
            if update.entity.WhichOneof("entity") == "table_entry":
                out[index.name_of(entry.action.action.action_id).rsplit(".", 1)[-1]] += 1
    return out


def test_overlays_remove_the_mechanism_from_the_pipeline_entries(p4info):
    base = actions_written(p4info)
    # 4 ports x PGs 3-4 lossless; 4 ports x queues 3-4 with WRED ECN; SFC on Ethernet0 and
    # Ethernet4 x queues 3-4.
    assert (base["set_lossless"], base["set_wred_ecn"], base["set_sfc"]) == (8, 8, 4)
    assert actions_written(p4info, "no_pfc.json")["set_lossless"] == 0
    assert actions_written(p4info, "no_ecn.json")["set_wred_ecn"] == 0
