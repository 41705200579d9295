"""The FPM listener, fpmsyncd's job: zebra's `dplane_fpm_nl` connects over TCP and streams
its FIB as netlink route messages, each in an FPM frame.

FPM frame (FRR's fpm/fpm.h): version (1 byte, 1), message type (1 byte, 1 = netlink), length
(2 bytes, big-endian, header included), then the payload: one or more netlink messages. The
frames are split and their messages decoded by `_fpm_netlink` (toolchain/fpm-netlink: the
`netlink-packet-route` crate, about 30x faster than pyroute2 here). What a frame says becomes
routes for `routeorch`; what it cannot say (malformed frames, other address families, VRFs,
next-hop objects) is counted in `FpmCounters` and logged, and never stops the listener. zebra
is expected to run with `no fpm use-next-hop-groups`, so routes carry their next hops
(RTA_GATEWAY, RTA_MULTIPATH) as fpmsyncd reads them.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from pyroute2.netns import create_socket

from lossless_ctl.config_db import IpAddress, IpNetwork, network_of

try:
    from lossless_ctl._fpm_netlink import decode
except ModuleNotFoundError as err:  # built by cargo, installed by `make build`
    raise ImportError(
        "lossless_ctl._fpm_netlink (toolchain/fpm-netlink) is not built: run `make build`"
    ) from err

DEFAULT_PORT = 2620
RECEIVE = 1 << 20  # bytes per recv(): a call into the decoder per megabyte, not per 64 KiB


class FpmError(Exception):
    """A frame or message that cannot be used; `kind` is its counter."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


class Via(NamedTuple):
    """What zebra last said of a route, in the decoder's compact form (it gives plain tuples;
    this names their fields). `hops`: the distinct next hops' addresses (4 or 16 bytes each),
    sorted and concatenated; None for a deletion, empty for a blackhole (drop) route.
    `protocol`: zebra's RTPROT as a name ("static", "bgp", ...)."""

    hops: bytes | None
    protocol: str = "zebra"


# The decoder's unit: the keys (config_db.route_key()) of the routes one Via is about. A
# decode call folds each prefix's messages to its last and groups the rest by Via, so the route
# path handles a next-hop set's routes together (dict and set operations over `keys`).
Routes = tuple[Via, list[bytes]]


class FpmRoute(NamedTuple):
    """One route of a `Routes` group, for callers that look at routes one by one."""

    key: bytes
    hops: bytes | None
    protocol: str = "zebra"

    @property
    def deleted(self) -> bool:
        return self.hops is None

    @property
    def prefix(self) -> IpNetwork:
        return network_of(self.key)

    @property
    def nexthops(self) -> tuple[IpAddress, ...] | None:
        return None if self.hops is None else nexthops_of(self.key, self.hops)


def each_route(groups: list[Routes]) -> list[FpmRoute]:
    """The routes of decoded groups one by one."""
    return [FpmRoute(key, *via) for via, keys in groups for key in keys]


def nexthops_of(key: bytes, hops: bytes) -> tuple[IpAddress, ...]:
    """The addresses in `hops` of the route `key`: of the route's family (the decoder drops
    a route with a next hop of the other)."""
    width = len(key) - 1
    return tuple(ipaddress.ip_address(hops[i : i + width]) for i in range(0, len(hops), width))


class FpmCounters(Counter):
    """Frames, messages and what was skipped, by reason (thread-safe increments)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def add(self, kind: str, n: int = 1) -> None:
        with self.lock:
            self[kind] += n


class FpmReader:
    """Splits a TCP byte stream into FPM frames and decodes them."""

    def __init__(self, counters: FpmCounters, log: Callable[[str], None]):
        self.counters = counters
        self.log = log
        self.buffer = b""

    def feed(self, data: bytes) -> list[Routes]:
        """The routes of the complete frames in `data` (plus what was buffered), folded and
        grouped (`Routes`). A frame whose header cannot be right (a length below the header's) loses
        the stream's framing: FpmError("desynchronised") tells the caller to drop the
        connection."""
        buffer = self.buffer + data if self.buffer else data
        consumed, groups, counts, logs, desynchronised = decode(buffer)
        self.buffer = buffer[consumed:]
        with self.counters.lock:
            self.counters.update(counts)
        for line in logs:
            self.log(line)
        if desynchronised is not None:
            raise FpmError("desynchronised", desynchronised)
        return groups


class FpmServer:
    """Accepts zebra's FPM connection (one at a time: zebra reconnects when it drops) and hands
    the routes of what each receive brings to `sink`. Runs in its own thread until `stop()`."""

    def __init__(
        self,
        address: str,
        sink: Callable[[list[Routes]], None],
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
                data = conn.recv(RECEIVE)
            except TimeoutError:
                continue
            except OSError as err:
                self.log(f"fpm: receive: {err.strerror}")
                return
            if not data:
                return
            try:
                groups = reader.feed(data)
            except FpmError as err:
                self.log(f"fpm: {err}; dropping the connection (zebra reconnects)")
                return
            if groups:
                self.sink(groups)
