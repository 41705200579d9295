"""What lossless-sim needs from a topology file, derived by the lab's own code.

`python -m lossless_topo.simcase TOPOLOGY.json --out DIR [--case NAME] [--quick]` writes
`DIR/fabric.json` (switches with their device ids and MACs, hosts with addresses, gateways and
MACs, links by switch port number with rate and propagation delay, the experiment's parameters
with the quick overrides applied, the case list) and `DIR/config/SWITCH.config_db.json` for the
case, at the nominal link rates (no scale factor). The simulator then programs every switch
from those files with `lossless-ctl`, as the lab does; the topology format and the config_db
generation stay in one place. Errors (a located message) exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

from . import configdb
from .model import Scale, Topology, TopologyError, load

NOMINAL = Fraction(1)


def fabric(topo: Topology, params: dict, case: str, cases: list[str]) -> dict:
    return {
        "topology": topo.name,
        "seed": topo.seed,
        "experiment": params,
        "case": case,
        "cases": cases,
        "switches": [
            {
                "name": s.name,
                "device_id": s.index,
                "mac": s.mac,
                "config_db": f"config/{s.name}.config_db.json",
            }
            for s in topo.switches.values()
        ],
        "hosts": [
            {
                "name": h.name,
                "switch": h.switch,
                "ip": str(h.ip.ip),
                "prefix_len": h.ip.network.prefixlen,
                "mac": h.mac,
                "gateway": str(h.gateway),
                "gateway_mac": topo.switches[h.switch].mac,
            }
            for h in topo.hosts.values()
        ],
        "links": [
            {
                "a": {"node": link.a.node, "port": link.a.port},
                "b": {"node": link.b.node, "port": link.b.port},
                "rate_mbps": link.rate_mbps,
                "delay_ns": link.delay_ns,
            }
            for link in topo.links
        ],
    }


def write(topo: Topology, out: Path, case: str | None, quick: bool) -> Path:
    params = configdb.experiment_params(topo.experiment, quick)
    variants = configdb.case_variants(params) if params else {"default": configdb.Variant()}
    name = case if case is not None else next(iter(variants))
    if name not in variants:
        raise TopologyError(f"--case {name}: no such case (have: {', '.join(variants)})")
    scale = Scale(NOMINAL, topo.max_rate_mbps())
    (out / "config").mkdir(parents=True, exist_ok=True)
    for sw, cfg in configdb.configs(topo, variants[name], scale).items():
        (out / "config" / f"{sw}.config_db.json").write_text(json.dumps(cfg, indent=2) + "\n")
    path = out / "fabric.json"
    path.write_text(json.dumps(fabric(topo, params, name, list(variants)), indent=2) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lossless_topo.simcase", description=__doc__)
    p.add_argument("topology", help="topology file or name (topologies/NAME.json)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--case", help="the experiment case to configure (default: the first)")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    try:
        print(write(load(args.topology), args.out, args.case, args.quick))
    except (TopologyError, ValueError) as e:
        print(f"{args.topology}: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"{args.topology}: experiment.{e.args[0]}: missing", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
