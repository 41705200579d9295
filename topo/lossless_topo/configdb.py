"""Each switch's config_db.json, generated from the topology and an experiment variant.

The template is SONiC's lossless QoS model as seed 000 writes it: DSCP -> TC (DSCP / 8, so
roce-host's priority = DSCP / 8 lands in the same TC), TC -> PG (3 -> 3, 4 -> 4, else 0),
TC -> queue identity, PFC on the variant's lossless priorities, a lossless BUFFER_PROFILE from
`lossless-ctl buffer-calc`'s seed 000 formula when the variant asks for "tuned" buffers, WRED
ECN on the lossless queues when ECN is on, and SFC (seed 003) when asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from lossless_ctl.buffer_calc import BufferProfile, seed000_profile
from lossless_ctl.chips import CHIPS
from lossless_ctl.config_db import HANDLED_TABLES, KNOWN_FIELDS, parse

from .model import Scale, Topology, TopologyError, ipv6_of

# RoCEv2 frame overhead on top of the RoCE MTU payload: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12
# + RETH 16 + ICRC 4 + FCS 4; seed 000's 4174 bytes for a 4096-byte MTU is the same sum.
ROCE_OVERHEAD = 78
LOSSLESS_PRIORITIES = (3, 4)
LOSSLESS_PGS = f"{LOSSLESS_PRIORITIES[0]}-{LOSSLESS_PRIORITIES[-1]}"
PORT_MTU = 9100
# The longest pause an SFC message carries (its duration is 16 bits of microseconds). Dilated,
# the minimum interval between two signals to one source (100 us nominal) would be longer at
# lab rates (100 ms at 1/1000), and sources would send between the end of one pause and the
# next signal; it is capped here so that consecutive pauses can cover the interval.
SFC_MAX_PAUSE_US = 65535


@dataclass(frozen=True)
class Variant:
    """What one experiment case changes in every switch's config."""

    pfc: bool = True
    ecn: bool = False
    # "tuned": buffer-calc's profile, static thresholds (seed 000); "dynamic": the same
    # profile sharing the pool with dynamic_th 0 (seed 003's "32MB, dynamic threshold");
    # "default": SONiC's untuned shape, dynamic.
    buffers: str = "tuned"
    sfc: bool = False
    roce_mtu: int = 1024
    kmin: int = 5000
    kmax: int = 200000
    pmax_percent: int = 1
    sfc_threshold: int = 0
    sfc_min_interval_us: float = 100.0


def port_name(port: int) -> str:
    """SONiC names front-panel ports Ethernet0, Ethernet4, ... (four lanes each)."""
    return f"Ethernet{(port - 1) * 4}"


def tuned_profile(topo: Topology, switch: str, roce_mtu: int):
    """The seed 000 profile: MTU cells of the chip, sized for ports/2 senders."""
    cell = CHIPS[topo.chip].cell_bytes
    return seed000_profile(roce_mtu + ROCE_OVERHEAD, cell, topo.switches[switch].front_panel_ports)


