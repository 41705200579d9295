// A table's hit/miss inside expressions: under `?:`, `||`, `&&`, `!` and as a function
// argument; the table is applied only when the operator evaluates that operand.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> sel; bit<8> r1; bit<8> r2; bit<8> hits; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
bit<8> twice(in bit<8> x) { return x + x; }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action count1() { hdr.h.hits = hdr.h.hits + 1; }
    action count2() { hdr.h.hits = hdr.h.hits + 0x10; }
    table t1 { key = { hdr.h.k: exact; } actions = { count1; NoAction; } }
    table t2 { key = { hdr.h.k: exact; } actions = { count2; NoAction; } }
    apply {
        sm.egress_spec = 1;
        // t1 applied only when sel != 1.
        bool either = hdr.h.sel == 1 || t1.apply().hit;
        hdr.h.r1 = either ? 8w1 : 8w0;
        // t2 applied only when sel == 2.
        hdr.h.r2 = twice(hdr.h.sel == 2 ? (!t2.apply().miss ? 8w3 : 8w4) : 8w5);
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
