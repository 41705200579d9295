"""The FPM listener, fpmsyncd's job: zebra's `dplane_fpm_nl` connects over TCP and streams
its FIB as netlink route messages, each in an FPM frame.

FPM frame (FRR's fpm/fpm.h): version (1 byte, 1), message type (1 byte, 1 = netlink), length
(2 bytes, big-endian, header included), then the payload: one or more netlink messages, decoded
with pyroute2. What a frame says becomes `FpmRoute`s for `routeorch`; what it cannot say
(malformed frames, other address families, VRFs, next-hop objects) is counted in `FpmCounters`
and logged, and never stops the listener. zebra is expected to run with
`no fpm use-next-hop-groups`, so routes carry their next hops (RTA_GATEWAY, RTA_MULTIPATH) as
fpmsyncd reads them.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyroute2.netlink.rtnl import RTM_DELROUTE, RTM_NEWROUTE
from pyroute2.netlink.rtnl.marshal import MarshalRtnl
from pyroute2.netns import create_socket

from lossless_ctl.config_db import IpAddress, IpNetwork

FPM_HEADER = struct.Struct("!BBH")
FPM_VERSION = 1
FPM_NETLINK = 1
DEFAULT_PORT = 2620
RT_TABLE_MAIN = 254
RTN_UNICAST, RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_PROHIBIT = 1, 6, 7, 8
# Route protocols as zebra marks them (FRR's zebra/rt_netlink.h RTPROT_*): the source of a
# route, shown by `show ip route`.
PROTOCOLS = {
    2: "kernel",
    11: "zebra",
    186: "bgp",
    187: "isis",
    188: "ospf",
    189: "rip",
    190: "ripng",
    191: "nhrp",
    192: "eigrp",
    193: "ldp",
    194: "sharp",
    195: "pbr",
    196: "static",
    197: "openfabric",
}


class FpmError(Exception):
    """A frame or message that cannot be used; `kind` is its counter."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


@dataclass(frozen=True)
class FpmRoute:
    """One route as zebra last sent it; `nexthops` is None for a deletion, empty for a
    blackhole (drop) route."""

    prefix: IpNetwork
    nexthops: tuple[IpAddress, ...] | None
    protocol: str = "zebra"

    @property
    def deleted(self) -> bool:
        return self.nexthops is None


