// Action profiles and selectors constructed in the `implementation` property (p4c's
// action_profile-bmv2 program shape): indirect tables with their own profiles; with no
// member installed a lookup misses and the pipeline continues.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { bit<32> hash1; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control I(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action set_b(bit<8> v) { hdr.h.b = v; }
    table indirect {
        key = { hdr.h.a: exact; }
        actions = { drop; set_b; NoAction; }
        @name("ap") implementation = action_profile(32w128);
    }
    table indirect_ws {
        key = { hdr.h.a: exact; meta.hash1 : selector; }
        actions = { drop; set_b; NoAction; }
        implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);
    }
    apply {
        sm.egress_spec = 1;
        indirect.apply();
        indirect_ws.apply();
        hdr.h.a = hdr.h.a + 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
