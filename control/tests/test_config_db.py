"""config_db.json parsing and validation: good configs load, every error class is named
`TABLE|key|field: reason` and all errors of a config are reported together."""

import copy
import json
from pathlib import Path

import pytest

from lossless_ctl import config_db
from lossless_ctl.cli import main

DATA = Path(__file__).parent / "data"


def load(*names):
    return config_db.load_files([DATA / n for n in names])


def issues_of(tables, chip=None):
    _, issues = config_db.parse(tables, chip)
    return [str(i) for i in issues]


def errors_of(tables):
    _, issues = config_db.parse(tables)
    return [str(i) for i in issues if i.error]


def test_seed000_example_parses_as_the_seed_gives_it():
    cfg, issues = config_db.parse(load("seed000_as7726.json"))
    assert [str(i) for i in issues] == [
        "warning: PORT: no PORT table: port names are checked for form only"
    ]
    assert set(cfg.port_qos) == {"Ethernet0", "Ethernet4", "Ethernet20"}
    assert cfg.port_qos["Ethernet0"].pfc_enable == (3,)
    profile = cfg.buffer_profiles["pg_300m_profile"]
    assert (profile.size, profile.xoff, profile.xon, profile.static_th) == (69632, 13056, 512, 0)
    assert cfg.buffer_pgs == {
        (p, 3): "pg_300m_profile" for p in ("Ethernet0", "Ethernet4", "Ethernet20")
    }


def test_seed000_with_the_platform_ports_is_clean_and_knows_the_chip():
    cfg, issues = config_db.parse(load("seed000_as7726.json", "as7726_ports.json"))
    assert issues == []
    assert cfg.chip.name == "trident3"
    assert cfg.ports["Ethernet124"].index == 32


def test_t0_and_t1_parse_cleanly():
    # t0's lossless profile is dynamic (dynamic_th), which the pipeline models (p4src/README.md)
    cfg, issues = config_db.parse(load("t0_as7726.json"))
    assert issues == []
    assert cfg.buffer_profiles["pg_lossless_100000_5m_profile"].dynamic_th is not None
    assert len(cfg.vlans["Vlan1000"].members) == 4
    assert len(cfg.neighbors) == 8
    cfg, issues = config_db.parse(load("t1_as7816.json"))
    assert issues == []
    assert len(cfg.sfc_queues) == 8
    assert cfg.pfc_wd["Ethernet0"].restoration_ms == 200


def seed_with_ports():
    return load("seed000_as7726.json", "as7726_ports.json")


def mutate(path, value):
    tables = copy.deepcopy(seed_with_ports())
    *parents, last = path
    node = tables
    for p in parents:
        node = node.setdefault(p, {})
    if value is None:
        del node[last]
    else:
        node[last] = value
    return tables


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            ("BUFFER_PG", "Ethernet0|3", "profile"),
            "[BUFFER_PROFILE|pg_lossless_missing]",
            "error: BUFFER_PG|Ethernet0|3|profile: missing reference: "
            "BUFFER_PROFILE|pg_lossless_missing does not exist",
        ),
        (
            ("BUFFER_PROFILE", "pg_300m_profile", "xon"),
            "20000",
            "error: BUFFER_PROFILE|pg_300m_profile|xon: xon 20000 > xoff 13056",
        ),
        (
            ("BUFFER_PROFILE", "pg_300m_profile", "size"),
            "4096",
            "error: BUFFER_PROFILE|pg_300m_profile|size: size 4096 is below xoff 13056",
        ),
        (
            ("PORT_QOS_MAP", "Ethernet200"),
            {"pfc_enable": "3"},
            "error: PORT_QOS_MAP|Ethernet200: unknown port 'Ethernet200': not in PORT",
        ),
        (
            ("BUFFER_POOL", "ingress_lossless_pool", "size"),
            "10M",
            "error: BUFFER_POOL|ingress_lossless_pool|size: not a number: '10M'",
        ),
        (
            ("PORT_QOS_MAP", "Ethernet0", "tc_to_pg_map"),
            "[TC_TO_QUEUE_MAP|AZURE]",
            "error: PORT_QOS_MAP|Ethernet0|tc_to_pg_map: reference '[TC_TO_QUEUE_MAP|AZURE]' "
            "must point into TC_TO_PRIORITY_GROUP_MAP",
        ),
        (
            ("BUFFER_PG", "Ethernet0|9"),
            {"profile": "[BUFFER_PROFILE|pg_300m_profile]"},
            "error: BUFFER_PG|Ethernet0|9: '9' is not a list or range of 0..7",
        ),
        (
            ("PORT", "Ethernet0", "speed"),
            None,
            "error: PORT|Ethernet0|speed: missing",
        ),
        (
            ("TC_TO_PRIORITY_GROUP_MAP", "AZURE", "3"),
            "8",
            "error: TC_TO_PRIORITY_GROUP_MAP|AZURE|3: 8 is out of range (0..7)",
        ),
        (
            ("PORT_QOS_MAP", "Ethernet0", "pfc_quanta"),
            "0",
            "error: PORT_QOS_MAP|Ethernet0|pfc_quanta: 0 is out of range (1..65535)",
        ),
        (
            ("PORT_QOS_MAP", "Ethernet0", "pfc_quanta"),
            "0x10000",
            "error: PORT_QOS_MAP|Ethernet0|pfc_quanta: not a number: '0x10000'",
        ),
        (
            ("PORT_QOS_MAP", "Ethernet0", "pfc_quanta"),
            "65536",
            "error: PORT_QOS_MAP|Ethernet0|pfc_quanta: 65536 is out of range (1..65535)",
        ),
        (
            ("BUFFER_PROFILE", "pg_300m_profile", "pool"),
            "[BUFFER_POOL|egress_pool",
            "error: BUFFER_PROFILE|pg_300m_profile|pool: malformed reference "
            "'[BUFFER_POOL|egress_pool' (expected [BUFFER_POOL|NAME])",
        ),
    ],
)
def test_each_error_class_names_table_key_field(path, value, expected):
    assert expected in errors_of(mutate(path, value))


