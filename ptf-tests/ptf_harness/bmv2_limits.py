"""The tests that cannot run against bmv2's simple_switch_grpc, each for a limit of bmv2 (not of
our pipeline), with the reason. `LosslessTest.setUp` skips exactly these when the target is
bmv2, and nothing against p4-switch; ptf-tests/README.md lists them.

A key is a module (all its tests) or one `module.Class`.
"""

from __future__ import annotations

# Why a rate-limited queue cannot stand in for a held one: bmv2's queueing
# (bm_sim/queueing.h, QueueingLogicPriRL) gives each packet its departure time when it is
# queued (max(now, previous + 1 / rate), the rate in whole packets per second), and the first
# packet into an idle queue leaves at once. `set_queue_rate` changes only later packets, so a
# queue can be slowed but never held and then released on time.
_NO_HOLD = (
    "bmv2's traffic manager does not act on received PFC or 802.3x PAUSE frames, so {what}; "
    "set_queue_rate cannot stand in, because bmv2 fixes each packet's departure time when it "
    "is queued (at 1 packet/s at the slowest) and never releases a slowed queue early"
)

BMV2_LIMITS: dict[str, str] = {
    "pfc": _NO_HOLD.format(
        what="the tests cannot hold an egress queue to build PG occupancy (XOFF, headroom, "
        "XON, refresh, lossy threshold) nor check PFC reception and the PFC watchdog"
    ),
    "qos": _NO_HOLD.format(
        what="one packet per class cannot be held on port 3 to show strict-priority order"
    ),
    "counters": "bmv2 has no port or traffic-manager statistics endpoint (p4-switch's /stats)",
}


def bmv2_limit(test: str) -> str | None:
    """Why `test` (`module.Class`) cannot run against bmv2, or None when it can."""
    return BMV2_LIMITS.get(test) or BMV2_LIMITS.get(test.split(".", 1)[0])
