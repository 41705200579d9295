// Constructor arguments given in the V1Switch instantiation itself (`P(8w3)`, `I(true)`)
// bind the blocks' constructor parameters, as they do for a declared instance, also as a
// select key (a constant there, which goes through a field as bmv2 needs).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm)(bit<8> add) {
    state start {
        pk.extract(hdr.h);
        hdr.h.a = hdr.h.a + add;
        transition select(add) {
            3: more;
            default: accept;
        }
    }
    state more {
        hdr.h.b = hdr.h.b + 1;
        transition accept;
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm)(bool swap) {
    apply {
        if (swap) {
            bit<8> t = hdr.h.a;
            hdr.h.a = hdr.h.b;
            hdr.h.b = t;
        }
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(8w3), V(), I(true), E(), C(), D()) main;
