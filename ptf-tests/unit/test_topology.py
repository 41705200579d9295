"""Namespaces and veths: created, named as documented, IPv6 off on test ports, removed, and a
stale topology of the same prefix replaced."""

import os
import subprocess

from ptf_harness.topology import MTU, PTF_MGMT_IP, Topology


def links(ns):
    out = subprocess.run(["ip", "-n", ns, "-o", "link"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0]: line for line in out.splitlines()}


def test_up_and_down():
    topo = Topology(ports=3, prefix=f"lltp{os.getpid() % 10000}")
    topo.up()
    try:
        sw, ptf = links(topo.switch_ns), links(topo.ptf_ns)
        assert {"sw1", "sw2", "sw3", "swm"} <= set(sw)
        assert {"h1", "h2", "h3", "hm"} <= set(ptf)
        assert f"mtu {MTU}" in ptf["h2"] and "UP" in ptf["h2"]
        addrs = subprocess.run(
            ["ip", "-n", topo.ptf_ns, "-o", "addr", "show", "h1"], capture_output=True, text=True
        ).stdout
        assert "inet6" not in addrs, "IPv6 must be off on test ports (no RS/MLD noise)"
        mgmt = subprocess.run(
            ["ip", "-n", topo.ptf_ns, "-o", "addr", "show", "hm"], capture_output=True, text=True
        ).stdout
        assert PTF_MGMT_IP in mgmt
        topo.up()  # a stale topology of the same prefix is replaced, not an error
        assert {"h1", "h2", "h3"} <= set(links(topo.ptf_ns))
    finally:
        topo.down()
    assert not topo.exists()
