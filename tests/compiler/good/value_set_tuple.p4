// Value sets as parts of tuple keysets: each is looked up on its own key part, in case order,
// and a select that nothing matches still fails with error.NoMatch.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> tag; }
struct H { h_t h; }
struct M { }
// The controller sees each field's `@match`; bmv2 matches value sets exactly.
struct pair_t { @match(ternary) bit<8> c; @match(lpm) bit<8> b; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) vs;
    value_set<bit<8>>(4) vs2;
    value_set<pair_t>(2) pairs;
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b) {
            (vs, 1): one;
            (0x10, _): two;
            (vs, vs2): three;
            (0x20, _): last;
            (0x30, _): by_pair;
            default: four;
        }
    }
    state last {
        transition select(hdr.h.c, hdr.h.b) {
            (vs2, 0x20): five;
        }
    }
    state by_pair {
        transition select(hdr.h.c, hdr.h.b) {
            pairs: five;
            default: four;
        }
    }
    state one { hdr.h.tag = 1; transition accept; }
    state two { hdr.h.tag = 2; transition accept; }
    state three { hdr.h.tag = 3; transition accept; }
    state four { hdr.h.tag = 4; transition accept; }
    state five { hdr.h.tag = 5; transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.NoMatch) {
            hdr.h.tag = 0xee;
        }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
