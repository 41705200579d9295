// Sub-parsers and sub-controls with constructor arguments (compile-time constants, one
// instance per argument set); also p4c's older `table t()` form and a V1Switch block whose
// `inout` parameter is implemented as `in`, which p4c's test programs use.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct H { h_t h; }
struct M { }
parser Sub(packet_in pk, inout H hdr)(bit<8> mark) {
    state start { pk.extract(hdr.h); hdr.h.c = mark; transition accept; }
}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    Sub(8w0x77) sub;
    state start { sub.apply(pk, hdr); transition accept; }
}
control Add(inout bit<8> x)(bit<8> k) {
    action add() { x = x + k; }
    table t() { actions = { add; } const default_action = add(); }
    apply { t.apply(); }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Add(1) add1;
    Add(16) add16;
    apply { add1.apply(hdr.h.a); add16.apply(hdr.h.b); sm.egress_spec = 1; }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(in H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
