"""Neighbour learning: ARP and IPv6 ND through PacketIn, as a router's kernel and SONiC's
neighsyncd/neighorch do it together.

The pipeline punts ARP, NS/NA and packets for unresolved hosts (connected routes trap, "glean")
to the CPU port with a `packet_in` header. `NeighborLearner` turns each PacketIn into
P4Runtime updates and PacketOuts, without I/O of its own (so it is tested with plain bytes):

- an ARP request or NS for one of the router's addresses on the port is answered (ARP reply,
  NA with the router flag), and its sender is learned; with host interfaces (`hostif`) the
  kernel owns those addresses and answers, and the learner only learns;
- ARP replies and NAs for hosts in the port's subnets are learned (gratuitous ones too);
- a glean packet for a host in a connected subnet triggers an ARP request or NS out of the
  port that subnet is on, at most once a second per host; so do the next hops of the config's
  static routes that have no neighbour entry, at start;
- learned neighbours are installed as NEIGHBOR_ENTRY, NEXT_HOP and host route (p4map's
  NeighborEntries), a changed MAC is a MODIFY; after half the age a neighbour is probed with a
  unicast request, and after `age_s` without an answer it is removed; while routes use its
  next hop (p4map.HardwareIds counts its users for the learner and routeorch alike) it is
  kept, pending removal, as SONiC's neighorch keeps a referenced neighbour: neighbour entry,
  next hop and host route go together once no route does, and learning it again meanwhile
  cancels the removal. `sonic-clear arp` (clear) removes every learned neighbour the same
  way and asks for each again. Neighbours of the config's NEIGH table are static: never
  learned over, never aged.

`serve` runs a learner against a P4RuntimeClient until stopped.
"""

from __future__ import annotations

import ipaddress
import queue
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from lossless_ctl.client import P4RuntimeClient, entity_key
from lossless_ctl.config_db import ConfigDb, IpAddress, IpInterface
from lossless_ctl.p4info import P4InfoIndex
from lossless_ctl.p4map import ING, NeighborEntries, P4Program, encode
from lossless_ctl.show import PENDING_REMOVAL, match_value, param_value

