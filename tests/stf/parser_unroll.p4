// A parser loop that extracts into a header stack by a variable index (`s[i]`), which bmv2
// cannot do: p4-midend's parser-unroll copies the loop's state once per value of i, as p4c's
// ParserUnroll does (compare p4c's JSON of p4_16_samples/parser-unroll-test1.p4), so each copy
// extracts into s[0], s[1], s[2]; a fourth iteration raises error.StackOutOfBounds.
#include <core.p4>
#include <v1model.p4>
header e_t { bit<16> type; }
header route_t { bit<1> bos; bit<15> port; }
struct H { e_t e; route_t[3] s; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    bit<8> i;
    state start {
        i = 0;
        pk.extract(hdr.e);
        transition routes;
    }
    state routes {
        pk.extract(hdr.s[i]);
        i = i + 1;
        hdr.s[i - 1].port = hdr.s[i - 1].port + 1;
        transition select(hdr.s[i - 1].bos) {
            1: accept;
            default: routes;
        }
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.e.type = 0xeeee;
        }
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.e); pk.emit(hdr.s); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
