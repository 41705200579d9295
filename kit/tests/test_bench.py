"""The controller bench end to end (`make bench` runs it as `python -m lossless_kit.bench`)."""

import json

from lossless_kit.bench import main as bench


def test_bench_writes_its_json(tmp_path):
    """The bench against the real p4-switch: routes over P4Runtime, and 8000 NSs punted
    through the switch's CPU port and answered (root: veths)."""
    out = tmp_path / "bench.json"
    assert bench(["--points", "ecmp_128x128,ipv4_10k,learn_nd_8k", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["target"].startswith("p4-switch")
    first, second, third = report["results"]
    assert (third["neighbors"], third["installed"], third["replies"]) == (8000, 8000, 8000)
    assert third["target"].startswith("p4-switch")
    assert (first["point"], first["ecmp"], first["routes"]) == ("ecmp_128x128", "128x128", 128)
    # 128 groups + 128 ECMP routes + their table entries + 129 members, beside the fixed part.
    assert first["updates"] > 128 * 3
    assert second["sonic_2019_s"] == 11 and second["routes"] == 10000
    assert second["routes_per_s"] > 0
