// A table key that applies another table (`sub.apply().hit: exact`): the other table is
// applied, and its hit computed, before each apply of the keyed one (p4c's issue2362).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action count() { hdr.h.c = hdr.h.c + 1; }
    action set_b(bit<8> v) { hdr.h.b = v; }
    table sub {
        key = { hdr.h.a: exact; }
        actions = { count; }
        default_action = count();
    }
    table keyed {
        key = { sub.apply().hit: exact @name("k"); }
        actions = { set_b; NoAction; }
        default_action = NoAction();
    }
    apply {
        keyed.apply();
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
