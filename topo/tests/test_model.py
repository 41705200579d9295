"""Topology data: every file loads, every link endpoint exists, rates, routes, configs."""

import copy
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from lossless_ctl.chips import CHIPS, chip_for_platform
from lossless_topo import configdb, model

CTL = [sys.executable, "-m", "lossless_ctl.cli"]


def raw(name):
    return json.loads((model.TOPOLOGY_DIR / f"{name}.json").read_text())


@pytest.mark.parametrize("name", ["prio-2to1", "incast-16to1", "leafspine-7to1", "fieldtest-7to1"])
def test_topology_links_and_rates(name):
    topo = model.load(name)
    nodes = set(topo.switches) | set(topo.hosts)
    for link in topo.links:
        assert link.a.node in nodes and link.b.node in nodes
        assert link.rate_mbps > 0
    for sw in topo.switches:
        ports = [local.port for local, _, _ in topo.switch_links(sw)]
        assert ports == list(range(1, len(ports) + 1))
    for host in topo.hosts.values():
        local, remote, _ = topo.host_link(host.name)
        assert remote.node == host.switch
        assert remote.ip.ip == host.gateway


def test_seed_shapes():
    assert len(model.load("prio-2to1").hosts) == 3
    incast = model.load("incast-16to1")
    assert len(incast.experiment["senders"]) == 16
    assert incast.switches["s1"].front_panel_ports == 32
    ls = model.load("leafspine-7to1")
    assert (len(ls.switches), len(ls.hosts)) == (10, 8)
    # full bisection: every leaf has as much uplink as downlink capacity
    for sw in ls.switches:
        if sw.startswith("leaf"):
            links = ls.switch_links(sw)
            down = sum(r for _, rem, r in links if rem.node in ls.hosts)
            up = sum(r for _, rem, r in links if rem.node in ls.switches)
            assert up >= down


def test_leafspine_routes_use_both_spines():
    ls = model.load("leafspine-7to1")
    hops = ls.routes("leaf1")["10.0.8.0/24"]
    assert sorted(h.node for h in hops) == ["spine1", "spine2"]
    assert [h.node for h in ls.routes("spine1")["10.0.8.0/24"]] == ["leaf8"]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["links"][0].update(b="s9"), "links[0].b: unknown node 's9'"),
        (lambda d: d["links"][1].update(rate_mbps=0), "links[1].rate_mbps: must be positive"),
        (lambda d: d["links"][1].update(rate_mbps="fast"), "links[1].rate_mbps: expected int"),
        (lambda d: d["links"].pop(), "hosts: h3 has no link"),
        (lambda d: d["hosts"][1].update(ip="10.0.1.9/24"), "overlap"),
        (lambda d: d["hosts"][0].update(ip="10.0.1.1/24"), "hosts[0].ip: 10.0.1.1/24 leaves no"),
        (lambda d: d["hosts"].append(dict(d["hosts"][0])), "hosts[3].name: duplicate node 'h1'"),
        (lambda d: d.update(buffer_size=1), "buffer_size: unknown field"),
        (lambda d: d["links"][2].update(cable=3), "links[2].cable: unknown field"),
        (lambda d: d["hosts"][0].update(port=1), "hosts[0].port: unknown field"),
        (lambda d: d["experiment"].update(lat_itres=5), "experiment.lat_itres: unknown field"),
        (lambda d: d["experiment"]["quick"].update(x=1), "experiment.quick.x: unknown field"),
        (lambda d: d["experiment"].update(kind="nope"), "experiment.kind: unknown experiment"),
        (lambda d: d["links"][0].update(cable_m=-1), "links[0].cable_m: expected a non-negative"),
        (lambda d: d["links"][0].update(cable_m=1, delay_ns=5), "links[0]: give delay_ns or"),
        (lambda d: d.update(config_db={"SFC|threshold": 1}), 'config_db."SFC|threshold": expected'),
        (lambda d: d.update(config_db={"A|b|c": [1]}), 'config_db."A|b|c": expected a string'),
    ],
)
def test_bad_topologies_name_the_path(mutate, message):
    data = copy.deepcopy(raw("prio-2to1"))
    mutate(data)
    with pytest.raises(model.TopologyError, match=None) as e:
        model.parse(data)
    assert message in str(e.value)


