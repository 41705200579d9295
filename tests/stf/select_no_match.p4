// A select without `default`: a key that no case matches raises error.NoMatch (P4_16 spec,
// parser select), which p4c's bmv2 JSON gets from an added default transition; a transition
// to `reject` leaves parser_error as bmv2 has it, NoError. Ingress sends each packet to a port
// that tells which error it saw; headers extracted before the error are still emitted.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> f; }
header g_t { bit<8> v; }
struct headers { h_t h; g_t g; }
struct meta_t {}

parser P(packet_in pk, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.f) {
            1: accept;
            2: reject;
            3: second;
        }
    }
    state second {
        pk.extract(hdr.g);
        transition select(hdr.g.v[7:4], hdr.g.v[3:0]) {
            (0xa, _): accept;
        }
    }
}

control V(inout headers h, inout meta_t m) { apply {} }

control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoMatch) {
            sm.egress_spec = 5;
        } else if (sm.parser_error == error.NoError) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 7;
        }
    }
}

control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control C(inout headers h, inout meta_t m) { apply {} }
control D(packet_out p, in headers h) { apply { p.emit(h.h); p.emit(h.g); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
