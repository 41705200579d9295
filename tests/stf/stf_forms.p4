// STF forms p4c's runner accepts: priority 0, packet data with an odd number of hex digits,
// `packet N` with no data, and output to a port no `packet`/`expect` names (not judged).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> v; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action set(bit<8> v, bit<9> port) { hdr.h.v = v; sm.egress_spec = port; }
    table t { key = { hdr.h.k: ternary; } actions = { set; } default_action = set(0xee, 7); }
    apply { t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
