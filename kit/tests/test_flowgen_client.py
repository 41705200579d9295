"""The flowgen client against the real binary, in sink mode, with short runs."""

import csv
import math
import subprocess

import pytest

from lossless_kit import flowgen_client as fc
from lossless_paths import ROOT


@pytest.fixture(scope="module")
def client():
    try:
        return fc.FlowgenClient()
    except fc.FlowgenError:
        # Not built yet (a fresh checkout running pytest alone): build just this crate.
        subprocess.run(
            ["cargo", "build", "--release", "-p", "flowgen"], cwd=ROOT, check=True, timeout=900
        )
        return fc.FlowgenClient()


def test_sweep_points_follow_the_seed_script():
    # Seed 004's loop, literally: active_flow *= factor, floored, num_point + 1 points.
    max_flows, min_flows, num_point = 8000000, 100, 10
    factor = math.exp(math.log(max_flows / min_flows, math.e) / num_point)
    expected, active_flow = [], min_flows
    for _ in range(num_point + 1):
        expected.append(math.floor(active_flow))
        active_flow = active_flow * factor
    got = fc.sweep_points()
    assert len(got) == 11
    # Repeated multiplication and powers may differ in the last float bit.
    assert all(abs(a - b) <= 1 for a, b in zip(got, expected, strict=True))
    assert got[0] == 100


def test_sink_run_reports_flows_and_packets(client):
    # The seed profile: 100 cps, ten 64-byte packets 200 us apart; x1000 for 0.02 s.
    opts = fc.RunOptions(multiplier=1000, duration=0.02, scheduler="pq")
    r = client.run(fc.SEED_PROFILE, opts)
    cps = 100 * 1000
    assert r.flows_started == math.floor(cps * 0.02) + 1
    assert r.scheduler == "pq"
    assert r.bytes == 64 * r.packets
    # Flows started more than 1.8 ms before the end have sent all ten packets.
    complete = math.floor((0.02 - 9 * 200e-6) * cps) + 1
    assert r.flows_ended == complete
    assert r.packets >= 10 * complete
    assert r.active_flows == r.flows_started - r.flows_ended


def test_active_flows_and_wheel_options_reach_the_binary(client):
    opts = fc.RunOptions(
        multiplier=30000,
        duration=1e9,
        active_flows=20000,
        prefill=True,
        pace="max",
        max_packets=200000,
        buckets=4096,
        levels=2,
    )
    r = client.run(fc.SEED_PROFILE, opts)
    assert (r.tw_buckets, r.tw_levels) == (4096, 2)
    assert abs(r.active_flows - 20000) / 20000 < 0.02
    assert r.packets >= 200000
    assert r.mpps_per_core > 0


def test_samples_are_value_lists(client):
    # A realtime run of 1.2 s produces one per-second sample.
    opts = fc.RunOptions(multiplier=10, duration=1.2, pace="realtime")
    r = client.run(fc.SEED_PROFILE, opts)
    assert len(r.value_list("tx_pps")) == 1
    assert r.value_list("active_flows")[0] > 0
    # 1000 flows/s of 10 packets: about 10k packets per second.
    assert 5000 < r.value_list("tx_pps")[0] < 15000


def test_bad_profile_raises_the_one_line_error(client, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "generator: {clients_start: 16.0.0.1, clients_end: 16.0.0.9,"
        " servers_start: 48.0.0.1, servers_end: 48.0.0.9}\n"
        "tw: {buckets: 1000}\n"
        "cap_info: [{builtin: {kind: udp, packets: 2}, cps: 1}]\n"
    )
    with pytest.raises(
        fc.FlowgenError, match=r"tw\.buckets \(line 2, column \d+\): must be a power"
    ):
        client.run(bad, fc.RunOptions())


def test_interface_run_uses_the_tx_method_asked_for(client):
    # Loopback takes AF_PACKET frames as any interface does; CI runs as root (CAP_NET_RAW).
    for tx in ("plain", "ring"):
        opts = fc.RunOptions(ifaces=["lo"], tx=tx, tx_ring_slots=64, multiplier=10, duration=0.1)
        r = client.run(fc.SEED_PROFILE, opts)
        assert r.tx_methods == [tx]
        assert r.packets > 0 and r.tx_dropped == 0


def test_sweep_writes_a_row_per_variant_and_point(client, tmp_path):
    out = tmp_path / "sweep.csv"
    variants = [fc.Variant("pq", "pq"), fc.Variant("tw1", "tw", buckets=16384, levels=2)]
    rows = client.sweep(out, variants, points=[100, 1000, 10000], packets=100000)
    with open(out, newline="") as f:
        read = list(csv.DictReader(f))
    assert [r["variant"] for r in read] == ["pq"] * 3 + ["tw1"] * 3
    assert [int(r["active_flows_target"]) for r in read] == [100, 1000, 10000] * 2
    assert all(float(r["mpps_per_core"]) > 0 for r in read)
    assert read[3]["buckets"] == "16384" and read[0]["buckets"] == ""
    assert len(rows) == 6
    curves = fc.read_sweep(out)
    assert sorted(curves) == ["pq", "tw1"]
    assert [n for n, _ in curves["tw1"]] == sorted(n for n, _ in curves["tw1"])


def test_plot_draws_a_png_or_says_what_is_missing(tmp_path):
    data = tmp_path / "s.csv"
    with open(data, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fc.SWEEP_COLUMNS)
        w.writeheader()
        for name, mpps in (("pq", [9.0, 4.0]), ("tw0", [20.0, 19.0])):
            for n, m in zip([100, 8000000], mpps, strict=True):
                w.writerow({"variant": name, "active_flows": n, "mpps_per_core": m})
    png = tmp_path / "s.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(fc.FlowgenError, match="needs matplotlib"):
            fc.plot_sweep(data, png)
        return
    fc.plot_sweep(data, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_variant_specs_match_the_binary():
    v = fc._parse_variant("tw1=tw:16384x2:10@p.yaml")
    assert (v.scheduler, v.buckets, v.levels, v.bucket_usec, str(v.profile)) == (
        "tw",
        16384,
        2,
        10.0,
        "p.yaml",
    )
    assert fc._parse_variant("pq=pq") == fc.Variant("pq", "pq")