ETH_IPV4, ETH_ARP, ETH_VLAN, ETH_IPV6 = 0x0800, 0x0806, 0x8100, 0x86DD
ICMPV6, ND_NS, ND_NA = 58, 135, 136
OPT_SOURCE_LLADDR, OPT_TARGET_LLADDR = 1, 2
NA_ROUTER, NA_SOLICITED, NA_OVERRIDE = 0x80, 0x40, 0x20
BROADCAST = b"\xff" * 6
MIN_FRAME = 60  # without FCS
GLEAN_INTERVAL_S = 1.0


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def mac_str(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def ethernet(dst: bytes, src: bytes, ethertype: int, payload: bytes) -> bytes:
    frame = dst + src + struct.pack("!H", ethertype) + payload
    return frame + bytes(max(0, MIN_FRAME - len(frame)))


def arp_frame(op: int, sha: bytes, spa: IpAddress, tha: bytes, tpa: IpAddress, dst: bytes) -> bytes:
    body = struct.pack("!HHBBH", 1, ETH_IPV4, 6, 4, op) + sha + spa.packed + tha + tpa.packed
    return ethernet(dst, sha, ETH_ARP, body)


def icmpv6_checksum(src: bytes, dst: bytes, message: bytes) -> int:
    """RFC 4443 2.3: one's complement sum over the IPv6 pseudo-header and the message."""
    data = src + dst + struct.pack("!I3xB", len(message), ICMPV6) + message
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def nd_frame(
    kind: int,
    src_mac: bytes,
    dst_mac: bytes,
    src: ipaddress.IPv6Address,
    dst: ipaddress.IPv6Address,
    target: ipaddress.IPv6Address,
    flags: int = 0,
) -> bytes:
    """An NS (with our source link-layer address) or NA (with our target link-layer address)."""
    option = OPT_SOURCE_LLADDR if kind == ND_NS else OPT_TARGET_LLADDR
    body = struct.pack("!B3x", flags) + target.packed + struct.pack("!BB", option, 1) + src_mac
    message = struct.pack("!BBH", kind, 0, 0) + body
    checksum = icmpv6_checksum(src.packed, dst.packed, message)
    message = message[:2] + struct.pack("!H", checksum) + message[4:]
    header = struct.pack("!IHBB", 6 << 28, len(message), ICMPV6, 255) + src.packed + dst.packed
    return ethernet(dst_mac, src_mac, ETH_IPV6, header + message)


def solicited_node(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv6Address, bytes]:
    """RFC 4291 solicited-node multicast address of `ip` and its RFC 2464 MAC."""
    low = ip.packed[-3:]
    group = ipaddress.IPv6Address(b"\xff\x02" + bytes(9) + b"\x01\xff" + low)
    return group, b"\x33\x33" + group.packed[-4:]


@dataclass(frozen=True)
class Parsed:
    """What a punted frame says about a neighbour."""

    kind: str  # arp-request, arp-reply, ns, na, ipv4, ipv6
    src_mac: bytes
    sender_ip: IpAddress | None  # ARP spa, NS source, NA target
    sender_mac: bytes | None  # ARP sha, NS SLLA option, NA TLLA option
    target_ip: IpAddress | None  # ARP tpa, NS/NA target, IP destination
    ip_src: IpAddress | None = None


def parse(frame: bytes) -> Parsed | None:
    """The ARP, ND or IP packet in an Ethernet frame (one VLAN tag allowed); None otherwise."""
    if len(frame) < 14:
        return None
    src_mac = frame[6:12]
    (ethertype,) = struct.unpack_from("!H", frame, 12)
    offset = 14
    if ethertype == ETH_VLAN and len(frame) >= 18:
        (ethertype,) = struct.unpack_from("!H", frame, 16)
        offset = 18
    body = frame[offset:]
    if ethertype == ETH_ARP and len(body) >= 28:
        htype, ptype, hlen, plen, op = struct.unpack_from("!HHBBH", body)
        if (htype, ptype, hlen, plen) != (1, ETH_IPV4, 6, 4) or op not in (1, 2):
            return None
        spa = ipaddress.IPv4Address(body[14:18])
        tpa = ipaddress.IPv4Address(body[24:28])
        kind = "arp-request" if op == 1 else "arp-reply"
        return Parsed(kind, src_mac, spa, body[8:14], tpa)
    if ethertype == ETH_IPV4 and len(body) >= 20:
        return Parsed(
            "ipv4",
            src_mac,
            None,
            None,
            ipaddress.IPv4Address(body[16:20]),
            ipaddress.IPv4Address(body[12:16]),
        )
    if ethertype != ETH_IPV6 or len(body) < 40:
        return None
    src = ipaddress.IPv6Address(body[8:24])
    dst = ipaddress.IPv6Address(body[24:40])
    if body[6] != ICMPV6 or len(body) < 64 or body[40] not in (ND_NS, ND_NA):
        return Parsed("ipv6", src_mac, None, None, dst, src)
    kind = body[40]
    target = ipaddress.IPv6Address(body[48:64])
    lladdr = None
    options = body[64:]
    while len(options) >= 8 and options[1] > 0:
        length = options[1] * 8
        if options[0] in (OPT_SOURCE_LLADDR, OPT_TARGET_LLADDR) and length >= 8:
            lladdr = options[2:8]
        options = options[length:]
    if kind == ND_NS:
        return Parsed("ns", src_mac, src, lladdr, target, src)
    return Parsed("na", src_mac, target, lladdr, target, src)


@dataclass
class Interface:
    name: str
    port: int
    mac: bytes
    addresses: list[IpInterface]

    def own(self, ip: IpAddress) -> bool:
        return any(a.ip == ip for a in self.addresses)

    def on_link(self, ip: IpAddress) -> bool:
        return any(ip in a.network and ip != a.ip for a in self.addresses)

    def source_for(self, ip: IpAddress) -> IpAddress | None:
        return next((a.ip for a in self.addresses if ip in a.network), None)


def routed_interfaces(cfg: ConfigDb) -> dict[str, Interface]:
    """Interfaces the pipeline routes out of, by name: routed ports and one-port VLANs."""
    mac = mac_bytes(cfg.mac or "00:00:00:00:00:00")
    by_name: dict[str, Interface] = {}
    for rip in cfg.router_ips:
        if rip.ifname.startswith("Loopback"):
            continue
        port_name = rip.ifname
        if rip.ifname.startswith("Vlan"):
            members = cfg.vlans[rip.ifname].members
            if len(members) != 1:
                continue
            port_name = members[0]
        port = cfg.ports.get(port_name)
        if port is None or port.index is None:
            continue
        iface = by_name.setdefault(rip.ifname, Interface(rip.ifname, port.index, mac, []))
        iface.addresses.append(rip.ip)
    return by_name


@dataclass
class Learned:
    mac: bytes
    seen: float
    probed: bool = False


@dataclass
class Actions:
    updates: list[Any] = field(default_factory=list)
    packets: list[tuple[int, bytes]] = field(default_factory=list)  # (port, frame)
    log: list[str] = field(default_factory=list)
    freed: list[int] = field(default_factory=list)  # next hop ids to release once written

    def extend(self, other: Actions) -> None:
        self.updates += other.updates
        self.packets += other.packets
        self.log += other.log
        self.freed += other.freed


class NeighborLearner:
    def __init__(
        self,
        cfg: ConfigDb,
        program: P4Program,
        p4info: P4InfoIndex,
        age_s: float = 300.0,
        answer: bool = True,
    ):
        self.entries = NeighborEntries(p4info, program.ids)
        self.age_s = age_s
        # Whether this learner answers ARP requests and NS for the router's addresses; not
        # when a kernel owns them (hostif), which answers itself.
        self.answer = answer
        self.in_fields = {m.id: m.name for m in p4info.packet_metadata("packet_in").values()}
        self.out_fields = p4info.packet_metadata("packet_out")
        self.interfaces = routed_interfaces(cfg)
        self.by_port = {i.port: i for i in self.interfaces.values()}
        self.static = {(n.ifname, n.ip) for n in cfg.neighbors}
        self.learned: dict[tuple[str, IpAddress], Learned] = {}
        self.asked: dict[IpAddress, float] = {}
        self.next_hops = [
            (ip, ifname) for route in cfg.static_routes for ip, ifname in route.nexthops
        ]

    # --- packets out --------------------------------------------------------------------------

    def packet_out_metadata(self, port: int) -> list[tuple[int, bytes]]:
        return [
            (m.id, encode(port if name == "egress_port" else 0, m.bitwidth))
            for name, m in self.out_fields.items()
        ]

    def _request(self, iface: Interface, ip: IpAddress, unicast: bytes | None, now: float):
        """ARP request or NS for `ip` out of `iface` (to `unicast` when probing)."""
        self.asked[ip] = now
        source = iface.source_for(ip)
        if source is None:
            return None
        if ip.version == 4:
            return iface.port, arp_frame(1, iface.mac, source, bytes(6), ip, unicast or BROADCAST)
        group, group_mac = solicited_node(ip)
        dst, dst_mac = (ip, unicast) if unicast else (group, group_mac)
        return iface.port, nd_frame(ND_NS, iface.mac, dst_mac, source, dst, ip)

    # --- learning -----------------------------------------------------------------------------

    def _learn(self, iface: Interface, ip: IpAddress, mac: bytes, now: float) -> Actions:
        out = Actions()
        key = (iface.name, ip)
        if key in self.static or not iface.on_link(ip) or mac == bytes(6):
            return out
        known = self.learned.get(key)
        if known is not None and known.mac == mac:
            known.seen, known.probed = now, False
            return out
        pending = key in self.entries.kept
        out.updates += self.entries.install(iface.name, ip, mac_str(mac), known is not None)
        verb = "moved to" if known is not None else "learned at"
        verb = "back (removal cancelled) at" if pending else verb
        out.log.append(f"neighbour {ip} on {iface.name} {verb} {mac_str(mac)}")
        self.learned[key] = Learned(mac, now)
        return out

    def ingress_port(self, metadata: list[tuple[int, bytes]]) -> int | None:
        fields = {self.in_fields.get(mid): int.from_bytes(v, "big") for mid, v in metadata}
        return fields.get("ingress_port")

    def packet_in(self, payload: bytes, metadata: list[tuple[int, bytes]], now: float) -> Actions:
        iface = self.by_port.get(self.ingress_port(metadata))
        pkt = parse(payload)
        out = Actions()
        if iface is None or pkt is None:
            return out
        if pkt.kind in ("arp-request", "arp-reply") and pkt.sender_ip is not None:
            if pkt.kind == "arp-reply" or iface.own(pkt.target_ip):
                out.extend(self._learn(iface, pkt.sender_ip, pkt.sender_mac, now))
            if self.answer and pkt.kind == "arp-request" and iface.own(pkt.target_ip):
                reply = arp_frame(
                    2, iface.mac, pkt.target_ip, pkt.sender_mac, pkt.sender_ip, pkt.sender_mac
                )
                out.packets.append((iface.port, reply))
        elif pkt.kind == "ns" and iface.own(pkt.target_ip):
            dad = pkt.sender_ip == ipaddress.IPv6Address("::")
            if not dad and pkt.sender_mac is not None:
                out.extend(self._learn(iface, pkt.sender_ip, pkt.sender_mac, now))
            if not self.answer:
                return out
            dst = ipaddress.IPv6Address("ff02::1") if dad else pkt.sender_ip
            dst_mac = b"\x33\x33\x00\x00\x00\x01" if dad else (pkt.sender_mac or pkt.src_mac)
            flags = NA_ROUTER | NA_OVERRIDE | (0 if dad else NA_SOLICITED)
            na = nd_frame(ND_NA, iface.mac, dst_mac, pkt.target_ip, dst, pkt.target_ip, flags)
            out.packets.append((iface.port, na))
        elif pkt.kind == "na" and pkt.sender_mac is not None:
            out.extend(self._learn(iface, pkt.sender_ip, pkt.sender_mac, now))
        elif pkt.kind in ("ipv4", "ipv6"):
            out.extend(self.glean(pkt.target_ip, now))
        return out

    def glean(self, ip: IpAddress, now: float) -> Actions:
        """Ask for a host in a connected subnet that a packet was trapped for."""
        out = Actions()
        if now - self.asked.get(ip, -GLEAN_INTERVAL_S) < GLEAN_INTERVAL_S:
            return out
        for iface in self.interfaces.values():
            if iface.on_link(ip) and (iface.name, ip) not in self.learned:
                request = self._request(iface, ip, None, now)
                if request is not None:
                    out.packets.append(request)
                break
        return out

    def start(self, now: float) -> Actions:
        """Resolve the static routes' next hops that have no neighbour entry."""
        out = Actions()
        for ip, ifname in self.next_hops:
            ifaces = [self.interfaces[ifname]] if ifname in self.interfaces else []
            ifaces = ifaces or [i for i in self.interfaces.values() if i.on_link(ip)]
            if ifaces and (ifaces[0].name, ip) not in self.static:
                out.extend(self.glean(ip, now))
        return out

    def adopt(self, state: dict[tuple, Any], now: float) -> set[tuple]:
        """A restarted controller's first session, before its reconcile: the neighbour entries
        of the switch (`state`, by entity key) that the config does not have are an earlier
        controller's learned neighbours. They are taken over, with the next hop and host route
        it made for them, as if learned now; one whose entry is marked pending removal (it
        was gone while routes used its next hop) stays pending: it goes with its next hop and
        host route once no route uses them (tick), unless it is learned again first. Returns
        their entities' keys, which the reconcile leaves alone (so forwarding to them never
        stops)."""
        index = self.entries.b.idx
        tables = {index.table(ING + n).preamble.id: n for n in ("neighbor", "nexthop")}
        routes = {index.table(ING + f"ipv{v}_route").preamble.id: v for v in (4, 6)}
        neighbors: dict[tuple[int, int], tuple[int, bool]] = {}  # (MAC, pending removal)
        hops: dict[tuple[int, int], int] = {}
        host_routes: dict[Any, int] = {}
        for entity in state.values():
            if entity.WhichOneof("entity") != "table_entry":
                continue
            t = entity.table_entry
            name = tables.get(t.table_id)
            if name == "neighbor":
                table = index.table(ING + name)
                key = (match_value(t, index, table, "rif"), match_value(t, index, table, "ip"))
                mac = param_value(t, index, "dst_mac") or 0
                neighbors[key] = (mac, t.metadata == PENDING_REMOVAL)
            elif name == "nexthop":
                nid = match_value(t, index, index.table(ING + name), "nexthop_id")
                hops[(param_value(t, index, "rif"), param_value(t, index, "neighbor_ip"))] = nid
            elif t.table_id in routes and not t.metadata and t.match:
                lpm, version = t.match[0].lpm, routes[t.table_id]
                if lpm.prefix_len == (32 if version == 4 else 128):
                    value = int.from_bytes(lpm.value, "big")
                    ip = (
                        ipaddress.IPv4Address(value)
                        if version == 4
                        else ipaddress.IPv6Address(value)
                    )
                    host_routes[ip] = param_value(t, index, "nexthop_id") or 0
        ids = self.entries.ids
        rif_name = {rid: n.removeprefix("rif:") for n, rid in ids.rif_ids.items()}
        config_hops = set(ids.nexthop_ids.values())
        keys: set[tuple] = set()
        for (rif, value), (mac, pending) in sorted(neighbors.items()):
            iface = self.interfaces.get(rif_name.get(rif, ""))
            ip = ipaddress.ip_address(value)  # IPv4 is zero-extended into the 128-bit key
            if iface is None or (iface.name, ip) in self.static or not iface.on_link(ip):
                continue
            nid = hops.get((rif, value))
            ours = nid if nid is not None and nid not in config_hops else None
            route = nid is not None and host_routes.get(ip) == nid
            route = route and ipaddress.ip_network(ip) not in ids.routes
            raw = mac.to_bytes(6, "big")
            created = self.entries.adopt(iface.name, ip, mac_str(raw), ours, route, pending)
            keys |= {entity_key(u.entity) for u in created}
            if not pending:
                self.learned[(iface.name, ip)] = Learned(raw, now)
        return keys

    def forget(self) -> dict[tuple[str, IpAddress], bytes]:
        """The switch no longer holds what this learner installed (a new session replayed or
        reconciled it): the ids it took are given back (with every run-time next hop's: the
        switch holds routeorch's no more than ours), and what it had learned is returned for
        the next session's learner to install again (relearn)."""
        self.entries.forget()
        known = {key: entry.mac for key, entry in self.learned.items()}
        self.learned.clear()
        return known

    def relearn(self, known: dict[tuple[str, IpAddress], bytes], now: float) -> Actions:
        """Install neighbours an earlier session learned (forget) as if just learned; aging
        and probing find those that have gone."""
        out = Actions()
        for (ifname, ip), mac in known.items():
            iface = self.interfaces.get(ifname)
            if iface is not None:
                out.extend(self._learn(iface, ip, mac, now))
        return out

    def kernel(self, ifname: str, ip: IpAddress, mac: bytes | None, now: float) -> Actions:
        """A change of the kernel's neighbour table (neighsync, SONiC's neighsyncd): an entry
        with its MAC is learned; one the kernel deleted or could not resolve is gone (_gone)."""
        iface = self.interfaces.get(ifname)
        if iface is None:
            return Actions()
        if mac is not None:
            return self._learn(iface, ip, mac, now)
        if (ifname, ip) not in self.learned:
            return Actions()
        return self._gone(ifname, ip, "gone from the kernel")

    def _release(self, ifname: str, ip: IpAddress) -> Actions:
        """A learned neighbour that is no more: its entries go (host route, next hop,
        neighbour), but while routes (routeorch's, ECMP groups among them) use its next hop,
        all three stay, pending removal, and go once none does (tick) unless it is learned
        again first."""
        mac = self.learned.pop((ifname, ip)).mac
        updates, nid = self.entries.release(ifname, ip, mac_str(mac))
        return Actions(updates, freed=[] if nid is None else [nid])

    def _gone(self, ifname: str, ip: IpAddress, why: str) -> Actions:
        """_release, logged."""
        out = self._release(ifname, ip)
        kept = (ifname, ip) in self.entries.kept
        pending = "; routes use its next hop: pending removal"
        out.log.append(f"neighbour {ip} on {ifname} {why}" + (pending if kept else ""))
        return out

    def clear(self, now: float) -> Actions:
        """`sonic-clear arp` and `ndp`, which flush the kernel's neighbour table: every learned
        neighbour is gone as one the kernel deleted is (_release: removed, or kept pending
        removal while routes use its next hop, as neighorch refuses to remove a referenced
        neighbour), and each is asked for again at once, as the kernel resolves again what it
        talks to. A neighbour pending removal already is not in the kernel's table, so the
        flush leaves it as it is; it is asked for too, and an answer cancels its removal."""
        out = Actions()
        cleared, before = list(self.learned), set(self.entries.kept)
        for ifname, ip in cleared:
            out.extend(self._release(ifname, ip))
        kept = len(self.entries.kept) - len(before)
        for ifname, ip in cleared + [key for key in self.entries.kept if key in before]:
            request = self._request(self.interfaces[ifname], ip, None, now)
            if request is not None:
                out.packets.append(request)
        out.log.append(
            f"neighbours cleared: {len(cleared)} ({kept} kept pending removal: routes use "
            f"their next hops); {len(out.packets)} asked for again ({len(before)} pending "
            "removal before)"
        )
        return out

    def tick(self, now: float) -> Actions:
        """Probe neighbours past half their age; remove those past it (_gone); remove the
        neighbours pending removal whose next hop no route uses any more."""
        updates, freed = self.entries.sweep()
        out = Actions(updates, freed=freed)
        for (ifname, ip), entry in list(self.learned.items()):
            age = now - entry.seen
            iface = self.interfaces[ifname]
            if age >= self.age_s:
                out.extend(self._gone(ifname, ip, "aged out"))
            elif age >= self.age_s / 2 and not entry.probed:
                entry.probed = True
                request = self._request(iface, ip, entry.mac, now)
                if request is not None:
                    out.packets.append(request)
        return out


def _batches(updates: list[Any]) -> list[list[Any]]:
    """Split so that no request holds one entity twice: a server may apply a batch's updates
    in any order, and a neighbour learned and moved in one burst must be written in order."""
    batches: list[list[Any]] = [[]]
    seen: set[tuple] = set()
    for update in updates:
        key = entity_key(update.entity)
        if key in seen:
            batches.append([])
            seen = set()
        seen.add(key)
        batches[-1].append(update)
    return [b for b in batches if b]


def apply(client: P4RuntimeClient, learner: NeighborLearner, actions: Actions) -> list[str]:
    """Write the updates, then send the packets; returns log lines (with any failures)."""
    log = list(actions.log)
    for batch in _batches(actions.updates):
        result = client.write(batch, batch_size=len(batch), in_flight=1)
        log += [f"neighbour update failed: {e.code}: {e.message}" for e in result.errors]
    for nid in actions.freed:
        learner.entries.ids.release("nexthop", nid)
    for port, frame in actions.packets:
        client.send_packet_out(frame, learner.packet_out_metadata(port))
    return log


def serve(
    client: P4RuntimeClient,
    learner: NeighborLearner,
    stop: threading.Event,
    tick_s: float = 1.0,
    log=print,
    burst: int = 1024,
    resolve: queue.Queue | None = None,
    hostif: Any = None,
    clear: threading.Event | None = None,
    kernel: queue.Queue | None = None,
) -> None:
    """PacketIns in, updates and PacketOuts out, until `stop` is set or the switch's stream is
    lost. PacketIns that arrive together (up to `burst`) are handled as one, so their updates
    share WriteRequests. Addresses put in `resolve` (routes' next hops, from another thread)
    are asked for as a glean is, within a tick. With `hostif` (hostif.HostIf), what the kernel
    wants of the punted frames is also written to the port's kernel interface. When `clear`
    is set, the learned neighbours are cleared (NeighborLearner.clear) within a tick. Changes
    of the kernel's neighbour table put in `kernel` (neighsync) are applied within a tick."""
    for line in apply(client, learner, learner.start(time.monotonic())):
        log(line)
    next_tick = time.monotonic() + tick_s
    while not stop.is_set() and not client.stream_lost.is_set():
        packet = client.next_packet_in(timeout=max(0.0, next_tick - time.monotonic()))
        now = time.monotonic()
        if packet is not None:
            actions = Actions()
            for p in [packet, *client.more_packet_ins(burst - 1)]:
                metadata = [(m.metadata_id, m.value) for m in p.metadata]
                actions.extend(learner.packet_in(p.payload, metadata, now))
                if hostif is not None:
                    port, pkt = learner.ingress_port(metadata), parse(p.payload)
                    if port is not None and pkt is not None and hostif.wants(pkt):
                        hostif.punt(port, p.payload)
            for line in apply(client, learner, actions):
                log(line)
        if resolve is not None:
            asks = Actions()
            while not resolve.empty():
                asks.extend(learner.glean(resolve.get_nowait(), now))
            for line in apply(client, learner, asks):
                log(line)
        if kernel is not None:
            changes = Actions()
            while not kernel.empty():
                changes.extend(learner.kernel(*kernel.get_nowait(), now))
            for line in apply(client, learner, changes):
                log(line)
        if clear is not None and clear.is_set():
            clear.clear()
            for line in apply(client, learner, learner.clear(now)):
                log(line)
        if now >= next_tick:
            for line in apply(client, learner, learner.tick(now)):
                log(line)
            next_tick = now + tick_s
