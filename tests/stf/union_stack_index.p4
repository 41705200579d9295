// A run-time index into a stack of header unions (`u[i]`), which bmv2 cannot index: p4-midend's
// union-stack-index makes one copy of the statement per element, guarded by `i == k`, as p4c's
// HSIndexSimplifier does; an index out of range does nothing.
#include <core.p4>
#include <v1model.p4>
header i_t { bit<8> i; }
header o_t { bit<8> a; bit<8> b; bit<8> d; bit<8> e; bit<16> c; }
header h1_t { bit<32> data; }
header h2_t { bit<16> data; }
header_union U { h1_t h1; h2_t h2; }
struct H { i_t i; o_t o; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.i);
        pk.extract(hdr.o);
        transition accept;
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    U[2] u;
    U[2] w;
    apply {
        // The locals start invalid (P4_16 8.22; p4-midend's local-headers).
        u[0].h1.setValid();
        u[0].h1.data = 1;
        u[1].h1.setValid();
        u[1].h1.data = 2;
        // Valid h2 at u[i]; its h1 becomes invalid (union members exclude each other).
        u[hdr.i.i].h2.setValid();
        u[hdr.i.i].h2.data = 0xbeef;
        w[1] = u[hdr.i.i];
        hdr.o.a = u[0].h2.isValid() ? 8w1 : 8w0;
        hdr.o.b = u[1].h2.isValid() ? 8w1 : 8w0;
        hdr.o.d = u[0].h1.isValid() ? 8w1 : 8w0;
        hdr.o.e = w[1].h2.isValid() ? 8w1 : 8w0;
        if (u[0].h2.isValid()) {
            hdr.o.c = u[0].h2.data;
        } else if (u[1].h2.isValid()) {
            hdr.o.c = u[1].h2.data;
        }
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.i); pk.emit(hdr.o); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