class FpmCounters(Counter):
    """Frames, messages and what was skipped, by reason (thread-safe increments)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def add(self, kind: str, n: int = 1) -> None:
        with self.lock:
            self[kind] += n


def _gateway(attrs: dict[str, Any], family: int) -> IpAddress | None:
    gw = attrs.get("RTA_GATEWAY")
    if gw is None:
        via = attrs.get("RTA_VIA")
        gw = via.get("addr") if isinstance(via, dict) else None
    if gw is None:
        return None
    ip = ipaddress.ip_address(gw)
    if ip.version != (4 if family == socket.AF_INET else 6):
        raise FpmError("malformed", f"next hop {ip} of another family than the route")
    return ip


def _attrs(msg: Any) -> dict[str, Any]:
    """A message's attributes by name; RTA_NH_ID (30), which pyroute2 0.9 does not name, by
    its name too."""
    out = {}
    for nla in msg["attrs"]:
        name, value = nla[0], nla[1]
        if name == "UNKNOWN" and value.get("header", {}).get("type") == 30:
            name = "RTA_NH_ID"
        out[name] = value
    return out


def route_of(msg: Any) -> FpmRoute | None:
    """The route in one decoded rtmsg; None for a route this switch does not program
    (connected and link-local routes, which config_db's INTERFACE table already describes)."""
    family = msg["family"]
    if family not in (socket.AF_INET, socket.AF_INET6):
        raise FpmError("unknown address family", f"route of address family {family}")
    # One pass over the attributes: pyroute2's get_attr() scans them on every call.
    attrs = _attrs(msg)
    table = attrs.get("RTA_TABLE") or msg["table"]
    if table != RT_TABLE_MAIN:
        raise FpmError("other vrf", f"route in table {table} (only the default VRF is routed)")
    dst = attrs.get("RTA_DST")
    full = 32 if family == socket.AF_INET else 128
    default = "0.0.0.0" if family == socket.AF_INET else "::"
    try:
        prefix = ipaddress.ip_network(f"{dst or default}/{msg['dst_len']}")
    except ValueError as err:
        raise FpmError("malformed", f"destination {dst}/{msg['dst_len']}: {err}") from err
    if prefix.prefixlen > full:
        raise FpmError("malformed", f"prefix length {prefix.prefixlen}")
    if prefix.version == 6 and (prefix.is_link_local or prefix.is_multicast):
        return None
    protocol = PROTOCOLS.get(msg["proto"], f"proto {msg['proto']}")
    if msg["header"]["type"] == RTM_DELROUTE:
        return FpmRoute(prefix, None, protocol)
    if "RTA_NH_ID" in attrs:
        raise FpmError(
            "next-hop object",
            f"{prefix}: next hop given as a next-hop object id; configure zebra with "
            "`no fpm use-next-hop-groups`",
        )
    if msg["type"] in (RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_PROHIBIT):
        return FpmRoute(prefix, (), protocol)
    if msg["type"] != RTN_UNICAST:
        return None
    paths = attrs.get("RTA_MULTIPATH")
    if paths:
        gateways = [_gateway(_attrs(p), family) for p in paths]
    else:
        gateways = [_gateway(attrs, family)]
    hops = tuple(sorted({g for g in gateways if g is not None}))
    if not hops:
        return None  # directly connected: an INTERFACE subnet of the config
    return FpmRoute(prefix, hops, protocol)


def decode(payload: bytes, counters: FpmCounters, log: Callable[[str], None]) -> list[FpmRoute]:
    """The routes in one FPM frame's netlink payload; anything else is counted (and a message
    that cannot be used, logged)."""
    try:
        messages = list(MarshalRtnl().parse(payload))
    except Exception as err:  # pyroute2 raises whatever its field decoder hits
        raise FpmError("malformed", f"netlink payload of {len(payload)} bytes: {err}") from err
    if not messages or sum(m["header"]["length"] for m in messages) > len(payload):
        raise FpmError("malformed", f"netlink payload of {len(payload)} bytes: truncated")
    out = []
    for msg in messages:
        if msg["header"]["type"] not in (RTM_NEWROUTE, RTM_DELROUTE):
            counters.add(f"netlink type {msg['header']['type']} ignored")
            continue
        try:
            route = route_of(msg)
        except FpmError as err:
            counters.add(err.kind)
            log(f"fpm: {err.kind}: {err}")
            continue
        counters.add("routes" if route is not None else "connected or link-local skipped")
        if route is not None:
            out.append(route)
    return out


class FpmReader:
    """Splits a TCP byte stream into FPM frames and decodes them."""

    def __init__(self, counters: FpmCounters, log: Callable[[str], None]):
        self.counters = counters
        self.log = log
        self.buffer = b""

    def feed(self, data: bytes) -> list[FpmRoute]:
        """Routes of the complete frames in `data` (plus what was buffered). A frame whose
        header cannot be right (a length below the header's) loses the stream's framing:
        FpmError("desynchronised") tells the caller to drop the connection."""
        buffer = self.buffer + data
        out: list[FpmRoute] = []
        at = 0  # cut once at the end: slicing the rest off per frame copies it per frame
        while len(buffer) - at >= FPM_HEADER.size:
            version, kind, length = FPM_HEADER.unpack_from(buffer, at)
            if length < FPM_HEADER.size:
                self.counters.add("malformed")
                raise FpmError("desynchronised", f"FPM frame length {length} < 4")
            if len(buffer) - at < length:
                break
            payload = buffer[at + FPM_HEADER.size : at + length]
            at += length
            self.counters.add("frames")
            try:
                if version != FPM_VERSION:
                    raise FpmError("malformed", f"FPM version {version} (expected 1)")
                if kind != FPM_NETLINK:
                    raise FpmError("not netlink", f"FPM message type {kind} (1 = netlink)")
                out += decode(payload, self.counters, self.log)
            except FpmError as err:
                self.counters.add(err.kind)
                self.log(f"fpm: {err.kind}: {err}")
        self.buffer = buffer[at:]
        return out


class FpmServer:
    """Accepts zebra's FPM connection (one at a time: zebra reconnects when it drops) and hands
    each frame's routes to `sink`. Runs in its own thread until `stop()`."""

    def __init__(
        self,
        address: str,
        sink: Callable[[list[FpmRoute]], None],
        log: Callable[[str], None] = print,
        netns: str | None = None,
        on_connect: Callable[[], None] | None = None,
    ):
        host, _, port = address.rpartition(":")
        self.counters = FpmCounters()
        self.sink = sink
        self.on_connect = on_connect
        self.log = log
        self._stop = threading.Event()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # A socket made in the namespace stays there: zebra in a lab namespace reaches it on
        # that namespace's loopback. flags=0: a namespace that does not exist is an error.
        self.sock = create_socket(netns, family, socket.SOCK_STREAM, flags=0)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host.strip("[]"), int(port or DEFAULT_PORT)))
        self.sock.listen(1)
        self.sock.settimeout(0.2)
        self.address = f"{host}:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, name="fpm", daemon=True)

    def start(self) -> FpmServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        self.sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            self.counters.add("connections")
            self.log(f"fpm: connection from {peer[0]}:{peer[1]}")
            if self.on_connect is not None:
                self.on_connect()
            with conn:
                try:
                    self._session(conn)
                except Exception as err:  # a fault behind the sink must not stop the listener
                    self.counters.add("internal errors")
                    self.log(f"fpm: internal error: {err!r}; dropping the connection")
            self.log("fpm: connection closed")

    def _session(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        reader = FpmReader(self.counters, self.log)
        while not self._stop.is_set():
            try:
                data = conn.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError as err:
                self.log(f"fpm: receive: {err.strerror}")
                return
            if not data:
                return
            try:
                routes = reader.feed(data)
            except FpmError as err:
                self.log(f"fpm: {err}; dropping the connection (zebra reconnects)")
                return
            if routes:
                self.sink(routes)
