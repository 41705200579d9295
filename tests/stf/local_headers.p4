// Local headers, header unions and stacks declared without an initialiser are invalid
// (P4_16 8.22), in a parser, a control, and each time a loop's body declares one again.
// p4-midend's local-headers pass invalidates them where they are declared, and the lowering
// makes them header instances that are not metadata, as p4c does (its JSON has a
// `remove_header` for each and `"metadata": false`). Each byte of o says whether something
// was valid, so every expectation is 0 except e (a local made valid) and g (the loop ran).
#include <core.p4>
#include <v1model.p4>
header o_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; bit<8> g; }
header h_t { bit<16> data; }
header h2_t { bit<32> data; }
header_union U { h_t h1; h2_t h2; }
struct H { o_t o; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    h_t pl;
    state start {
        pk.extract(hdr.o);
        transition select(pl.isValid()) {
            true: seen;
            default: accept;
        }
    }
    state seen {
        hdr.o.f = 1;
        transition accept;
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    h_t h;
    U u;
    h_t[2] s;
    h_t v;
    apply {
        hdr.o.a = h.isValid() ? 8w1 : 8w0;
        hdr.o.b = u.isValid() ? 8w1 : 8w0;
        hdr.o.c = s[0].isValid() || s[1].isValid() ? 8w1 : 8w0;
        // Declared again in each iteration: invalid every time, though the previous
        // iteration made it valid.
        for (bit<8> k = 0; k < 2; k = k + 1) {
            h_t t;
            if (t.isValid()) {
                hdr.o.d = hdr.o.d + 1;
            }
            t.setValid();
            hdr.o.g = hdr.o.g + 1;
        }
        v.setValid();
        hdr.o.e = v.isValid() ? 8w1 : 8w0;
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.o); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
