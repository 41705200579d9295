"""The seed 002 scale points: counts, uniqueness, and that the fragments are valid configs."""

import ipaddress

import pytest

from lossless_ctl import config_db
from lossless_ctl.cli import main
from lossless_ctl.routegen import SCALE_POINTS, ScalePoint, generate
from lossless_ctl.sai import derive


def routes(tables):
    return tables["STATIC_ROUTE"]


@pytest.mark.parametrize("name", ["ipv4_200k", "ipv6_65k", "arp_32k", "nd_16k"])
def test_largest_points_have_their_counts_and_unique_entries(name):
    point = SCALE_POINTS[name]
    tables = generate(point)
    prefixes = [ipaddress.ip_network(k) for k in routes(tables)]
    assert len(prefixes) == point.ipv4_routes + point.ipv6_routes
    assert len(set(prefixes)) == len(prefixes)  # keys of a dict, but as networks too
    assert all(p.prefixlen > 64 for p in prefixes if p.version == 6)
    neigh = tables["NEIGH"]
    assert len(neigh) == point.arp + point.nd
    macs = [v["neigh"] for v in neigh.values()]
    assert len(set(macs)) == len(macs)
    families = [v["family"] for v in neigh.values()]
    assert (families.count("IPv4"), families.count("IPv6")) == (point.arp, point.nd)


def test_scale_points_are_seed_002s():
    assert sorted(SCALE_POINTS) == sorted(
        [f"ipv4_{n}k" for n in (10, 30, 60, 90, 128, 160, 200)]
        + [f"ipv6_{n}k" for n in (10, 25, 40, 65)]
        + ["arp_8k", "arp_16k", "arp_32k", "nd_8k", "nd_16k"]
        + ["ecmp_512x32", "ecmp_256x64", "ecmp_128x128"]
    )


@pytest.mark.parametrize("name", ["ecmp_512x32", "ecmp_256x64", "ecmp_128x128"])
def test_ecmp_points_give_distinct_groups_of_the_right_width(name):
    point = SCALE_POINTS[name]
    cfg, issues = config_db.parse(generate(point))
    assert [i for i in issues if i.error] == []
    model = derive(cfg)
    groups = list(model.of_type("NEXT_HOP_GROUP"))
    assert len(groups) == point.ecmp_groups
    members: dict[str, set[str]] = {}
    for m in model.of_type("NEXT_HOP_GROUP_MEMBER"):
        group = m["SAI_NEXT_HOP_GROUP_MEMBER_ATTR_NEXT_HOP_GROUP_ID"]
        members.setdefault(group, set()).add(m["SAI_NEXT_HOP_GROUP_MEMBER_ATTR_NEXT_HOP_ID"])
    assert {len(s) for s in members.values()} == {point.ecmp_paths}
    assert len({frozenset(s) for s in members.values()}) == point.ecmp_groups


def test_route_and_neighbour_fragment_validates_and_derives():
    point = ScalePoint(ipv4_routes=1000, ipv6_routes=500, arp=300, nd=200, ports=8)
    cfg, issues = config_db.parse(generate(point))
    assert issues == []
    counts = derive(cfg).counts()
    assert counts["SAI_OBJECT_TYPE_NEIGHBOR_ENTRY"] == 500
    assert counts["SAI_OBJECT_TYPE_NEXT_HOP"] == 500
    # Routes + per port (connected v4, v6 and two IP2ME) = 1500 + 8 x 4.
    assert counts["SAI_OBJECT_TYPE_ROUTE_ENTRY"] == 1500 + 32


@pytest.mark.parametrize(
    "kwargs",
    [{"ports": 0}, {"arp": -1}, {"ecmp_groups": 4}, {"ecmp_groups": 4, "ecmp_paths": 1}],
)
def test_bad_scale_points_are_refused(kwargs):
    with pytest.raises(ValueError):
        ScalePoint(**kwargs)


def test_cli_writes_a_fragment(tmp_path):
    out = tmp_path / "routes.json"
    assert (
        main(["gen-routes", "--ipv4", "100", "--arp", "10", "--ecmp", "4x3", "-o", str(out)]) == 0
    )
    assert main(["validate", "--config", str(out)]) == 0