def test_all_errors_are_reported_not_just_the_first():
    tables = seed_with_ports()
    tables["BUFFER_PROFILE"]["pg_300m_profile"]["xon"] = "20000"
    tables["BUFFER_POOL"]["ingress_lossless_pool"]["size"] = "big"
    tables["PORT_QOS_MAP"]["Ethernet999"] = {"pfc_enable": "3"}
    errors = errors_of(tables)
    assert errors == [
        "error: PORT_QOS_MAP|Ethernet999: unknown port 'Ethernet999': not in PORT",
        "error: BUFFER_POOL|ingress_lossless_pool|size: not a number: 'big'",
        "error: BUFFER_PROFILE|pg_300m_profile|xon: xon 20000 > xoff 13056",
    ]


def test_pfc_on_more_priorities_than_trident3_supports_is_a_warning():
    tables = seed_with_ports()
    tables["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "3,4,7"
    _, issues = config_db.parse(tables)
    assert not any(i.error for i in issues)
    assert (
        "warning: PORT_QOS_MAP|Ethernet0|pfc_enable: PFC on 3 priorities; trident3 supports 2"
        in [str(i) for i in issues]
    )


def test_pfc_priority_without_a_lossless_pg_is_a_warning():
    tables = seed_with_ports()
    tables["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "3,4"
    assert (
        "warning: PORT_QOS_MAP|Ethernet0|pfc_enable: priority 4 maps to PG 4, which has no "
        "lossless BUFFER_PG profile" in issues_of(tables)
    )


def test_lossless_profile_in_an_egress_pool_and_pg_bound_to_egress_profile():
    tables = seed_with_ports()
    tables["BUFFER_POOL"]["egress_pool"] = {"type": "egress", "mode": "static", "size": "1000000"}
    tables["BUFFER_PROFILE"]["q"] = {
        "pool": "[BUFFER_POOL|egress_pool]",
        "size": "0",
        "static_th": "9",
    }
    tables["BUFFER_PG"]["Ethernet8|0"] = {"profile": "[BUFFER_PROFILE|q]"}
    assert (
        "error: BUFFER_PG|Ethernet8|0|profile: q is in pool egress_pool, not an ingress pool"
        in (errors_of(tables))
    )


def test_static_route_next_hop_outside_every_subnet():
    tables = load("t1_as7816.json")
    tables["STATIC_ROUTE"]["10.99.0.0/16"] = {"nexthop": "10.200.0.1"}
    assert errors_of(tables) == [
        "error: STATIC_ROUTE|10.99.0.0/16|nexthop: 10.200.0.1 is in no interface's subnet"
    ]


def test_neighbour_on_a_bridged_vlan_is_refused():
    tables = load("t0_as7726.json")
    tables["NEIGH"]["Vlan1000|192.168.0.2"] = {"neigh": "52:54:00:aa:00:01", "family": "IPv4"}
    assert errors_of(tables) == [
        "error: NEIGH|Vlan1000|192.168.0.2: Vlan1000 has 4 member ports and the pipeline does "
        "not bridge, so the neighbour's port is unknown"
    ]


def test_merge_replaces_fields_of_the_same_key(tmp_path):
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"BUFFER_PROFILE": {"pg_300m_profile": {"size": "80000"}}}))
    tables = config_db.load_files([DATA / "seed000_as7726.json", extra])
    assert tables["BUFFER_PROFILE"]["pg_300m_profile"]["size"] == "80000"
    assert tables["BUFFER_PROFILE"]["pg_300m_profile"]["xoff"] == "13056"


