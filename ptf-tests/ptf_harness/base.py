"""The base of every test: PTF's dataplane on the veth peers, a P4Runtime session for counters,
registers and PacketIn, the suite's config for expectations, and packet checks whose failure
says what differed (expected vs received, field by field, nearest miss)."""

from __future__ import annotations

import ipaddress
import itertools
import json
import subprocess
import time
import urllib.request
from typing import Any

import ptf
from ptf.base_tests import BaseTest
from ptf.testutils import test_params_get

from ptf_harness.bmv2_limits import bmv2_limit
from ptf_harness.packets import describe_difference, nearest

# p4src/headers.p4 DROP_* and PUNT_*.
DROP_NO_ROUTE = 2
DROP_TTL_EXPIRED = 3
DROP_NOT_ROUTER_MAC = 1
DROP_LOSSY_THRESHOLD = 5
DROP_LOSSLESS_VIOLATION = 6
DROP_COPP = 7
DROP_ROUTE_ACTION = 8
PUNT_ARP, PUNT_ND, PUNT_IP2ME = 1, 2, 3
PORTS = (1, 2, 3, 4)
# Each test's P4Runtime session arbitrates with an election id of its own (100, 101, ...): the
# previous test's stream may still be open on the switch when the next test arbitrates, and the
# spec refuses an id that a controller of the role already holds (bmv2: "Election id already
# exists"). The learning tests' controller runs above them (CONTROLLER_ELECTION_ID).
_session_election_ids = itertools.count(100)
CONTROLLER_ELECTION_ID = 1_000_000


class SuiteConfig:
    """What the tests expect, read from the suite's config_db.json (not from the overlays:
    with PFC turned off by an overlay the PFC tests must still expect PFC)."""

    def __init__(self, path: str):
        self.tables: dict[str, Any] = json.loads(open(path).read())
        self.router_mac = self.tables["DEVICE_METADATA"]["localhost"]["mac"]
        self.port_index = {k: int(v["index"]) for k, v in self.tables["PORT"].items()}
        self.port_bps = {
            int(v["index"]): int(v["speed"]) * 1_000_000 for v in self.tables["PORT"].values()
        }
        self.neighbors: dict[str, tuple[int, str]] = {}
        for key, v in self.tables["NEIGH"].items():
            ifname, ip = key.split("|")
            self.neighbors[str(ipaddress.ip_address(ip))] = (self.port_index[ifname], v["neigh"])

    def host(self, port: int, family: int = 4) -> tuple[str, str]:
        """(IP, MAC) of the neighbour on `port`."""
        for ip, (p, mac) in self.neighbors.items():
            if p == port and ipaddress.ip_address(ip).version == family:
                return ip, mac
        raise KeyError(f"no IPv{family} neighbour on port {port}")

    def pfc_queue(self, port: int, priority: int) -> int:
        """The queue a PFC frame for `priority` received on `port` pauses (the port's
        pfc_to_queue_map; identity without one)."""
        for names, qos in self.tables["PORT_QOS_MAP"].items():
            if any(self.port_index.get(n) == port for n in names.split(",")):
                ref = qos.get("pfc_to_queue_map")
                if ref:
                    table, name = ref.strip("[]").split("|")
                    return int(self.tables[table][name][str(priority)])
        return priority

    def profile(self, name: str) -> dict[str, int]:
        return {k: int(v) for k, v in self.tables["BUFFER_PROFILE"][name].items() if k != "pool"}

    def lossless(self) -> dict[str, int]:
        """p4src/README.md: xoff_threshold = size, drop_limit = size + xoff, xon_threshold = xon
        (no xon_offset in the suite's profile)."""
        p = self.profile("pg_lossless_ptf")
        return {"xoff": p["size"], "limit": p["size"] + p["xoff"], "xon": p["xon"]}

    def wred(self) -> dict[str, float]:
        w = self.tables["WRED_PROFILE"]["PTF_LOSSLESS"]
        return {
            "kmin": int(w["green_min_threshold"]),
            "kmax": int(w["green_max_threshold"]),
            "pmax": int(w["green_drop_probability"]) / 100,
        }

    def sfc(self) -> dict[str, int]:
        g = self.tables["SFC"]["GLOBAL"]
        q = self.tables["SFC"]["Ethernet0,Ethernet4|3-4"]
        return {
            "interval_us": int(g["min_interval_us"]),
            "dscp": int(g["signal_dscp"]),
            "threshold": int(q["threshold"]),
            "target": int(q["target"]),
        }

    def copp_arp(self) -> tuple[int, int]:
        g = self.tables["COPP_GROUP"]["queue4_group2"]
        return int(g["cir"]), int(g["cbs"])


