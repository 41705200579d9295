"""SAI objects -> the switch's port configuration (toolchain/switch-tm/README.md).

Port rate and MTU, queue scheduling and limits, PFC reception (which priorities pause which
queue) and the PFC watchdog are the traffic manager's, not the P4 pipeline's, so they go into
the file p4-switch reads with `--port-config`, or to a running switch's port configuration
interface (`PUT /ports/N` on its statistics endpoint). Written as JSON (the traffic manager
reads JSON for a `.json` name); every field is one the README documents.
"""

from __future__ import annotations

import json
from typing import Any

from lossless_ctl.chips import Chip
from lossless_ctl.sai import (
    NULL,
    PFC_REFRESH_APP,
    PKTGEN_PORT,
    PORT_MTU_OVERHEAD,
    SaiModel,
    half_pause_ns,
    lossless_pgs,
)
from lossless_ctl.switch_http import StatsError, request


def tm_config(model: SaiModel, chip: Chip | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    egress_pools = [
        p["SAI_BUFFER_POOL_ATTR_SIZE"]
        for p in model.of_type("BUFFER_POOL")
        if p["SAI_BUFFER_POOL_ATTR_TYPE"] == "SAI_BUFFER_POOL_TYPE_EGRESS"
    ]
    if egress_pools:
        # SONiC's egress pools are views of one service pool; the largest is its size.
        buffer: dict[str, Any] = {"total_bytes": max(egress_pools)}
        if chip is not None:
            buffer["cell_bytes"] = chip.cell_bytes
        out["buffer"] = buffer
    poll = model["switch"]["SAI_SWITCH_ATTR_EXT_PFCWD_POLL_INTERVAL"]
    if poll is not None:
        out["pfcwd_poll_interval_ms"] = poll
    ports = []
    for port in model.of_type("PORT"):
        dev = port["SAI_PORT_ATTR_EXT_DEV_PORT"]
        if dev is None:
            continue
        entry: dict[str, Any] = {
            "port": dev,
            "rate_bps": port["SAI_PORT_ATTR_SPEED"] * 1_000_000,
            "mtu": port["SAI_PORT_ATTR_MTU"] - PORT_MTU_OVERHEAD,
        }
        pfc = port["SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL"]
        priorities = [p for p in range(8) if pfc >> p & 1]
        if priorities:
            entry["pfc_enable"] = priorities
            bound = port["SAI_PORT_ATTR_QOS_PFC_PRIORITY_TO_QUEUE_MAP"]
            # Without a map SAI pauses queue p for priority p.
            mapping = (
                dict(model[bound]["SAI_QOS_MAP_ATTR_MAP_TO_VALUE_LIST"]) if bound != NULL else {}
            )
            entry["pfc_to_queue"] = {str(p): mapping.get(p, p) for p in priorities}
        if port.get("SAI_PORT_ATTR_EXT_PFCWD_ACTION") is not None:
            entry["pfcwd"] = {
                "detection_time_ms": port["SAI_PORT_ATTR_EXT_PFCWD_DETECTION_TIME"],
                "restoration_time_ms": port["SAI_PORT_ATTR_EXT_PFCWD_RESTORATION_TIME"],
                "action": port["SAI_PORT_ATTR_EXT_PFCWD_ACTION"],
            }
        queues = []
        for queue in model.of_type("QUEUE"):
            if queue["SAI_QUEUE_ATTR_PORT"] != port.key:
                continue
            q: dict[str, Any] = {"queue": queue["SAI_QUEUE_ATTR_INDEX"]}
            sched_key = queue.get("SAI_QUEUE_ATTR_SCHEDULER_PROFILE_ID")
            if sched_key is not None:
                sched = model[sched_key]
                q["type"] = sched["SAI_SCHEDULER_ATTR_SCHEDULING_TYPE"].removeprefix(
                    "SAI_SCHEDULING_TYPE_"
                )
                if sched.get("SAI_SCHEDULER_ATTR_SCHEDULING_WEIGHT") is not None:
                    q["weight"] = sched["SAI_SCHEDULER_ATTR_SCHEDULING_WEIGHT"]
            prof_key = queue.get("SAI_QUEUE_ATTR_BUFFER_PROFILE_ID")
            if prof_key is not None:
                prof = model[prof_key]
                if prof.get("SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH") is not None:
                    q["dynamic_th"] = prof["SAI_BUFFER_PROFILE_ATTR_SHARED_DYNAMIC_TH"]
                elif prof.get("SAI_BUFFER_PROFILE_ATTR_SHARED_STATIC_TH"):
                    q["limit_bytes"] = prof["SAI_BUFFER_PROFILE_ATTR_SHARED_STATIC_TH"]
            if len(q) > 1:
                queues.append(q)
        if queues:
            entry["queues"] = queues
        ports.append(entry)
    out["ports"] = ports
    pktgen = refresh_pktgen(model)
    if pktgen is not None:
        out["pktgen"] = pktgen
    return out


def refresh_pktgen(model: SaiModel) -> dict[str, Any] | None:
    """The switch's packet generator for the pipeline's timed PFC refresh (p4src/README.md):
    one packet per lossless PG (packet i for the i-th, as p4map writes `pfc_refresh`), fired
    every quarter pause of the fastest such port. The pipeline renews a PG on the first packet
    at least its refresh interval (half its pause, less 1 us) after the last XOFF, so on time
    the renewals come every second firing, half a pause apart, and a firing that comes late
    (a busy real-time dataplane) still leaves the next renewal within three quarters of a
    pause, before the sender's timer runs out. None without a lossless PG."""
    pgs = lossless_pgs(model)
    if not pgs:
        return None
    ports = [model[ipg["SAI_INGRESS_PRIORITY_GROUP_ATTR_PORT"]] for ipg in pgs]
    half = min(
        half_pause_ns(p["SAI_PORT_ATTR_EXT_PFC_QUANTA"], p["SAI_PORT_ATTR_SPEED"] * 1_000_000)
        for p in ports
    )
    app = {
        "app_id": PFC_REFRESH_APP,
        "period_ns": max(half // 2, 1),
        "batches": 1,
        "packets_per_batch": len(pgs),
    }
    return {"port": PKTGEN_PORT, "apps": [app]}


def push(stats_addr: str, config: dict[str, Any], timeout: float = 10.0) -> list[str]:
    """PUT every port of `config` (from tm_config) to the running switch; the problems, each
    naming its URL. Reapplying a port's configuration keeps its queued packets and counters,
    so the whole set is written each time, and the packet generator with them (`PUT /pktgen`,
    restarting its timer; `DELETE /pktgen` when there is none). The buffer size and the
    watchdog's poll interval are the switch's start-up settings (`--port-config`) and cannot
    change here."""
    problems = []
    for port in config["ports"]:
        try:
            request(stats_addr, f"/ports/{port['port']}", "PUT", json.dumps(port).encode(), timeout)
        except StatsError as err:
            problems.append(str(err))
    pktgen = config.get("pktgen")
    try:
        if pktgen is None:
            request(stats_addr, "/pktgen", "DELETE", timeout=timeout)
        else:
            request(stats_addr, "/pktgen", "PUT", json.dumps(pktgen).encode(), timeout)
    except StatsError as err:
        problems.append(str(err))
    return problems
