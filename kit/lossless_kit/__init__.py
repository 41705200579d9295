"""The lab kit: what starts and measures switches around the controller (lossless_ctl), for
the lab (lossless_topo), the PTF harness, the tests and the benchmarks. It imports the
controller; the controller never imports it."""
