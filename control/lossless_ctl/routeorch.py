"""Routes from FPM to the switch, orchagent's RouteOrch: next hops resolved on the config's
router interfaces (their users counted with the neighbour learner's: p4map.HardwareIds), ECMP
groups shared by every route with the same next-hop set (refcounted), and bulk writes as seed
002 proposes for orchagent (flush at `Bulk.size` pending routes or every `Bulk.flush_s`).

A flush writes in dependency order and never leaves a half-made object behind: next hops, ECMP
members, groups (group then its ecmp_group entry; a group whose entry fails is removed again),
routes, then what no route uses any more (groups, members, next hops, in that order). A route
whose group could not be written is not written either. Routes that do not fit (the switch's
RESOURCE_EXHAUSTED) are reported with the count that fits; nothing already there is touched.
Updates for one prefix that arrive within one flush are folded into one (zebra's delete + add of
a changed route becomes a MODIFY), so a route never blinks.

Flushes run in a thread of their own: the FPM listener only records what zebra sent (under
`lock`, briefly), so decoding goes on while a flush waits for the switch, and a flush takes
everything pending by then (in WriteRequests of `Bulk.size`, several in flight; each
request's routes settled as it completes, while the switch works on the next). Routes are
handled a next-hop set at a time, as the decoder groups them (fpm.Routes): each route is a key
in dictionaries whose values are shared per set (its fpm.Via, its Target), so recording,
planning and bookkeeping are dictionary and set operations over a set's keys; a next-hop set is
resolved once and its target reused; route updates are pre-encoded
(p4map.RouteEntries.routes).
"""

from __future__ import annotations

import ipaddress
import threading
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate, groupby
from operator import itemgetter
from typing import Any, NamedTuple

from lossless_ctl.client import P4RuntimeClient, UpdateError
from lossless_ctl.config_db import IpAddress, IpNetwork, network_of, route_key
from lossless_ctl.fpm import Routes, Via, nexthops_of
from lossless_ctl.neighbor import Interface
from lossless_ctl.p4info import P4InfoIndex
from lossless_ctl.p4map import ING, HardwareIds, RouteEntries
from lossless_ctl.show import match_value, param_value

# Where a route goes: ("nexthop", nexthop key), ("group", frozenset of nexthop keys), ("drop",).
Target = tuple


@dataclass(frozen=True)
class Bulk:
    """How route updates are gathered into writes: at most `size` per WriteRequest, flushed
    when `size` are pending or at the next tick of a timer that fires every `flush_s`."""

    size: int = 64
    flush_s: float = 1.0


QUIET_S = 0.01  # no input for this long after a flush ends a burst (its state is logged)
SEED002 = Bulk(64, 1.0)  # orchagent's bulk of 64 and its one-second flush timer (seed 002)


def parse_bulk(text: str) -> Bulk:
    """`SIZE/SECONDS` (e.g. 64/1, seed 002's) or `seed002`."""
    if text == "seed002":
        return SEED002
    size, sep, seconds = text.partition("/")
    try:
        bulk = Bulk(int(size), float(seconds)) if sep else None
    except ValueError:
        bulk = None
    if bulk is None or bulk.size < 1 or bulk.flush_s <= 0:
        raise ValueError(f"--route-bulk {text!r}: expected SIZE/SECONDS (e.g. 64/1) or seed002")
    return bulk


@dataclass
class _Ref:
    """A run-time object this module wrote, and how many users it has."""

    id: int
    refs: int = 0
    detail: Any = None  # a group's member ids


