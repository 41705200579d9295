// `exit` performs the copy-out of every inlined action and sub-control it leaves (P4_16
// spec, `exit` statement; p4c's gauntlet_exit_combination tests).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control Sub(inout bit<8> x, in bit<8> op) {
    action set_and_exit(inout bit<8> v) { v = 0x33; exit; }
    apply {
        x = 0x22;
        if (op == 3) { exit; }
        if (op == 4) { set_and_exit(x); }
        x = 0x44;
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Sub() sub;
    action inner(inout bit<8> v) { v = 0x11; exit; }
    action outer(inout bit<8> w) { w = 0x10; inner(w); w = 0xff; }
    table t {
        key = { hdr.h.op: exact; }
        actions = { outer(hdr.h.b); NoAction; }
        const entries = { 2 : outer(hdr.h.b); }
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) { outer(hdr.h.a); }
        t.apply();
        sub.apply(hdr.h.c, hdr.h.op);
        hdr.h.a = 0xee;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
