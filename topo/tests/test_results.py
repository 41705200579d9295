"""results.json and plots from recorded tool output.

fixtures/ holds real recordings: roce-host write_bw (2 QPs, 300 x 4 KB, --samples CSV) and
write_lat --json over a veth pair; iperf3 -J with two streams over a veth pair; and switch-tm
statistics (TmStats::to_json) sampled every 20 ms of a simulated 2-to-1 incast into a 25 Mb/s
port that receives PFC XOFF for priority 3 at 0.2 s and XON at 0.25 s.
"""

import csv
import http.server
import json
import threading
import time
from pathlib import Path

import pytest

from lossless_topo import plots
from lossless_topo.results import (
    Measurement,
    Results,
    StatsPoller,
    StatsSample,
    buffer_series,
    drops,
    iperf3_throughput,
    latency_samples_from_csv,
    pfc_series,
    queue_avg_bytes,
    queue_series,
    queue_usage,
    table,
)

FIX = Path(__file__).parent / "fixtures"


def tm_samples():
    return [StatsSample(**s) for s in json.loads((FIX / "tm_stats_samples.json").read_text())]


def test_latency_samples_match_roce_hosts_own_average():
    samples = latency_samples_from_csv(FIX / "roce_write_bw_samples.csv")
    report = json.loads((FIX / "roce_write_bw_client.json").read_text())
    # write_bw's "latency" is post-to-completion of every message, the same as the CSV's
    assert len(samples) == report["iterations"] * report["qps_per_destination"]
    assert sum(samples) / len(samples) == pytest.approx(report["latency"]["t_avg_usec"], rel=1e-6)
    assert min(samples) == pytest.approx(report["latency"]["t_min_usec"], rel=1e-6)


def test_iperf3_series_per_stream_sum_to_the_interval_total():
    report = json.loads((FIX / "iperf3_client.json").read_text())
    series = iperf3_throughput(report)
    assert len(series) == len(report["start"]["connected"])
    for i, interval in enumerate(report["intervals"]):
        total = sum(points[i][1] for points in series.values())
        # each stream's rate is over its own interval length, which differs by microseconds
        assert total == pytest.approx(interval["sum"]["bits_per_second"], rel=1e-4)


def test_queue_series_shows_the_pause_window():
    series = queue_series(tm_samples())
    q3 = series["s1 port 3 q3"]
    paused_times = [t for t, p in zip(q3["t"], q3["paused"], strict=True) if p]
    assert paused_times and min(paused_times) >= 0.2 and max(paused_times) < 0.25
    # idle queues are left out of the plots
    assert "s1 port 1 q0" not in series
    # while paused nothing leaves queue 3, so its depth does not fall
    during = [d for t, d in zip(q3["t"], q3["depth_bytes"], strict=True) if 0.2 <= t < 0.25]
    assert during == sorted(during)


def test_queue_usage_and_drops_agree_with_the_stats():
    last = tm_samples()[-1].stats
    rows = [u for u in queue_usage(last) if u["port"] == 3]
    assert len(rows) == 8
    for u in rows:
        assert u["peak_cells"] >= u["current_cells"]
        assert u["peak_cells"] >= u["average_cells"]
    port3 = last["ports"][2]
    assert drops(last) == sum(sum(p["drops"].values()) for p in last["ports"])
    assert drops(last, 3) == sum(port3["queues"][3]["drops"].values())
    assert drops(last, 3) > 0  # the recording overflows the 2 MB buffer


def make_results():
    lat = json.loads((FIX / "roce_write_lat_client.json").read_text())
    return Results(
        topology="prio-2to1",
        experiment="prio-2to1",
        seed="001",
        scale={"factor": "1/4000"},
        switch="build/bin/p4-switch",
        missing_features=[],
        measurements=[
            Measurement(
                "bw",
                {},
                {"bw_gbps": 0.04},
                latency_us=latency_samples_from_csv(FIX / "roce_write_bw_samples.csv"),
                throughput=iperf3_throughput(json.loads((FIX / "iperf3_client.json").read_text())),
            ),
            Measurement("lat", {}, {"t_avg": lat["latency"]["t_avg_usec"]}),
        ],
        stats=tm_samples(),
        tables=[table("t", ["a", "b"], [[1, 2.5]])],
    )


def test_queue_average_between_two_readings():
    def reading(time_ns, avg):
        q = {"queue": 3, "avg_bytes": avg}
        return {"since_ns": 1000, "time_ns": time_ns, "ports": [{"port": 1, "queues": [q]}]}

    # 100 bytes on average over the first 1000 ns, then 400 for the next 3000 ns: 325 overall
    before, after = reading(2000, 100.0), reading(5000, 325.0)
    assert queue_avg_bytes(before, after, 1, 3) == pytest.approx(400.0)
    assert queue_avg_bytes(before, after, 2, 3) == 0.0
    with pytest.raises(ValueError, match="cleared"):
        queue_avg_bytes(before, {**after, "since_ns": 4000}, 1, 3)


def test_results_round_trip(tmp_path):
    res = make_results()
    path = res.write(tmp_path / "run")
    back = Results.read(path)
    assert back.measurements[0].latency_us == res.measurements[0].latency_us
    assert back.stats[3].stats == res.stats[3].stats
    assert back.tables == res.tables