class _FpmState:
    """The FPM routes on a switch, read from its entities (`state`, by entity key): `routes`
    {prefix: (kind "group" | "nexthop" | "drop", its id, protocol)}, the next hops {id: (rif,
    ip)} and ECMP groups {id: member ids} they use, and `keys`, each one's entity key by (kind,
    id) or ("route", prefix). KeyError or ValueError: they are incomplete."""

    ACTIONS = {"set_ecmp_group_id": "group", "set_nexthop_id": "nexthop", "drop_route": "drop"}
    PARAMS = {"group": "ecmp_group_id", "nexthop": "nexthop_id"}

    def __init__(self, index: P4InfoIndex, state: dict[tuple, Any]):
        names = ("ipv4_route", "ipv6_route", "nexthop", "ecmp_group")
        tables = {index.table(ING + name).preamble.id: name for name in names}
        profile = index.action_profile(RouteEntries.ECMP_PROFILE).preamble.id
        self.routes: dict[IpNetwork, tuple[str, int, str]] = {}
        self.keys: dict[tuple, tuple] = {}
        every_hop: dict[int, tuple[int, int]] = {}
        every_group: dict[int, list[int]] = {}
        for key, entity in state.items():
            which = entity.WhichOneof("entity")
            if which == "action_profile_member":
                if entity.action_profile_member.action_profile_id == profile:
                    self.keys[("member", entity.action_profile_member.member_id)] = key
                continue
            if which == "action_profile_group":
                g = entity.action_profile_group
                if g.action_profile_id == profile:
                    every_group[g.group_id] = sorted(m.member_id for m in g.members)
                    self.keys[("group", g.group_id)] = key
                continue
            if which != "table_entry" or entity.table_entry.is_default_action:
                continue
            t = entity.table_entry
            name = tables.get(t.table_id)
            if name in ("nexthop", "ecmp_group"):
                field = "nexthop_id" if name == "nexthop" else "group"
                n = match_value(t, index, index.table(ING + name), field)
                self.keys[(name, n)] = key
                if name == "nexthop":
                    every_hop[n] = (
                        param_value(t, index, "rif"),
                        param_value(t, index, "neighbor_ip"),
                    )
            elif name in ("ipv4_route", "ipv6_route") and t.metadata.startswith(b"fpm:"):
                lpm = next((m.lpm for m in t.match), None)
                value = int.from_bytes(lpm.value, "big") if lpm is not None else 0
                address = (
                    ipaddress.IPv4Address(value)
                    if name == "ipv4_route"
                    else ipaddress.IPv6Address(value)
                )
                prefix = ipaddress.ip_network((address, lpm.prefix_len if lpm is not None else 0))
                kind = self.ACTIONS[index.name_of(t.action.action.action_id).rsplit(".", 1)[-1]]
                n = param_value(t, index, self.PARAMS[kind]) if kind != "drop" else 0
                self.routes[prefix] = (kind, n, t.metadata.decode().removeprefix("fpm:"))
                self.keys[("route", prefix)] = key
        self.groups = {n: every_group[n] for kind, n, _ in self.routes.values() if kind == "group"}
        used = {n for kind, n, _ in self.routes.values() if kind == "nexthop"}
        used |= {nid for members in self.groups.values() for nid in members}
        # IPv4 next hops are zero-extended into the 128-bit parameter (p4src/README.md).
        self.nexthops = {
            nid: (every_hop[nid][0], ipaddress.ip_address(every_hop[nid][1])) for nid in used
        }
        for gid, members in self.groups.items():
            if ("ecmp_group", gid) not in self.keys:
                raise ValueError(f"ECMP group {gid} has no ecmp_group entry")
            for nid in members:
                if ("member", nid) not in self.keys:
                    raise ValueError(f"ECMP group {gid}: member {nid} is not on the switch")


class _Batch(NamedTuple):
    """Route updates of one kind (`kind`: INSERT, MODIFY, DELETE) for routes `keys` that go
    the same way: what `installed` holds for them once written (`placed`; None for
    deletions), the targets they leave (`left`, one per key; None for new routes), and what
    their entries say (`hw`, `source`: p4map.RouteEntries.routes)."""

    keys: list[bytes]
    kind: int
    placed: tuple[Via, Target] | None
    left: list[Target] | None
    hw: tuple[str, int]
    source: str


@dataclass
class FlushStats:
    routes: int = 0
    seconds: float = 0.0


