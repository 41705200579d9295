"""Host interfaces, SONiC's hostif (its knet/tap driver): a kernel interface per routed port in
a network namespace, where the switch's control plane (FRR's zebra and bgpd) runs.

Each interface is a tap named for the router interface (Ethernet0, ...), with the router MAC
and the config's INTERFACE addresses, so the kernel's connected routes, ARP and BGP sessions
are the port's. Frames the pipeline punts for the router itself (ARP, ND, IP to one of its
addresses: the ip2me trap) are written to the port's tap; frames the kernel sends on a tap go
out of that port as PacketOut. Punted frames for other addresses (a glean) stay with the
neighbour learner: the kernel does not forward.

A tap's carrier stands for its port's oper state. The switch does not report link state, so
whoever watches the ports (the lab) sets it: `ip -n NS link set Ethernet0 carrier off`.

The taps are multi-queue: this process attaches a queue to each, making the tap if it does not
exist (it then goes away with the process, carrier, addresses and all, and BGP with it). A
process that outlives the controller can own them instead (`keep_taps`, SONiC's hostifs belong
to syncd, not orchagent): it holds a disabled queue of each, which keeps the tap, its addresses
and its carrier while no controller is attached, so that a restarted controller finds the
kernel, FRR and the BGP sessions as they were.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import threading
from collections import Counter
from collections.abc import Callable

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netns import setns

from lossless_ctl.neighbor import Interface, Parsed, mac_str

# linux/if_tun.h
TUNSETIFF = 0x400454CA
TUNSETQUEUE = 0x400454D9
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
IFF_MULTI_QUEUE = 0x0100
IFF_DETACH_QUEUE = 0x0400
IFNAMSIZ = 16


TAP_FLAGS = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE


class HostIfError(Exception):
    pass


def keep_taps(ns: str, names: list[str]) -> list[int]:
    """Make the taps of `names` in `ns` and hold them for the controllers that come and go:
    a disabled queue each (the kernel sends nothing to it), so that a tap keeps its
    addresses and its carrier while no `run --hostif` is attached. Close the descriptors to
    let them go."""
    fds = _open_taps(ns, names)
    try:
        for fd in fds.values():
            fcntl.ioctl(fd, TUNSETQUEUE, struct.pack("16sH", b"", IFF_DETACH_QUEUE))
    except OSError as err:
        for fd in fds.values():
            os.close(fd)
        raise HostIfError(f"taps in namespace {ns}: disabling the keeper's queue: {err}") from err
    return list(fds.values())


def _open_taps(ns: str, names: list[str]) -> dict[str, int]:
    """A queue of the tap of each name in namespace `ns`, made if it does not exist, opened
    there (a tap belongs to the namespace of the thread that creates it; setns moves only the
    calling thread, so a thread of its own)."""
    fds: dict[str, int] = {}
    failure: list[BaseException] = []

    def create() -> None:
        try:
            setns(ns, flags=0)  # flags=0: a namespace that does not exist is an error
            for name in names:
                fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
                fds[name] = fd
                fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), TAP_FLAGS))
        except OSError as err:
            failure.append(err)

    thread = threading.Thread(target=create, name="hostif-create")
    thread.start()
    thread.join()
    if failure:
        for fd in fds.values():
            os.close(fd)
        raise HostIfError(f"taps in namespace {ns}: {failure[0]}")
    return fds


class HostIf:
    """The taps of `interfaces` in `ns`; `attach` a PacketOut sender per P4Runtime session."""

    def __init__(self, ns: str, interfaces: dict[str, Interface], log: Callable[[str], None]):
        too_long = [n for n in interfaces if len(n.encode()) >= IFNAMSIZ]
        if too_long:
            raise HostIfError(f"interface names longer than the kernel's 15 bytes: {too_long}")
        self.ns = ns
        self.log = log
        self.interfaces = interfaces
        self.counters: Counter = Counter()
        self.own = {a.ip for i in interfaces.values() for a in i.addresses}
        self.fds = _open_taps(ns, sorted(interfaces))
        self.port_of_fd = {fd: interfaces[name].port for name, fd in self.fds.items()}
        self.fd_of_port = {interfaces[name].port: fd for name, fd in self.fds.items()}
        try:
            self._configure()
        except (NetlinkError, OSError) as err:
            self.close()
            raise HostIfError(f"configuring the taps in {ns}: {err}") from err
        self._send: Callable[[int, bytes], None] | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._read, name="hostif", daemon=True)

    def _configure(self) -> None:
        # A kept tap (keep_taps) has what an earlier controller set: only what differs.
        with IPRoute(netns=self.ns) as ipr:
            for name, iface in self.interfaces.items():
                index = ipr.link_lookup(ifname=name)[0]
                link = ipr.get_links(index)[0]
                if link.get_attr("IFLA_ADDRESS") != mac_str(iface.mac):
                    ipr.link("set", index=index, address=mac_str(iface.mac))
                have = {
                    (a.get_attr("IFA_ADDRESS"), a["prefixlen"]) for a in ipr.get_addr(index=index)
                }
                for a in iface.addresses:
                    if (str(a.ip), a.network.prefixlen) not in have:
                        ipr.addr(
                            "add", index=index, address=str(a.ip), prefixlen=a.network.prefixlen
                        )
                if not link["flags"] & 1:  # IFF_UP
                    ipr.link("set", index=index, state="up")

    def start(self) -> HostIf:
        self.thread.start()
        self.log(f"hostif: {len(self.fds)} taps in {self.ns}: {', '.join(sorted(self.fds))}")
        return self

    def close(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2)
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}

    def attach(self, send: Callable[[int, bytes], None] | None) -> None:
        """`send(port, frame)` emits a PacketOut (None between sessions: the kernel's frames
        are then dropped and counted)."""
        self._send = send

    def wants(self, pkt: Parsed) -> bool:
        """Whether the kernel gets a punted packet: neighbour discovery, and IP to the router."""
        if pkt.kind in ("arp-request", "arp-reply", "ns", "na"):
            return True
        return pkt.target_ip in self.own

    def punt(self, port: int, frame: bytes) -> None:
        """A frame the pipeline punted from `port`, to that port's tap."""
        fd = self.fd_of_port.get(port)
        if fd is None:
            self.counters["punted from a port without a tap"] += 1
            return
        try:
            os.write(fd, frame)
            self.counters["to kernel"] += 1
        except OSError as err:  # the tap is down (no carrier, or the kernel's queue is full)
            self.counters[f"to kernel failed: {err.strerror}"] += 1

    def _read(self) -> None:
        while not self._stop.is_set():
            readable, _, _ = select.select(list(self.port_of_fd), [], [], 0.2)
            for fd in readable:
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                except OSError as err:
                    self.counters[f"from kernel failed: {err.strerror}"] += 1
                    continue
                send = self._send
                if send is None:
                    self.counters["from kernel without a session"] += 1
                    continue
                send(self.port_of_fd[fd], frame)
                self.counters["from kernel"] += 1
