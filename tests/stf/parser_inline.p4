/* Parser lowering: `if` inside a state (split into states on a select of the condition) and a
 * sub-parser applied from a state (its states inlined, accept continuing in the caller). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> v; }
header o_t { bit<8> x; }
struct headers { h_t h; o_t o; }
struct meta_t { bit<8> unused; }

parser Sub(packet_in pkt, inout headers hdr) {
    state start {
        pkt.extract(hdr.o);
        hdr.o.x = hdr.o.x + 1;
        transition accept;
    }
}

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    Sub() sub;
    state start {
        pkt.extract(hdr.h);
        if (hdr.h.k == 1) {
            sub.apply(pkt, hdr);
            hdr.h.v = 0xAA;
        } else {
            hdr.h.v = 0xBB;
        }
        transition accept;
    }
}

control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.o);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