class RouteOrch:
    def __init__(
        self,
        p4info: P4InfoIndex,
        ids: HardwareIds,
        interfaces: dict[str, Interface],
        bulk: Bulk,
        log: Callable[[str], None] = print,
        in_flight: int = 4,
        resolve: Callable[[IpAddress], None] | None = None,
        restart_s: float = 5.0,
    ):
        self.entries = RouteEntries(p4info)
        self.pb = self.entries.pb
        self.ids = ids
        self.interfaces = interfaces
        self.bulk = bulk
        self.in_flight = in_flight
        self.log = log
        self.sizes = {
            4: p4info.table(ING + "ipv4_route").size,
            6: p4info.table(ING + "ipv6_route").size,
        }
        self.client: P4RuntimeClient | None = None
        # `lock` guards what zebra sent (desired, pending, stale); `state_lock` the switch's
        # side (everything else), held over a flush. Taken in that order: state, then input.
        self.lock = threading.RLock()
        self.state_lock = threading.RLock()
        self._wake = threading.Event()  # `bulk.size` routes are pending
        # What zebra said of each route (fpm.Via), by route key (config_db.route_key).
        self.desired: dict[bytes, Via] = {}  # every route zebra has, resolvable or not
        self.pending: dict[bytes, Via] = {}
        self.installed: dict[bytes, tuple[Via, Target]] = {}  # one tuple per set and target
        self.waiting: dict[bytes, Via] = {}  # found their table full
        # (route key width, next-hop set (Via.hops)) -> (target or None, next hops on no
        # router interface).
        self._targets: dict[tuple[int, bytes], tuple[Target | None, int]] = {}
        self.members: dict[int, _Ref] = {}
        self.groups: dict[frozenset, _Ref] = {}
        self.counters: Counter = Counter()
        self._unwritten: set = set()  # this flush's groups that are not on the switch
        # Next hops the config has no neighbour for: `resolve` asks for their MACs (ARP/ND).
        self.resolve = resolve
        self._to_resolve: list[IpAddress] = []
        # Routes of an earlier FPM connection not sent again yet (see zebra_connected).
        self.restart_s = restart_s
        self.stale: set[bytes] = set()
        self.last_input = 0.0
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    # --- sessions ----------------------------------------------------------------------------

    def forget(self) -> None:
        """A new session, before its reconcile: the switch it reaches holds none of ours (it
        is reconciled to the config, or it restarted), so the ids are given back (every
        run-time next hop's: the neighbour learner's are gone as well) and everything zebra
        gave us is to be written again (attach). adopt() may then take over what an earlier
        controller left instead."""
        with self.state_lock, self.lock:
            for ref in self.groups.values():
                self.ids.release("group", ref.id)
            self.ids.forget_nexthops()
            for prefix in self.installed:
                self.ids.routes.discard(prefix)
            self.ids.members.difference_update(self.members)
            self.installed.clear()
            self.waiting.clear()
            self.members.clear()
            self.groups.clear()
            self._targets.clear()
            self.pending = dict(self.desired)

    def attach(self, client: P4RuntimeClient) -> None:
        """Write through `client` from now on, starting with what is pending."""
        with self.state_lock:
            self.client = client
        self.flush()

    def adopt(self, state: dict[tuple, Any]) -> set[tuple]:
        """A restarted controller's first session, before its reconcile: the switch still
        holds the routes an earlier controller wrote from FPM (their entries' metadata says
        "fpm:..."), with the groups, members and next hops they use. They are taken over as
        zebra's routes of an earlier connection (zebra_connected): they stay until zebra sends
        them again, and are rewritten only where what it sends differs, or removed if it has
        not sent them `restart_s` after it went quiet. Returns the keys of the entities taken
        over, which the reconcile leaves alone. If they do not fit this config's numbering (a
        changed config) or are incomplete, nothing is taken over and the reconcile removes
        them, as for a reload. Routes zebra sent before (it may reconnect first) are pending:
        the first flush compares them with what was taken over."""
        with self.state_lock, self.lock:
            if self.installed:
                return set()
            try:
                found = _FpmState(self.entries.b.idx, state)
                clash = [str(p) for p in found.routes if route_key(p) in self.ids.routes]
                clash += [f"group {g}" for g in found.groups if g in self.ids.group_ids.values()]
                if clash:
                    raise ValueError(f"the config has {', '.join(clash[:3])}")
                rif_name = {rid: n.removeprefix("rif:") for n, rid in self.ids.rif_ids.items()}
                key_of = {
                    nid: f"nexthop:{rif_name[rif]}|{ip}"
                    for nid, (rif, ip) in found.nexthops.items()
                }
            except (KeyError, ValueError) as err:
                self.counters["switch routes not taken over"] += 1
                self.log(f"routeorch: the switch's FPM routes are not taken over: {err}")
                return set()
            # The config's next hops are not counted; learned neighbours' are (taken over first).
            config_hops = {
                nid for k, nid in self.ids.nexthop_ids.items() if k not in self.ids.nexthop_users
            }
            ours = [nid for nid in found.nexthops if nid not in config_hops]
            keys = {found.keys[("route", p)] for p in found.routes}
            users = Counter(n for kind, n, _ in found.routes.values() if kind == "nexthop")
            users.update(nid for members in found.groups.values() for nid in members)
            for nid in ours:
                self.ids.hold_nexthop(key_of[nid], users[nid], nid=nid)
                keys.add(found.keys[("nexthop", nid)])
            for gid, members in found.groups.items():
                hop_keys = frozenset(key_of[nid] for nid in members)
                self.groups[hop_keys] = _Ref(gid, 0, members)
                keys |= {found.keys[("group", gid)], found.keys[("ecmp_group", gid)]}
                for nid in members:
                    if nid in self.ids.members and nid not in self.members:
                        continue  # the config's member
                    self.members.setdefault(nid, _Ref(nid)).refs += 1
                    self.ids.members.add(nid)
                    keys.add(found.keys[("member", nid)])
            for prefix, (kind, n, protocol) in found.routes.items():
                if kind == "group":
                    hops = sorted(key_of[nid] for nid in found.groups[n])
                    target: Target = ("group", frozenset(hops))
                    self.groups[target[1]].refs += 1
                elif kind == "nexthop":
                    hops = [key_of[n]]
                    target = ("nexthop", hops[0])
                else:
                    hops, target = [], ("drop",)
                packed = sorted({ipaddress.ip_address(h.split("|")[1]).packed for h in hops})
                key = route_key(prefix)
                via = Via(b"".join(packed), protocol)
                self.installed[key] = (via, target)
                self.ids.routes.add(key)
                if key not in self.desired and key not in self.pending:
                    self.desired[key] = via
                    self.stale.add(key)
            self.ids.claim("group", max(found.groups, default=0))
            self.last_input = time.monotonic()
            self.counters["routes taken over from the switch"] += len(found.routes)
            self.log(
                f"routeorch: took over {len(found.routes)} FPM routes, {len(found.groups)} ECMP "
                f"groups and {len(ours)} next hops from the switch, kept until zebra sends them"
            )
            return keys

    def rebase(self, ids: HardwareIds, interfaces: dict[str, Interface]) -> None:
        """A reloaded config: its plan numbers the switch's objects afresh (`ids`), and the
        next session's reconcile removes every entry of ours, so nothing of ours is on the
        switch or numbered any more; attach() writes what zebra gave us again."""
        with self.state_lock:
            self.ids = ids
            self.interfaces = interfaces
            self._targets.clear()
            self.installed.clear()
            self.waiting.clear()
            self.members.clear()
            self.groups.clear()

    def detach(self) -> None:
        """The session ended: gather zebra's updates until the next attach(). Call it before
        the client closes: it waits for a flush in progress (gRPC must not be called on a
        closed channel)."""
        with self.state_lock:
            self.client = None

    def start(self) -> RouteOrch:
        """Flush every `bulk.flush_s` in a thread of its own, until stop()."""
        self._timer = threading.Thread(target=self._tick, name="routeorch", daemon=True)
        self._timer.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._timer is not None:
            self._timer.join(timeout=5)

    def _tick(self) -> None:
        """Flush at each tick of the `bulk.flush_s` timer, and in between whenever `submit`
        finds `bulk.size` routes pending. The state is logged at the timer's ticks and at the
        end of a burst (nothing pending and no input for QUIET_S): the moment a burst's
        last route is on the switch, which the route benchmark waits for."""
        tick = time.monotonic() + self.bulk.flush_s
        burst = FlushStats()  # written since the last report
        while not self._stop.is_set():
            timeout = tick - time.monotonic()
            if burst.routes:
                timeout = min(timeout, QUIET_S)
            woken = self._wake.wait(max(0.0, timeout))
            self._wake.clear()
            if self._stop.is_set():
                return
            timer = time.monotonic() >= tick
            if timer:
                tick = time.monotonic() + self.bulk.flush_s
            try:
                self._sweep()
                stats = self.flush()
            except Exception as err:  # a fault here must not stop later flushes
                with self.state_lock:
                    self.counters["internal errors"] += 1
                self.log(f"routeorch: flush failed: {err!r}")
                continue
            burst.routes += stats.routes
            burst.seconds += stats.seconds
            if burst.routes and (timer or not (woken or stats.routes)):
                self.log(
                    f"{self.summary()}; {burst.routes} written since the last report, "
                    f"{burst.seconds:.3f} s flushing"
                )
                burst = FlushStats()

    # --- input -------------------------------------------------------------------------------

    def zebra_connected(self) -> None:
        """A new FPM connection: zebra (perhaps restarted) sends its whole FIB again. Until it
        has, the routes it gave before stay (as graceful restart keeps them); those it has not
        sent again once it has been quiet for `restart_s` are removed."""
        with self.lock:
            self.stale = set(self.desired)
            self.last_input = time.monotonic()

    def _sweep(self) -> None:
        with self.state_lock, self.lock:
            if not self.stale or time.monotonic() - self.last_input < self.restart_s:
                return
            for key in self.stale:
                via = self.desired.pop(key)
                self.pending[key] = Via(None, via[1])
            self.log(
                f"routeorch: {len(self.stale)} routes zebra did not send again after it "
                f"reconnected ({self.restart_s:g} s quiet) are removed"
            )
            self.counters["stale routes removed"] += len(self.stale)
            self.stale = set()

    def submit(self, groups: list[Routes]) -> None:
        """Routes from zebra (the FPM listener's sink: the decoder's groups); the flushing
        thread is woken once `bulk.size` are pending."""
        desired, pending = self.desired, self.pending
        with self.lock:
            self.last_input = time.monotonic()
            for via, keys in groups:
                if self.stale:
                    self.stale.difference_update(keys)
                said = dict.fromkeys(keys, via)
                if via[0] is None:
                    for key in keys:
                        desired.pop(key, None)
                else:
                    desired.update(said)
                pending.update(said)
            full = len(pending) >= self.bulk.size
        if full:
            self._wake.set()

    # --- resolution and references -----------------------------------------------------------

    def _resolve(self, via: Via, key: bytes, routes: int) -> Target | None:
        """Where the `routes` routes that `via` says go to (`key` one of them); every route
        with the same next hops gets the same target object (resolved, and its unresolvable
        next hops logged, once per set)."""
        found = self._targets.get((len(key), via[0]))
        if found is None:
            found = self._targets[(len(key), via[0])] = self._resolve_set(key, via[0])
        target, unresolvable = found
        if unresolvable:
            self.counters["unresolvable next hops"] += unresolvable * routes
        return target

    def _resolve_set(self, key: bytes, hops: bytes) -> tuple[Target | None, int]:
        if not hops:
            return ("drop",), 0
        keys, unresolvable = [], 0
        for ip in nexthops_of(key, hops):
            iface = next((i for i in self.interfaces.values() if i.on_link(ip)), None)
            if iface is None or f"rif:{iface.name}" not in self.ids.rif_ids:
                unresolvable += 1
                prefix = network_of(key)
                self.log(f"routeorch: {prefix}: next hop {ip} is on no router interface")
                continue
            keys.append(f"nexthop:{iface.name}|{ip}")
        if not keys:
            return None, unresolvable
        if len(keys) == 1:
            return ("nexthop", keys[0]), unresolvable
        return ("group", frozenset(keys)), unresolvable

    def _nexthop_id(self, key: str, out: list[Any], users: int = 1) -> int:
        """The id of next hop `key`, with `users` more users (HardwareIds.hold_nexthop: the
        count the neighbour learner keeps too); written (into `out`) if neither the config, a
        learned neighbour nor an earlier route has it, and then its neighbour is to be
        resolved."""
        nid, new = self.ids.hold_nexthop(key, users)
        if new:
            rif, address = self._nexthop_of(key)
            out.append(self.entries.nexthop(nid, rif, address))
            self._to_resolve.append(address)
        return nid

    def _nexthop_of(self, key: str) -> tuple[int, IpAddress]:
        """The router interface id and address of next hop `key` (`nexthop:IFNAME|IP`)."""
        ifname, ip = key.removeprefix("nexthop:").split("|")
        return self.ids.rif_ids[f"rif:{ifname}"], ipaddress.ip_address(ip)

    def _acquire(self, target: Target, writes: dict[str, list[Any]], users: int) -> tuple[str, int]:
        """`users` more users (routes) of `target`; its objects go into `writes` when new."""
        if target[0] == "drop":
            return ("drop", 0)
        if target[0] == "nexthop":
            return ("nexthop", self._nexthop_id(target[1], writes["nexthops"], users))
        ref = self.groups.get(target[1])
        if ref is None:
            members = sorted(self._nexthop_id(k, writes["nexthops"]) for k in target[1])
            for nid in members:
                if nid in self.ids.members and nid not in self.members:
                    continue  # the config's member
                mref = self.members.get(nid)
                if mref is None:
                    mref = self.members[nid] = _Ref(nid)
                    self.ids.members.add(nid)
                    writes["members"].append(self.entries.member(nid))
                mref.refs += 1
            ref = self.groups[target[1]] = _Ref(self.ids.allocate("group"), 0, members)
            writes["groups"].append((target[1], self.entries.group(ref.id, members)))
        ref.refs += users
        return ("group", ref.id)

    def _release(self, target: Target, gone: dict[str, list[Any]], users: int = 1) -> None:
        """`users` users fewer; objects nobody uses go into `gone` (deleted at the flush's
        end)."""
        if target[0] == "drop":
            return
        if target[0] == "nexthop":
            self._release_nexthop(target[1], gone, users)
            return
        ref = self.groups[target[1]]
        ref.refs -= users
        if ref.refs > 0:
            return
        del self.groups[target[1]]
        if target[1] not in self._unwritten:
            gone["groups"] += self.entries.group(ref.id, ref.detail, insert=False)
        self.ids.release("group", ref.id)
        for nid in ref.detail:
            mref = self.members.get(nid)
            if mref is not None:
                mref.refs -= 1
                if mref.refs == 0:
                    del self.members[nid]
                    self.ids.members.discard(nid)
                    gone["members"].append(self.entries.member(nid, insert=False))
        for key in target[1]:
            self._release_nexthop(key, gone)

    def _release_nexthop(self, key: str, gone: dict[str, list[Any]], users: int = 1) -> None:
        """`users` fewer users of next hop `key`; when that was the last (the learner's
        neighbour is not one any more either), its DELETE goes into `gone` and its id into
        `gone["freed"]`, released once the DELETE is written."""
        nid = self.ids.drop_nexthop(key, users)
        if nid is not None:
            rif, address = self._nexthop_of(key)
            gone["nexthops"].append(self.entries.nexthop(nid, rif, address, insert=False))
            gone["freed"].append(nid)

    # --- flushing ----------------------------------------------------------------------------

    def _write(
        self,
        updates: Iterable[Any],
        what: str,
        done: Callable[[int, int, list[UpdateError]], None] | None = None,
    ) -> dict[int, str]:
        """Write `updates` (`done`: P4RuntimeClient.write's); the google.rpc code of each that
        failed, by index (each counted, and logged unless it is a full table, which the
        caller reports once)."""
        bulk = self.bulk
        result = self.client.write(updates, bulk.size, in_flight=self.in_flight, done=done)
        for e in result.errors:
            self.counters[f"{what} failed"] += 1
            if e.code != "RESOURCE_EXHAUSTED":
                self.log(f"routeorch: {what} update {e.index} failed: {e.code}: {e.message}")
        return {e.index: e.code for e in result.errors}

    def flush(self) -> FlushStats:
        """Write what is pending (see the module's description for the order), then have the
        new next hops' neighbours resolved."""
        stats = self._flush()
        with self.state_lock:
            asks, self._to_resolve = self._to_resolve, []
        if self.resolve is not None:
            for ip in asks:
                self.resolve(ip)
        return stats

    def _plan(self, changes: dict[bytes, Via], writes: dict[str, list[Any]]) -> list[_Batch]:
        """The route updates for `changes`, in batches of routes that say the same (fpm.Via)
        and take the same kind of update; the objects their targets need go into `writes`."""
        # `submit` recorded each decoded group's routes together: runs of one Via.
        by_via: dict[Via, list[bytes]] = {}
        for via, run in groupby(changes.items(), itemgetter(1)):
            by_via.setdefault(via, []).extend(map(itemgetter(0), run))
        installed, routes = self.installed, self.ids.routes
        insert, modify = self.pb.Update.INSERT, self.pb.Update.MODIFY
        planned: list[_Batch] = []
        for via, keys in by_via.items():
            olds = list(map(installed.get, keys))
            if via[0] is None:
                self._plan_removal(keys, olds, planned)
                continue
            new, moved, left = keys, [], []
            if olds.count(None) != len(olds):
                new, installed_keys = [], []
                for key, old in zip(keys, olds, strict=True):
                    (new if old is None else installed_keys).append(key)
                olds = [old for old in olds if old is not None]
            else:
                installed_keys, olds = [], []
            if new and not routes.isdisjoint(new):
                for key in [key for key in new if key in routes]:
                    self.counters["routes the config has"] += 1
                    self.log(f"routeorch: {network_of(key)}: the config routes it; FPM's ignored")
                new = [key for key in new if key not in routes]
            if not new and not installed_keys:
                continue
            target = self._resolve(via, (new or installed_keys)[0], len(new) + len(olds))
            if target is None:
                self.counters["unresolvable routes"] += len(new) + len(olds)
                self._plan_removal(installed_keys, olds, planned)
                continue
            placed = (via, target)
            for key, old in zip(installed_keys, olds, strict=True):
                if old[1] == target and old[0][1] == via[1]:
                    # The entry would be written as it is (an adopted route's next hops aside).
                    installed[key] = placed
                else:
                    moved.append(key)
                    left.append(old[1])
            if not new and not moved:
                continue
            hw = self._acquire(target, writes, len(new) + len(moved))
            source = "fpm:" + via[1]
            for kind, batch, leaving in ((insert, new, None), (modify, moved, left)):
                if batch:
                    planned.append(_Batch(batch, kind, placed, leaving, hw, source))
        return planned

    def _plan_removal(self, keys: list[bytes], olds: list, planned: list[_Batch]) -> None:
        """DELETEs of the routes `keys` whose `olds` (installed entries) are not None."""
        by_target: dict[Target, list[bytes]] = {}
        for key, old in zip(keys, olds, strict=True):
            if old is not None:
                by_target.setdefault(old[1], []).append(key)
        delete = self.pb.Update.DELETE
        for target, gone in by_target.items():
            planned.append(_Batch(gone, delete, None, [target] * len(gone), self._hw(target), ""))

    def _flush(self) -> FlushStats:
        stats = FlushStats()
        with self.state_lock:
            if self.client is None:
                return stats
            with self.lock:
                if not self.pending:
                    return stats
                changes, self.pending = self.pending, {}
            start = time.perf_counter()
            writes: dict[str, list[Any]] = {"nexthops": [], "members": [], "groups": []}
            gone: dict[str, list[Any]] = {"groups": [], "members": [], "nexthops": [], "freed": []}
            planned = self._plan(changes, writes)
            failed_groups = self._unwritten = self._write_objects(writes)
            # Routes whose group could not be written stay as they were.
            ready = planned
            if failed_groups:
                ready = []
                for batch in planned:
                    target = batch.placed[1] if batch.placed is not None else None
                    if target is not None and target[0] == "group" and target[1] in failed_groups:
                        self.counters["routes with a failed group"] += len(batch.keys)
                        self._release(target, gone, len(batch.keys))
                    else:
                        ready.append(batch)
            full: Counter = Counter()
            freed: set[int] = set()
            starts = list(accumulate((len(batch.keys) for batch in ready), initial=0))

            def settle(offset: int, count: int, errors: list[UpdateError]) -> None:
                """A request's routes, settled as it completes: the switch works on the
                requests after it meanwhile. A request may end one batch and start the next."""
                at, end = bisect_right(starts, offset) - 1, offset + count
                while offset < end:
                    batch, start = ready[at], starts[at]
                    a, b = offset - start, min(end, starts[at + 1]) - start
                    if (a, b) != (0, len(batch.keys)):
                        left = batch.left[a:b] if batch.left is not None else None
                        batch = batch._replace(keys=batch.keys[a:b], left=left)
                    codes = {e.index - start - a: e.code for e in errors}
                    here = {i: code for i, code in codes.items() if 0 <= i < b - a}
                    self._settle(batch, here, gone, full, freed)
                    offset, at = start + b, at + 1

            failed = self._write(self._updates(ready), "route", settle)
            stats.routes = sum(len(batch.keys) for batch in ready) - len(failed)
            insert = self.pb.Update.INSERT
            for width, n in full.items():
                inserts = sum(
                    1 for b in ready if b.kind == insert for key in b.keys if len(key) == width
                )
                self._report_full(width, n, inserts)
            # Routes that found the table full get another try once routes of their family go.
            waiting = self.waiting
            if waiting and freed:
                with self.lock:
                    for key in [k for k in waiting if len(k) in freed]:
                        via = waiting.pop(key)
                        if self.desired.get(key) == via and key not in self.pending:
                            self.pending[key] = via
            for what in ("groups", "members", "nexthops"):
                self._write(gone[what], f"stale {what}")
            for nid in gone["freed"]:
                self.ids.release("nexthop", nid)
            stats.seconds = time.perf_counter() - start
            self.counters["routes written"] += stats.routes
            self._unwritten = set()
        return stats

    def _updates(self, ready: list[_Batch]) -> Iterator[bytes]:
        """The route updates of `ready`, made a request's worth at a time as the write takes
        them: they are made while the requests before are in flight."""
        size = self.bulk.size
        for batch in ready:
            keys = batch.keys
            for at in range(0, len(keys), size):
                yield from self.entries.routes(
                    keys[at : at + size], batch.hw, batch.source, batch.kind
                )

    def _settle(
        self,
        batch: _Batch,
        failed: dict[int, str],
        gone: dict[str, list[Any]],
        full: Counter,
        freed: set[int],
    ) -> None:
        """The state after `batch` was written, with the codes of its updates that `failed`
        by position: a route whose update failed stays as it was (one that found its table
        full waits for room, counted in `full` by key width); the targets routes left lose
        them; the key widths of deleted routes go into `freed`."""
        keys, left = batch.keys, batch.left
        delete = self.pb.Update.DELETE
        if failed:
            for i, code in failed.items():
                if batch.kind == delete:
                    continue
                if code == "RESOURCE_EXHAUSTED":
                    full[len(keys[i])] += 1
                    self.waiting[keys[i]] = batch.placed[0]
                self._release(batch.placed[1], gone)
            kept = [i for i in range(len(keys)) if i not in failed]
            keys = [keys[i] for i in kept]
            left = [left[i] for i in kept] if left is not None else None
        if left:
            for target, users in Counter(left).items():
                self._release(target, gone, users)
        if batch.kind == delete:
            for key in keys:
                del self.installed[key]
            self.ids.routes.difference_update(keys)
            freed.update(map(len, keys))
            return
        self.installed.update(dict.fromkeys(keys, batch.placed))
        self.ids.routes.update(keys)
        if self.waiting:
            for key in keys:
                self.waiting.pop(key, None)

    def _write_objects(self, writes: dict[str, list[Any]]) -> set:
        """Next hops, members, then groups with their entries; the next-hop sets of the groups
        that could not be written (whole: a group whose entry failed is deleted again)."""
        failed_nexthops = self._write(writes["nexthops"], "next hop")
        failed_members = self._write(writes["members"], "ECMP member")
        bad: set = set()
        if failed_nexthops or failed_members:
            # A group over a missing next hop or member would be half a group: none of them.
            bad = {key for key, _ in writes["groups"]}
        good = [(key, updates) for key, updates in writes["groups"] if key not in bad]
        failed = self._write([u[0] for _, u in good], "ECMP group")
        entries = [(key, u) for i, (key, u) in enumerate(good) if i not in failed]
        bad |= {key for i, (key, _) in enumerate(good) if i in failed}
        failed_entries = self._write([u[1] for _, u in entries], "ECMP group entry")
        undo = []
        for i, (key, updates) in enumerate(entries):
            if i in failed_entries:
                bad.add(key)
                group = type(updates[0])()
                group.CopyFrom(updates[0])
                group.type = self.pb.Update.DELETE
                undo.append(group)
        self._write(undo, "ECMP group removal")
        return bad

    def _hw(self, target: Target) -> tuple[str, int]:
        """The hardware ids of an installed target (its objects exist)."""
        if target[0] == "drop":
            return ("drop", 0)
        if target[0] == "group":
            return ("group", self.groups[target[1]].id)
        return ("nexthop", self.ids.nexthop_ids[target[1]])

    def _report_full(self, width: int, n: int, inserted: int) -> None:
        """`n` of `inserted` new routes of route key width `width` (5: IPv4) did not fit."""
        version = 4 if width == 5 else 6
        table = f"ipv{version}_route"
        self.counters[f"{table} full"] += n
        waiting = sum(1 for k in self.waiting if len(k) == width)
        self.log(
            f"routeorch: {table} is full (size {self.sizes[version]}): {n} of {inserted} new "
            f"IPv{version} routes did not fit, {inserted - n} fit; installed routes are kept, "
            f"{waiting} wait for room"
        )

    # --- state -------------------------------------------------------------------------------

    def summary(self, counters: Counter | None = None) -> str:
        with self.state_lock, self.lock:
            via_groups = sum(ref.refs for ref in self.groups.values())
            parts = [
                f"{len(self.installed)} routes installed",
                f"{len(self.groups)} ECMP groups ({via_groups} routes)",
                f"{len(self.desired) - len(self.installed)} not installed",
            ]
            merged = Counter(self.counters) + Counter(counters or {})
        parts += [f"{k} {v}" for k, v in sorted(merged.items())]
        return "routeorch: " + ", ".join(parts)