def test_unknown_topology_lists_known_ones():
    known = "have: fieldtest-7to1, incast-16to1, leafspine-7to1"
    with pytest.raises(model.TopologyError, match=known):
        model.load("nope")


def test_scale_dilates_time_and_keeps_bytes():
    topo = model.load("leafspine-7to1")
    scale = model.Scale.for_topology(topo, 25)
    assert scale.factor == Fraction(1, 1000)
    assert scale.rate_mbps(25000) == 25
    assert scale.duration_us(55) == 55000
    assert scale.nominal_latency_us(4691.91e3) == pytest.approx(4691.91)
    # a lab rate above the nominal one is not "scaled up"
    assert model.Scale.for_topology(topo, 10**6).factor == 1


VARIANTS = [
    configdb.Variant(),
    configdb.Variant(pfc=False, buffers="default"),
    configdb.Variant(ecn=True),
    configdb.Variant(ecn=True, sfc=True, kmin=7000, kmax=750000, pmax_percent=10),
    configdb.Variant(ecn=True, sfc=True, buffers="dynamic", kmin=7000, kmax=750000),
]


@pytest.mark.parametrize("name", ["prio-2to1", "incast-16to1", "leafspine-7to1", "fieldtest-7to1"])
def test_config_db_validates(name, tmp_path):
    topo = model.load(name)
    scale = model.Scale.for_topology(topo, 25)
    for i, variant in enumerate(VARIANTS):
        for sw in list(topo.switches)[:3]:
            path = tmp_path / f"{sw}-{i}.json"
            path.write_text(json.dumps(configdb.build(topo, sw, variant, scale)))
            r = subprocess.run(
                [*CTL, "validate", "--config", str(path)], capture_output=True, text=True
            )
            assert r.returncode == 0, r.stdout + r.stderr
            assert "warning" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr


@pytest.mark.parametrize("name", ["prio-2to1", "incast-16to1", "leafspine-7to1", "fieldtest-7to1"])
def test_hwsku_names_the_topologys_chip(name, tmp_path):
    topo = model.load(name)
    assert chip_for_platform(topo.hwsku).name == topo.chip
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            configdb.build(
                topo,
                next(iter(topo.switches)),
                configdb.Variant(),
                model.Scale.for_topology(topo, 25),
            )
        )
    )
    out = tmp_path / "ports.json"
    subprocess.run([*CTL, "port-config", "--config", str(path), "-o", str(out)], check=True)
    ports = json.loads(out.read_text())
    # the switch's traffic manager counts buffer in the chip's cells
    assert ports["buffer"]["cell_bytes"] == CHIPS[topo.chip].cell_bytes
    # the fastest link runs at the lab's 25 Mb/s, the others in proportion
    assert max(p["rate_bps"] for p in ports["ports"]) == 25_000_000


def test_tuned_profile_is_buffer_calc_output(tmp_path):
    """The 'tuned' profile is what `lossless-ctl buffer-calc` prints for the same inputs."""
    topo = model.load("incast-16to1")
    variant = configdb.Variant(roce_mtu=4096)
    cfg = configdb.build(topo, "s1", variant, model.Scale.for_topology(topo, 100))
    mtu = 4096 + configdb.ROCE_OVERHEAD
    r = subprocess.run(
        [*CTL, "buffer-calc", "--mtu", str(mtu), "--chip", "trident3", "--ports", "32"],
        capture_output=True,
        text=True,
        check=True,
    )
    calc = json.loads(r.stdout)["BUFFER_PROFILE"]["pg_lossless_profile"]
    ours = cfg["BUFFER_PROFILE"]["pg_lossless_profile"]
    assert {k: ours[k] for k in ("size", "xoff", "xon")} == {
        k: calc[k] for k in ("size", "xoff", "xon")
    }
    # seed 000's worked example: 4174-byte frames, 256-byte cells, 32 ports
    assert (ours["size"], ours["xoff"], ours["xon"]) == ("69632", "13056", "512")


