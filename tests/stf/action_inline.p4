// Direct calls inside actions, inlined by the midend's `inline` pass: an action calling an
// action with `inout` arguments that alias and a directionless argument (constant or not), a
// function with an early `return` called from an action, an action's `return` inside an
// action, and `exit` after a nested call (copy-outs innermost first). Expected bytes in
// action_inline.stf follow from the P4_16 specification's copy-in/copy-out rules.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
bit<8> clamp(in bit<8> v, in bit<8> hi) {
    if (v > hi) {
        return hi;
    }
    return v + 1;
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action add(inout bit<8> x, bit<8> k) { x = x + k; }
    action twice(inout bit<8> x, inout bit<8> y) { add(x, 1); add(y, x); }
    action clamp_bc() {
        hdr.h.b = clamp(hdr.h.b, 0x10);
        hdr.h.c = clamp(hdr.h.c, hdr.h.a);
    }
    action twice_exit(inout bit<8> x) { twice(x, x); exit; }
    action early(inout bit<8> x) {
        if (x == 0) {
            return;
        }
        x = x - 1;
    }
    action dec2() { early(hdr.h.b); early(hdr.h.b); }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            twice(hdr.h.a, hdr.h.b);
        } else if (hdr.h.op == 2) {
            twice(hdr.h.a, hdr.h.a);
        } else if (hdr.h.op == 3) {
            clamp_bc();
        } else if (hdr.h.op == 4) {
            twice_exit(hdr.h.a);
        } else if (hdr.h.op == 5) {
            dec2();
        }
        hdr.h.c = hdr.h.c | 0x80;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
