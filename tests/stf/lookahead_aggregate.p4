// `pkt.lookahead<T>()` of a struct holding a scalar, a header and a header stack: each field
// from its own bits ahead in declaration order; nothing is consumed.
#include <core.p4>
#include <v1model.p4>
header b_t { bit<8> v; }
header p_t { bit<4> hi; bit<4> lo; }
struct ahead_t { bit<8> first; p_t pair; b_t[2] rest; }
struct H { b_t[4] s; }
struct M { bit<8> first; bit<8> pair; bit<8> last; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        ahead_t a = pk.lookahead<ahead_t>();
        m.first = a.first;
        m.pair = (bit<8>)a.pair.hi + (bit<8>)a.pair.lo;
        m.last = a.rest[1].v;
        transition select(a.rest[0].v) {
            1: one;
            default: accept;
        }
    }
    state one {
        pk.extract(hdr.s.next);
        transition accept;
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        hdr.s[3].setValid();
        hdr.s[3].v = m.first + m.pair + m.last;
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.s); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