def test_validate_cli_exit_status_and_messages(tmp_path, capsys):
    assert main(["validate", "--config", str(DATA / "t1_as7816.json")]) == 0
    bad = tmp_path / "bad.json"
    tables = seed_with_ports()
    tables["BUFFER_PROFILE"]["pg_300m_profile"]["xon"] = "20000"
    bad.write_text(json.dumps(tables))
    capsys.readouterr()
    assert main(["validate", "--config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "error: BUFFER_PROFILE|pg_300m_profile|xon: xon 20000 > xoff 13056" in err


def test_unreadable_json_names_the_file_and_position(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"PORT": {')
    with pytest.raises(config_db.ConfigError, match=r"broken.json: not JSON: .* line 1 column 11"):
        config_db.load_files([bad])


@pytest.mark.parametrize(
    ("prefix", "reason"),
    [
        ("10.1.0.1/24", "not a prefix with host bits clear: '10.1.0.1/24'"),
        ("10.1.0.0/33", "not a prefix with host bits clear: '10.1.0.0/33'"),
        ("10.1.0/24", "not a prefix with host bits clear: '10.1.0/24'"),
        ("2001:db8::/x", "not a prefix with host bits clear: '2001:db8::/x'"),
    ],
)
def test_static_route_prefixes_are_checked(prefix, reason):
    tables = load("t1_as7816.json")
    tables["STATIC_ROUTE"][prefix] = {"nexthop": "10.0.1.1"}
    assert errors_of(tables) == [f"error: STATIC_ROUTE|{prefix}: {reason}"]


def test_copp_tables_are_checked():
    tables = load("t0_as7726.json")
    tables["COPP_TRAP"]["arp"]["trap_group"] = "queue9"
    tables["COPP_GROUP"]["queue1_group1"]["cir"] = "fast"
    assert errors_of(tables) == [
        "error: COPP_GROUP|queue1_group1|cir: not a number: 'fast'",
        "error: COPP_TRAP|arp|trap_group: missing reference: COPP_GROUP|queue9 does not exist",
    ]


def test_sfc_threshold_defaults_to_twice_the_queues_kmax():
    # Seed 003: remote PFC threshold = 2 x Kmax. t1's AZURE_LOSSLESS has Kmax 2097152.
    tables = load("t1_as7816.json")
    del tables["SFC"]["Ethernet0,Ethernet4,Ethernet8,Ethernet12|3-4"]["threshold"]
    cfg, issues = config_db.parse(tables)
    assert [str(i) for i in issues if i.error] == []
    assert {q.threshold for q in cfg.sfc_queues.values()} == {2 * 2097152}
    assert len(cfg.sfc_queues) == 8


def test_sfc_threshold_without_an_ecn_queue_to_default_from_is_an_error():
    tables = load("t1_as7816.json")
    del tables["SFC"]["Ethernet0,Ethernet4,Ethernet8,Ethernet12|3-4"]["threshold"]
    tables["WRED_PROFILE"]["AZURE_LOSSLESS"]["ecn"] = "ecn_none"
    assert errors_of(tables) == [
        "error: SFC|Ethernet0,Ethernet4,Ethernet8,Ethernet12|3-4|threshold: missing, and "
        "Ethernet0 queue 3 has no WRED_PROFILE with ECN whose 2 x green_max_threshold could be "
        "the default"
    ]


def test_sfc_defaults_are_the_public_reference_and_variants_parse():
    tables = load("t1_as7816.json")
    cfg, issues = config_db.parse(tables)
    assert (cfg.sfc_dedup, cfg.sfc_version, cfg.sfc_src_port) == ("two_bank", 0, "data")
    tables["SFC"]["GLOBAL"].update({"dedup": "per_source", "version": "1", "src_port": "fixed"})
    cfg, issues = config_db.parse(tables)
    assert [str(i) for i in issues if i.error] == []
    assert (cfg.sfc_dedup, cfg.sfc_version, cfg.sfc_src_port) == ("per_source", 1, "fixed")


def test_sfc_variant_errors_name_table_key_field():
    tables = load("t1_as7816.json")
    tables["SFC"]["GLOBAL"].update({"dedup": "bloom", "version": "256", "src_port": "random"})
    assert errors_of(tables) == [
        "error: SFC|GLOBAL|dedup: must be one of two_bank, per_source, none, not 'bloom'",
        "error: SFC|GLOBAL|version: 256 is out of range (0..255)",
        "error: SFC|GLOBAL|src_port: must be one of data, fixed, not 'random'",
    ]