def outcome_of(test: object, result: Any) -> tuple[str, str]:
    """("pass" | "fail" | "error" | "skip", why) of `test` in a unittest result: what the runner
    needs to tell a behavioural failure (an assertion) from a broken test (an exception)."""
    for kind, entries in (
        ("fail", result.failures),
        ("error", result.errors),
        ("skip", result.skipped),
    ):
        for case, detail in entries:
            if case is test:
                return kind, _first_line(kind, detail)
    return "pass", ""


def _first_line(kind: str, detail: str) -> str:
    if kind == "skip":
        return detail
    if kind == "fail" and "AssertionError: " in detail:
        line = detail.rsplit("AssertionError: ", 1)[1].strip().splitlines()[0]
        return line.removeprefix("False is not true : ")  # assertTrue's prefix says nothing
    lines = [line for line in detail.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


class LosslessTest(BaseTest):
    """setUp flushes the dataplane and opens a P4Runtime session as primary."""

    def run(self, result: Any = None) -> Any:
        """unittest's run, then this test's outcome appended to the runner's outcomes file
        (JSON lines), from which it counts passes and checks expected failures."""
        if result is None:
            result = self.defaultTestResult()
        super().run(result)  # PTF's BaseTest.run returns nothing
        path = test_params_get().get("outcomes")
        if path:
            kind, why = outcome_of(self, result)
            with open(path, "a") as out:
                out.write(json.dumps({"test": str(self), "outcome": kind, "why": why}) + "\n")
        return result

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.params = test_params_get()
        self.target = self.params.get("target", "p4-switch")
        self.cfg = SuiteConfig(self.params["config"])
        self._client = None
        self._index = None
        if self.target == "bmv2" and (reason := bmv2_limit(str(self))):
            self.skipTest(f"bmv2: {reason}")

    def tearDown(self) -> None:
        if self._client is not None:
            self._client.close()
        BaseTest.tearDown(self)

    # --- the runtime CLI (bmv2's Thrift CLI; p4-switch's --thrift-port) ----------------------

    def runtime_cli(self, command: str) -> str:
        """What `simple_switch_CLI` prints for one command (without its banner and prompts)."""
        cli = self.params.get("runtime_cli")
        if not cli:
            self.fail("the runner gave no runtime CLI command line (runtime_cli)")
        proc = subprocess.run(cli, input=command + "\n", capture_output=True, text=True, timeout=30)
        # Banner, then "RuntimeCmd: " before each command read and once more at EOF.
        parts = proc.stdout.split("RuntimeCmd: ")
        if proc.returncode != 0 or len(parts) < 3:
            self.fail(
                f"simple_switch_CLI `{command}`: exit status {proc.returncode}, "
                f"{(proc.stdout + proc.stderr).strip()[-500:]}"
            )
        return parts[1]

    # --- P4Runtime ------------------------------------------------------------------------

    def open_session(self) -> None:
        """Become primary now, e.g. before sending what will be punted, so no PacketIn is lost."""
        _ = self.client

    @property
    def client(self) -> Any:
        if self._client is None:
            from lossless_ctl.client import P4RuntimeClient

            self._client = P4RuntimeClient(
                self.params["grpc_addr"], election_id=(0, next(_session_election_ids))
            )
            self._client.arbitrate()
        return self._client

    def _object(self, kind: str, name: str) -> Any:
        if self._index is None:
            self._index = {}
            info = self.client.p4info()
            for k in ("counters", "registers", "meters"):
                for obj in getattr(info, k):
                    full = obj.preamble.name
                    self._index[(k, full)] = obj
                    self._index.setdefault((k, full.rsplit(".", 1)[-1]), obj)
        obj = self._index.get((kind, name))
        if obj is None:
            raise AssertionError(f"the switch's P4Info has no {kind[:-1]} {name!r}")
        return obj

    def counter(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of counter `name` at `index`."""
        pb = self.client.pb
        entity = pb.Entity()
        entity.counter_entry.counter_id = self._object("counters", name).preamble.id
        entity.counter_entry.index.index = index
        for e in self.client.read([entity]):
            d = e.counter_entry.data
            return d.packet_count, d.byte_count
        raise AssertionError(f"counter {name}[{index}] not returned by the switch")

    def counters(self, name: str, indexes: list[int]) -> dict[int, int]:
        return {i: self.counter(name, i)[0] for i in indexes}

    def register_write(self, name: str, index: int, value: int) -> None:
        """Over P4Runtime, or on bmv2 (whose P4Runtime server answers `UNIMPLEMENTED: Register
        writes are not supported yet`) through its runtime CLI."""
        if self.target == "bmv2":
            said = self.runtime_cli(f"register_write {name} {index} {value}")
            if said.strip():
                raise AssertionError(f"register {name}[{index}] = {value}: {said.strip()}")
            return
        pb = self.client.pb
        reg = self._object("registers", name)
        width = reg.type_spec.bitstring.bit.bitwidth
        update = pb.Update(type=pb.Update.MODIFY)
        update.entity.register_entry.register_id = reg.preamble.id
        update.entity.register_entry.index.index = index
        if not 0 <= value < 1 << width:
            raise ValueError(f"{value} does not fit register {name} ({width} bits)")
        # P4Runtime's canonical form: no leading zero bytes.
        data = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
        update.entity.register_entry.data.bitstring = data
        result = self.client.write([update])
        if result.errors:
            e = result.errors[0]
            raise AssertionError(f"register {name}[{index}] = {value}: {e.code}: {e.message}")

    def register_read(self, name: str, index: int) -> int:
        pb = self.client.pb
        entity = pb.Entity()
        entity.register_entry.register_id = self._object("registers", name).preamble.id
        entity.register_entry.index.index = index
        for e in self.client.read([entity]):
            return int.from_bytes(e.register_entry.data.bitstring, "big")
        raise AssertionError(f"register {name}[{index}] not returned by the switch")

    # --- the switch's statistics (p4-switch's --stats-addr) ------------------------------

    def switch_stats(self) -> dict[str, Any]:
        """p4-switch's `GET /stats` (`{"switch", "engine", "tm"}`, p4-switch's README)."""
        url = self.params.get("stats_url")
        if not url:
            self.fail("the runner gave no statistics endpoint (stats_url) for this switch")
        with urllib.request.urlopen(f"{url}/stats", timeout=5) as reply:
            return json.loads(reply.read())

    def tm_port(self, port: int) -> dict[str, Any]:
        """The traffic manager's statistics of `port` (switch-tm's PortStats)."""
        tm = self.switch_stats()["tm"]
        if tm is None:
            self.fail("the switch runs without a traffic manager (no --port-config)")
        for p in tm["ports"]:
            if p["port"] == port:
                return p
        self.fail(f"the traffic manager has no port {port}")
        raise AssertionError  # unreachable: fail() raises

    def wait_paused(
        self, port: int, queues: list[int] | None, what: str, timeout: float = 2.0
    ) -> None:
        """Until the switch reports `queues` of `port` (None: all, for 802.3x PAUSE) paused.
        A PAUSE/PFC frame sent into `port` and data sent into another port reach the switch's
        dataplane in no set order (each port has its own receive thread), so a test that
        needs the pause in place before its data must see it take effect first."""
        deadline = time.monotonic() + timeout
        while True:
            p = self.tm_port(port)
            paused = sorted(q["queue"] for q in p["queues"] if q["paused"])
            wanted = queues if queues is not None else [q["queue"] for q in p["queues"]]
            if set(wanted) <= set(paused):
                return
            if time.monotonic() > deadline:
                self.fail(
                    f"{what}: port {port} queue(s) {wanted} not paused {timeout} s after the "
                    f"frame (paused: {paused or 'none'}; received PFC per priority "
                    f"{p['pfc_rx']}, PAUSE {p['pause_rx']})"
                )
            time.sleep(0.01)

    def wait_queued(self, port: int, packets: int, what: str, timeout: float = 2.0) -> None:
        """Until `packets` packets wait in `port`'s queues: data sent into other ports arrives
        in no set order with a release frame sent into `port`."""
        deadline = time.monotonic() + timeout
        while True:
            p = self.tm_port(port)
            depth = {q["queue"]: q["depth_packets"] for q in p["queues"] if q["depth_packets"]}
            if sum(depth.values()) >= packets:
                return
            if time.monotonic() > deadline:
                self.fail(
                    f"{what}: {packets} packet(s) expected queued on port {port} within "
                    f"{timeout} s, queued by queue: {depth or 'none'}"
                )
            time.sleep(0.01)

    # --- packets --------------------------------------------------------------------------

    def send(self, port: int, pkt: Any, count: int = 1) -> None:
        frame = bytes(pkt)
        for _ in range(count):
            self.dataplane.send(0, port, frame)

    def receive(self, port: int | None = None, timeout: float = 1.0) -> tuple[int, bytes] | None:
        """The next frame (on `port`, or any port), or None after `timeout` seconds."""
        result = self.dataplane.poll(device_number=0, port_number=port, timeout=timeout)
        if isinstance(result, self.dataplane.PollFailure):
            return None
        return result.port, bytes(result.packet)

    def drain(self, quiet: float = 0.3, limit: float = 30.0) -> list[tuple[int, bytes]]:
        """Every frame that arrives until none has for `quiet` seconds."""
        out = []
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            got = self.receive(timeout=quiet)
            if got is None:
                break
            out.append(got)
        return out

    def expect(self, port: int, expected: Any, what: str, timeout: float = 2.0) -> bytes:
        """Wait for exactly `expected` on `port`; on failure say what arrived instead, nearest
        miss first, field by field."""
        want = bytes(expected)
        seen: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            got = self.receive(timeout=left)
            if got is None:
                break
            if got == (port, want):
                return want
            seen.append(got)
        self.fail(self._explain(f"{what}: expected on port {port}", port, want, seen))
        raise AssertionError  # unreachable: fail() raises

    def _explain(self, head: str, port: int, want: bytes, seen: list[tuple[int, bytes]]) -> str:
        lines = [f"{head} ({len(want)} bytes): {want.hex()}"]
        if not seen:
            lines.append("nothing arrived on any port")
            return "\n".join(lines)
        lines.append(
            f"{len(seen)} other frame(s) arrived: "
            + ", ".join(f"port {p} ({len(f)} B)" for p, f in seen[:10])
        )
        on_port = [f for p, f in seen if p == port]
        best = nearest(want, on_port) or nearest(want, [f for _, f in seen])
        if best is not None:
            where = port if best in on_port else next(p for p, f in seen if f == best)
            lines.append(f"nearest miss, on port {where}:")
            lines.append(describe_difference(want, best))
        return "\n".join(lines)

    def expect_nothing(self, what: str, timeout: float = 0.5) -> None:
        got = self.receive(timeout=timeout)
        if got is not None:
            self.fail(f"{what}: expected no frame, got {len(got[1])} bytes on port {got[0]}: "
                      f"{got[1][:64].hex()}")  # fmt: skip