def test_variants_change_what_they_say():
    topo = model.load("prio-2to1")
    scale = model.Scale.for_topology(topo, 100)
    off = configdb.build(topo, "s1", configdb.Variant(pfc=False, buffers="default"), scale)
    assert all("pfc_enable" not in q for q in off["PORT_QOS_MAP"].values())
    assert "WRED_PROFILE" not in off
    on = configdb.build(topo, "s1", configdb.Variant(ecn=True), scale)
    assert on["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "3,4"
    assert on["WRED_PROFILE"]["AZURE_LOSSLESS"]["green_min_threshold"] == "5000"
    assert on["PORT"]["Ethernet0"]["speed"] == "100"
    # Without PFC the RoCE PGs are lossy, under the pipeline's admission like PG 0.
    assert off["BUFFER_PG"]["Ethernet0|3-4"] == off["BUFFER_PG"]["Ethernet0|0"]
    assert on["BUFFER_PG"]["Ethernet0|3-4"]["profile"] == "[BUFFER_PROFILE|pg_lossless_profile]"
    # The traffic manager (egress pool) has room beyond what the pipeline admits (ingress).
    for cfg in (off, on):
        pools = cfg["BUFFER_POOL"]
        assert int(pools["egress_lossy_pool"]["size"]) > int(pools["ingress_lossless_pool"]["size"])


def test_dynamic_buffers_and_sfc_interval_at_lab_rates():
    topo = model.load("leafspine-7to1")
    scale = model.Scale.for_topology(topo, 25)
    v = configdb.Variant(sfc=True, buffers="dynamic", roce_mtu=4096, sfc_min_interval_us=100)
    cfg = configdb.build(topo, "leaf1", v, scale)
    prof = cfg["BUFFER_PROFILE"]["pg_lossless_profile"]
    # seed 000's sizes, sharing the pool (seed 003: "32MB, dynamic threshold")
    assert (prof["size"], prof["xoff"], prof["dynamic_th"]) == ("69632", "13056", "0")
    assert "static_th" not in prof
    assert cfg["BUFFER_POOL"]["ingress_lossless_pool"]["mode"] == "dynamic"
    # 100 us dilated x1000 is 100 ms, longer than the 65.5 ms an SFC pause can last
    assert cfg["SFC"]["GLOBAL"]["min_interval_us"] == str(configdb.SFC_MAX_PAUSE_US)
    fast = configdb.build(topo, "leaf1", v, model.Scale.for_topology(topo, 25000))
    assert fast["SFC"]["GLOBAL"]["min_interval_us"] == "100"
    assert Path(model.TOPOLOGY_DIR).is_dir()


def test_link_delay_from_cable_or_ns():
    data = copy.deepcopy(raw("prio-2to1"))
    data["links"][0]["cable_m"] = 40
    data["links"][1]["delay_ns"] = 7
    topo = model.parse(data)
    assert [link.delay_ns for link in topo.links] == [200, 7, 0]


@pytest.mark.parametrize(
    "name, cases",
    [
        ("prio-2to1", ["ecn=on", "ecn=off"]),
        ("incast-16to1", ["default", "tuned", "pfc"]),
        ("leafspine-7to1", ["sfc=off", "sfc=on"]),
    ],
)
def test_case_variants_name_every_loaded_config(name, cases):
    variants = configdb.case_variants(configdb.experiment_params(raw(name)["experiment"], False))
    assert list(variants) == cases
    assert len(set(variants.values())) == len(cases)


def test_fieldtest_parts_share_seed_003s_config_without_remote_pfc():
    params = configdb.experiment_params(raw("fieldtest-7to1")["experiment"], False)
    variants = configdb.case_variants(params)
    assert list(variants) == ["latency", "ecn-ratio", "cnp-rate"]
    (v,) = set(variants.values())
    assert (v.ecn, v.sfc, v.pfc, v.buffers) == (True, False, True, "dynamic")
    assert (v.kmin, v.kmax, v.pmax_percent) == (7000, 750000, 10)


def test_simcase_writes_fabric_and_configs_at_nominal_rates(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "lossless_topo.simcase",
            "leafspine-7to1",
            "--out",
            str(tmp_path),
            "--case",
            "sfc=on",
            "--quick",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    fabric = json.loads((tmp_path / "fabric.json").read_text())
    assert out.stdout.strip() == str(tmp_path / "fabric.json")
    assert fabric["case"] == "sfc=on" and fabric["cases"] == ["sfc=off", "sfc=on"]
    assert fabric["experiment"]["iters"] == 5  # quick override applied
    assert len(fabric["switches"]) == 10 and len(fabric["hosts"]) == 8
    leaf1 = json.loads((tmp_path / "config" / "leaf1.config_db.json").read_text())
    assert {p["speed"] for p in leaf1["PORT"].values()} == {"25000"}
    assert "SFC" in leaf1
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "lossless_topo.simcase",
            "prio-2to1",
            "--out",
            str(tmp_path),
            "--case",
            "nope",
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert "--case nope: no such case (have: ecn=on, ecn=off)" in bad.stderr


def sfc_configs(settings: dict, sfc: bool = True) -> dict[str, dict]:
    data = raw("leafspine-7to1")
    data["config_db"] = settings
    topo = model.parse(data)
    variant = configdb.case_variants(configdb.experiment_params(topo.experiment, True))
    return configdb.configs(topo, variant[f"sfc={'on' if sfc else 'off'}"], model.Scale(1, 25000))


def test_topology_config_db_settings_land_in_every_switch():
    queues = "SFC|*|3-4|threshold"
    cfgs = sfc_configs({queues: 1500000, "SFC|GLOBAL|dedup": "per_source", "PORT|*|mtu": 4000})
    for cfg in cfgs.values():
        (queue,) = [v for k, v in cfg["SFC"].items() if k.endswith("|3-4")]
        assert queue["threshold"] == "1500000"
        assert cfg["SFC"]["GLOBAL"]["dedup"] == "per_source"
        assert {p["mtu"] for p in cfg["PORT"].values()} == {"4000"}
    # With sfc=off no switch has an SFC table: the setting has nothing to change.
    assert all("SFC" not in cfg for cfg in sfc_configs({queues: 1}, sfc=False).values())


def test_topology_config_db_settings_for_some_switches_win_over_those_for_all():
    # Given in the order that would lose if it were kept: the switch's own setting first.
    cfgs = sfc_configs(
        {
            "leaf8:SFC|*|3-4|threshold": 3000000,
            "leaf[1-3]:SFC|GLOBAL|dedup": "none",
            "SFC|*|3-4|threshold": 1500000,
        }
    )
    for sw, cfg in cfgs.items():
        (queue,) = [v for k, v in cfg["SFC"].items() if k.endswith("|3-4")]
        assert queue["threshold"] == ("3000000" if sw == "leaf8" else "1500000"), sw
        dedup = cfg["SFC"]["GLOBAL"].get("dedup")
        assert (dedup == "none") == (sw in {"leaf1", "leaf2", "leaf3"}), (sw, dedup)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"leaf9:SFC|GLOBAL|dedup": 1}, "no switch matches 'leaf9' (have: leaf1, leaf2,"),
        ({"SFC|*|3-5|threshold": 1}, "no SFC key matches '*|3-5' (have: Ethernet0,"),
        ({"SFC|GLOBAL|dedupe": 1}, "SFC has no field 'dedupe' (known: dedup,"),
        ({"SCF|GLOBAL|dedup": 1}, "lossless-ctl does not program a table 'SCF'"),
        (
            {"SFC|*|3-4|threshold": 1000},
            "leaf1: error: SFC|Ethernet0,Ethernet4,Ethernet8|3-4|target: "
            "target 750000 > threshold 1000",
        ),
    ],
)
def test_topology_config_db_mistakes_name_the_setting(settings, message):
    with pytest.raises(model.TopologyError) as e:
        sfc_configs(settings)
    assert str(e.value).startswith("config_db")
    assert message in str(e.value)