def build(
    topo: Topology, switch: str, variant: Variant, scale: Scale, static_routes: bool = True
) -> dict:
    """The switch's config; without `static_routes` (ROUTING=bgp) its routes come from FRR
    and its neighbours (hosts, peers) are learned (ARP through the host interfaces, as SONiC's
    neighsyncd learns them from the kernel), not in NEIGH."""
    sw = topo.switches[switch]
    ports = topo.switch_links(switch)
    names = [port_name(local.port) for local, _, _ in ports]
    cfg: dict[str, dict] = {
        "DEVICE_METADATA": {
            # The HWSKU names the chip (cell size, PFC limits) for validate and port-config.
            "localhost": {"hostname": switch, "mac": sw.mac, "hwsku": topo.hwsku}
        },
        "PORT": {},
        "INTERFACE": {},
        "NEIGH": {},
        "STATIC_ROUTE": {},
        "DSCP_TO_TC_MAP": {"AZURE": {str(d): str(d // 8) for d in range(64)}},
        "TC_TO_PRIORITY_GROUP_MAP": {
            "AZURE": {str(tc): str(tc if tc in LOSSLESS_PRIORITIES else 0) for tc in range(8)}
        },
        "TC_TO_QUEUE_MAP": {"AZURE": {str(tc): str(tc) for tc in range(8)}},
        "PORT_QOS_MAP": {},
        "BUFFER_POOL": {
            "ingress_lossless_pool": {
                "mode": "static" if variant.buffers == "tuned" else "dynamic",
                "size": str(topo.buffer_bytes),
                "type": "ingress",
            },
            # The traffic manager's buffer (lossless-ctl port-config: the egress pool's size).
            # It counts 256-byte cells, the pipeline admits bytes into the ingress pool: a
            # 4170-byte RoCE frame fills 17 cells (4352 bytes). With no room for that the
            # traffic manager drops frames the pipeline has admitted (released from its PG and
            # pool counts, but counted only as queue drops); 1/16 more keeps every drop in the
            # pipeline, where it is counted per PG.
            "egress_lossy_pool": {
                "mode": "dynamic",
                "size": str(topo.buffer_bytes + topo.buffer_bytes // 16),
                "type": "egress",
            },
        },
        "BUFFER_PROFILE": {
            "ingress_lossy_profile": {
                "pool": "[BUFFER_POOL|ingress_lossless_pool]",
                "size": "0",
                **(
                    {"static_th": str(topo.buffer_bytes)}
                    if variant.buffers == "tuned"
                    else {"dynamic_th": "0"}
                ),
            },
        },
        "BUFFER_PG": {},
    }
    for (local, remote, rate), name in zip(ports, names, strict=True):
        cfg["PORT"][name] = {
            "index": str(local.port),
            "speed": str(scale.rate_mbps(rate)),
            "mtu": str(PORT_MTU),
            "admin_status": "up",
            "alias": local.intf,
        }
        cfg["INTERFACE"][name] = {}
        if local.ip is not None:
            cfg["INTERFACE"][f"{name}|{local.ip}"] = {}
            if not static_routes:
                cfg["INTERFACE"][f"{name}|{ipv6_of(local.ip)}"] = {}
        if static_routes and remote.node in topo.hosts:
            host = topo.hosts[remote.node]
            cfg["NEIGH"][f"{name}|{host.ip.ip}"] = {"neigh": host.mac, "family": "IPv4"}
        elif static_routes and remote.ip is not None:
            peer = topo.switches[remote.node]
            cfg["NEIGH"][f"{name}|{remote.ip.ip}"] = {"neigh": peer.mac, "family": "IPv4"}
        qos = {
            "dscp_to_tc_map": "[DSCP_TO_TC_MAP|AZURE]",
            "tc_to_pg_map": "[TC_TO_PRIORITY_GROUP_MAP|AZURE]",
            "tc_to_queue_map": "[TC_TO_QUEUE_MAP|AZURE]",
        }
        if variant.pfc:
            qos["pfc_enable"] = ",".join(str(p) for p in LOSSLESS_PRIORITIES)
        cfg["PORT_QOS_MAP"][name] = qos
        cfg["BUFFER_PG"][f"{name}|0"] = {"profile": "[BUFFER_PROFILE|ingress_lossy_profile]"}
        if not variant.pfc:
            # Without PFC the RoCE priorities are lossy like the rest and share the pool under
            # the same profile. Left without one, the pipeline would admit them unchecked and
            # the traffic manager drop them when its buffer is full, after ingress counted
            # them: bytes egress never takes back, so the PGs and the pool would look full for
            # good (and every later case, and the lossy control traffic, would see no room).
            cfg["BUFFER_PG"][f"{name}|{LOSSLESS_PGS}"] = {
                "profile": "[BUFFER_PROFILE|ingress_lossy_profile]"
            }
    for subnet, hops in topo.routes(switch).items() if static_routes else ():
        cfg["STATIC_ROUTE"][subnet] = {"nexthop": ",".join(str(h.ip.ip) for h in hops if h.ip)}
    if variant.pfc:
        if variant.buffers in ("tuned", "dynamic"):
            profile = tuned_profile(topo, switch, variant.roce_mtu)
        else:
            # SONiC's default lossless profile shape without tuning: one MTU of headroom.
            mtu = variant.roce_mtu + ROCE_OVERHEAD
            profile = BufferProfile(size=4 * mtu, xoff=mtu, xon=mtu)
        cfg["BUFFER_PROFILE"]["pg_lossless_profile"] = {
            **profile.as_config(),
            **({"static_th": "0"} if variant.buffers == "tuned" else {"dynamic_th": "0"}),
        }
        cfg["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"] = str(sum(profile.xoff for _ in names))
        for name in names:
            cfg["BUFFER_PG"][f"{name}|{LOSSLESS_PGS}"] = {
                "profile": "[BUFFER_PROFILE|pg_lossless_profile]"
            }
    # SONiC's default QoS template: DWRR on the data queues, the lossless ones (3, 4) weighted
    # 15 and the others 14. With strict priority instead, write_lat on priority 3 would wait
    # behind every write_bw frame on priority 4 (seed 001's (3, 4) case shows isolation).
    cfg["SCHEDULER"] = {
        "scheduler.0": {"type": "DWRR", "weight": "14"},
        "scheduler.1": {"type": "DWRR", "weight": "15"},
    }
    cfg["QUEUE"] = {}
    for name in names:
        for queues, sched in (
            ("0-2", "scheduler.0"),
            ("3-4", "scheduler.1"),
            ("5-6", "scheduler.0"),
        ):
            cfg["QUEUE"][f"{name}|{queues}"] = {"scheduler": f"[SCHEDULER|{sched}]"}
    if variant.ecn:
        cfg["WRED_PROFILE"] = {
            "AZURE_LOSSLESS": {
                "ecn": "ecn_all",
                "wred_green_enable": "true",
                "green_min_threshold": str(variant.kmin),
                "green_max_threshold": str(variant.kmax),
                "green_drop_probability": str(variant.pmax_percent),
            }
        }
        for name in names:
            cfg["QUEUE"][f"{name}|3-4"]["wred_profile"] = "[WRED_PROFILE|AZURE_LOSSLESS]"
    if variant.sfc:
        cfg["SFC"] = {
            "GLOBAL": {
                "min_interval_us": str(
                    min(round(scale.duration_us(variant.sfc_min_interval_us)), SFC_MAX_PAUSE_US)
                ),
                "signal_dscp": "48",
            }
        }
        for (_, remote, _), name in zip(ports, names, strict=True):
            if remote.node in topo.hosts:
                cfg["SFC"][name] = {"host_facing": "true"}
        cfg["SFC"][f"{','.join(names)}|3-4"] = {
            "threshold": str(variant.sfc_threshold or 2 * variant.kmax),
            "target": str(variant.kmax),
        }
    return cfg


def _selector(address: str) -> tuple[str, str]:
    """`SWITCH:TABLE|KEY|FIELD` as (SWITCH, TABLE|KEY|FIELD); ("", address) without a switch.
    Only the table's part is looked at: keys may hold colons (IPv6 addresses)."""
    head, sep, rest = address.partition("|")
    switches, _, table = head.rpartition(":")
    return switches, table + sep + rest


def configs(
    topo: Topology, variant: Variant, scale: Scale, static_routes: bool = True
) -> dict[str, dict]:
    """Every switch's config, with the topology's `config_db` settings applied over them.

    A setting `SWITCH:TABLE|KEY|FIELD` (SWITCH a glob) goes to the switches it names only, after
    the settings for every switch, so that it wins over them."""
    cfgs = {sw: build(topo, sw, variant, scale, static_routes) for sw in topo.switches}
    for address, value in sorted(topo.config_db.items(), key=lambda s: bool(_selector(s[0])[0])):
        where = f'config_db."{address}"'
        switches, setting = _selector(address)
        targets = cfgs
        if switches:
            targets = {sw: cfg for sw, cfg in cfgs.items() if fnmatchcase(sw, switches)}
            if not targets:
                raise TopologyError(
                    f"{where}: no switch matches {switches!r} (have: {', '.join(cfgs)})"
                )
        table, *key, name = setting.split("|")
        pattern = "|".join(key)
        if table not in HANDLED_TABLES:
            raise TopologyError(f"{where}: lossless-ctl does not program a table {table!r}")
        known = KNOWN_FIELDS.get(table)
        if known is not None and name not in known:
            fields = ", ".join(sorted(known))
            raise TopologyError(f"{where}: {table} has no field {name!r} (known: {fields})")
        present = [cfg[table] for cfg in targets.values() if table in cfg]
        matched = [entries[k] for entries in present for k in entries if fnmatchcase(k, pattern)]
        # A table this case does not configure (SFC with sfc=off) takes no setting; a key that
        # matches nowhere where the table is configured is a mistake.
        if present and not matched:
            have = sorted({k for entries in present for k in entries})
            raise TopologyError(
                f"{where}: no {table} key matches {pattern!r} (have: {', '.join(have[:8])}"
                f"{', ...' if len(have) > 8 else ''})"
            )
        for entry in matched:
            entry[name] = value
    if topo.config_db:
        # Settings can break what build() guarantees (an SFC threshold under its target): the
        # controller's own checks, now rather than when a switch is loaded.
        for sw, cfg in cfgs.items():
            errors = [str(i) for i in parse(cfg)[1] if i.error]
            if errors:
                raise TopologyError(f"config_db: {sw}: {'; '.join(errors)}")
    return cfgs


def experiment_params(experiment: dict, quick: bool) -> dict:
    """The experiment section with its `quick` overrides applied when asked."""
    params = dict(experiment)
    if quick:
        params.update(params.get("quick", {}))
    return params


def case_variants(params: dict) -> dict[str, Variant]:
    """Every configuration an experiment loads, by case name, in the order it loads them.

    One place for the lab's runner and lossless-sim, so both program the same config_db.json
    for the same case.
    """
    kind = params.get("kind")
    if kind == "prio-2to1":
        ek = params["ecn"]
        return {
            f"ecn={'on' if ecn else 'off'}": Variant(
                ecn=ecn, kmin=ek["kmin"], kmax=ek["kmax"], pmax_percent=ek["pmax_percent"]
            )
            for ecn in (True, False)
        }
    if kind == "incast":
        return {
            case["name"]: Variant(
                pfc=case["pfc"], buffers=case["buffers"], roce_mtu=params["roce_mtu"]
            )
            for case in params["cases"]
        }
    if kind == "leafspine":
        ek = params["ecn"]
        return {
            f"sfc={'on' if sfc else 'off'}": Variant(
                ecn=True,
                sfc=sfc,
                # Seed 003's switches share a 32 MB buffer with dynamic thresholds: PFC
                # pauses only when the pool runs short, so the queue can grow past the SFC
                # threshold (with static 68 KB pause points PFC held it at 160 KB). The
                # lossless PG's dynamic_th 0 (alpha 2^0 = 1 of the free pool, SAI's
                # SHARED_DYNAMIC_TH) is SONiC's for a 32 MB Trident 3 (BCM56870, the
                # hardware config the AS7726-32X loads): sonic-net/sonic-buildimage
                # device/arista/x86_64-arista_7050cx3_32s/Arista-7050CX3-32S-C32/BALANCED/
                # pg_profile_lookup.ini (commit 1ad1e19), which sonic-mgmt's td3 QoS
                # parameters bear out; other Trident 3 SKUs set -4 to 1 (lossless-sim's
                # README, "Which dynamic threshold").
                buffers="dynamic",
                kmin=ek["kmin"],
                kmax=ek["kmax"],
                pmax_percent=ek["pmax_percent"],
                sfc_threshold=params["sfc_threshold_kmax"] * ek["kmax"],
                roce_mtu=max(params["sizes"]),
            )
            for sfc in (False, True)
        }
    if kind == "fieldtest":
        # One configuration, seed 003's without remote PFC (DCQCN alone), under three cases:
        # one per part of the field test, so that each can be run on its own.
        ek = params["ecn"]
        parts = ("latency", "ecn_ratio", "cnp_rate")
        variant = Variant(
            ecn=True,
            buffers="dynamic",
            kmin=ek["kmin"],
            kmax=ek["kmax"],
            pmax_percent=ek["pmax_percent"],
            roce_mtu=max(params[p]["size"] for p in parts),
        )
        return {p.replace("_", "-"): variant for p in parts}
    raise ValueError(f"experiment.kind: unknown experiment '{kind}'")