def test_plots_are_png_files(tmp_path):
    written = plots.write_all(make_results(), tmp_path)
    assert sorted(p.name for p in written) == [
        "buffer.png",
        "latency_cdf.png",
        "queue_usage.png",
        "queues_pfc.png",
        "throughput.png",
    ]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000


def test_no_data_no_plots(tmp_path):
    empty = Results("x", "x", "", {}, "", [])
    assert plots.write_all(empty, tmp_path) == []


def test_table_aligns_and_marks_missing_values():
    text = table("T", ["roce:tcp", "Avg Latency"], [["9:1", 7.991], ["1:9", None]])
    assert text.splitlines() == ["T", "roce:tcp  Avg Latency", "9:1       7.99", "1:9       -"]
    assert list(csv.reader([text.splitlines()[1]]))  # plain text, no tabs


def test_poller_keeps_a_bounded_timeline_of_compacted_stats():
    body = json.dumps({"tm": tm_samples()[-1].stats}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    addr = f"127.0.0.1:{server.server_address[1]}"
    try:
        poller = StatsPoller({"a": addr, "b": addr}, interval_s=0.001, max_rounds=8).start()
        deadline = time.monotonic() + 30
        while poller.interval_s < 0.004 and time.monotonic() < deadline:
            time.sleep(0.01)
        samples = poller.stop()
    finally:
        server.shutdown()
    assert poller.interval_s >= 0.004  # decimated at least twice
    assert 0 < len(poller.rounds) < 8
    # every kept round still has both switches, in time order
    assert all([s.switch for s in r] == ["a", "b"] for r in poller.rounds)
    assert [s.t for s in samples] == sorted(s.t for s in samples)
    # queues that held, sent, dropped nothing and were never paused are not kept
    for s in samples:
        for port in s.stats["ports"]:
            for q in port["queues"]:
                assert (
                    q["tx_packets"] or q["depth_bytes"] or q["paused"] or any(q["drops"].values())
                )


def sim_sample(t_ns: int, used_cells: int, xoff_tx: int, xon_tx: int, depth: int) -> dict:
    """One lossless-sim timeline sample of switch s1 (its `stats` member), port 2 priority 3."""
    counts = [0] * 8
    port = {
        "port": 2,
        "used_cells": depth // 256,
        "queues": [
            {"queue": 3, "depth_bytes": depth, "depth_cells": depth // 256, "paused": False}
        ],
    }
    if xoff_tx or xon_tx:  # left out while all are 0
        port["pfc_xoff_tx"] = [xoff_tx if p == 3 else 0 for p in range(8)]
        port["pfc_xon_tx"] = [xon_tx if p == 3 else 0 for p in range(8)]
        port["pfc_xoff_rx"] = counts
        port["pfc_xon_rx"] = counts
    return {
        "t": t_ns / 1e9,
        "switch": "s1",
        "stats": {
            "time_ns": t_ns,
            "buffer": {"cell_bytes": 256, "total_cells": 1000, "used_cells": used_cells},
            "ports": [port],
        },
    }


def test_pfc_and_buffer_series_from_sim_samples():
    samples = [
        StatsSample(**sim_sample(t, u, x, n, d))
        for t, u, x, n, d in [(0, 0, 0, 0, 0), (1000, 4, 1, 0, 1024), (2000, 0, 1, 1, 0)]
    ]
    pfc = pfc_series(samples)
    assert list(pfc) == ["s1 port 2 prio 3"]
    # from the first sample with a PFC frame counted
    assert pfc["s1 port 2 prio 3"]["t"] == [1e-6, 2e-6]
    assert pfc["s1 port 2 prio 3"]["pfc_xoff_tx"] == [1, 1]
    assert pfc["s1 port 2 prio 3"]["pfc_xon_tx"] == [0, 1]
    assert buffer_series(samples)["s1"]["used_bytes"] == [0, 1024, 0]


def test_plots_of_a_sim_run_per_case(tmp_path):
    """`python -m lossless_topo.plots` on a lossless-sim results.json of two cases: the
    latency CDF of both, and each case's own plots from its measurements and stretch of time."""
    doc = {
        "topology": "t",
        "experiment": "incast",
        "seed": "000",
        "scale": {"factor": 1},
        "switch": "lossless-sim",
        "missing_features": [],
        "measurements": [
            {"case": c, "params": {}, "values": {}, "latency_us": [1.0, 2.0, 4.0], "throughput": {}}
            for c in ("a", "b")
        ],
        "stats": [sim_sample(t, 4, 1, 0, 1024) for t in (0, 1000, 2000)]
        + [sim_sample(t, 0, 0, 0, 2048) for t in (10_000, 11_000)],
        "tables": [],
        "sim": {
            "cases": [
                {"name": "a", "start_ns": 0, "end_ns": 5000, "measurements": 1},
                {"name": "b", "start_ns": 10_000, "end_ns": 11_000, "measurements": 1},
            ]
        },
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    assert plots.main([str(path)]) == 0
    assert (tmp_path / "latency_cdf.png").exists()
    a = sorted(p.name for p in (tmp_path / "cases" / "a").iterdir())
    b = sorted(p.name for p in (tmp_path / "cases" / "b").iterdir())
    assert a == ["buffer.png", "latency_cdf.png", "pfc_frames.png", "queues_pfc.png"]
    # case b sent no PFC frame and its buffer stayed empty
    assert b == ["latency_cdf.png", "queues_pfc.png"]
    for p in (tmp_path / "cases").rglob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plots.main([str(tmp_path / "missing.json")]) == 2
