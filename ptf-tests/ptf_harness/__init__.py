"""The PTF harness of lossless-lab: namespaces and veths, the switch process, programming."""
