"""Neighbours from the kernel's neighbour table, as SONiC's neighsyncd takes them: the
RTM_NEWNEIGH and RTM_DELNEIGH messages of the host interfaces' namespace (`run --hostif NS
--neighsync`), read with pyroute2, become (interface, address, MAC) events for the neighbour
learner; MAC None when the kernel deleted the entry or failed to resolve it.

The kernel learns from the ARP and ND the hostif path hands it (its own requests' answers,
and the requests of neighbours that resolve the router), so what FRR and the kernel see as a
neighbour is what the switch gets. A dump of the table at start gives what is already there.
"""

from __future__ import annotations

import ipaddress
import queue
import threading
from typing import Any

from pyroute2 import IPRoute
from pyroute2.netlink.rtnl import RTMGRP_NEIGH

# linux/neighbour.h: states with a usable link-layer address, and states without one.
NUD_INCOMPLETE, NUD_REACHABLE, NUD_STALE, NUD_DELAY = 0x01, 0x02, 0x04, 0x08
NUD_PROBE, NUD_FAILED, NUD_NOARP, NUD_PERMANENT = 0x10, 0x20, 0x40, 0x80
NUD_VALID = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_NOARP | NUD_PERMANENT
NUD_GONE = NUD_INCOMPLETE | NUD_FAILED

Event = tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address, bytes | None]


class NeighSync:
    """Watches the kernel's neighbour table of namespace `netns` for the interfaces named in
    `ifnames`; `events` gets an Event per change (and per entry at start)."""

    def __init__(self, netns: str, ifnames: set[str]):
        self.netns = netns
        self.ifnames = ifnames
        self.events: queue.Queue[Event] = queue.Queue()
        self.names: dict[int, str] = {}
        self.ipr: IPRoute | None = None
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()

    def start(self) -> NeighSync:
        """Dump the table (its entries are the first events) and watch it from a thread of
        its own, which owns the netlink socket (pyroute2's IPRoute serves the thread that
        made it)."""
        ready: queue.Queue[BaseException | None] = queue.Queue()
        self.thread = threading.Thread(target=self._serve, args=(ready,), name="neighsync")
        self.thread.daemon = True
        self.thread.start()
        err = ready.get()
        if err is not None:
            raise err
        return self

    def _links(self) -> None:
        assert self.ipr is not None
        self.names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in self.ipr.get_links()}

    def _serve(self, ready: queue.Queue) -> None:
        try:
            self.ipr = IPRoute(netns=self.netns)
            self.ipr.bind(groups=RTMGRP_NEIGH)
            self._links()
            for msg in self.ipr.get_neighbours():
                self._put(msg)
        except Exception as err:  # noqa: BLE001 (given to start())
            ready.put(err)
            return
        ready.put(None)
        while not self.stopped.is_set():
            try:
                messages = self.ipr.get()
            except OSError:  # closed
                return
            for msg in messages:
                if msg.get("event") in ("RTM_NEWNEIGH", "RTM_DELNEIGH"):
                    self._put(msg)

    def _put(self, msg: Any) -> None:
        event = self.event(msg)
        if event is not None:
            self.events.put(event)

    def event(self, msg: Any) -> Event | None:
        """The message's (interface, address, MAC or None), or None when it is not for one of
        our interfaces or says nothing the learner acts on (an entry still being resolved)."""
        if msg["ifindex"] not in self.names:
            self._links()  # an interface made since
        ifname = self.names.get(msg["ifindex"])
        dst = msg.get_attr("NDA_DST")
        if ifname not in self.ifnames or dst is None:
            return None
        ip = ipaddress.ip_address(dst)
        if ip.is_multicast:  # the kernel's own entries for the groups it joined
            return None
        lladdr = msg.get_attr("NDA_LLADDR")
        if msg.get("event") == "RTM_DELNEIGH" or msg["state"] & NUD_GONE:
            return ifname, ip, None
        if msg["state"] & NUD_VALID and lladdr:
            return ifname, ip, bytes.fromhex(lladdr.replace(":", ""))
        return None

    def close(self) -> None:
        self.stopped.set()
        if self.ipr is not None:
            self.ipr.close()
