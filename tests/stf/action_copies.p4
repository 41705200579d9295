// One action in several tables, its `out` parameter bound differently in each: every copy keeps
// the action's name, so entries name it in any of the tables.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> x; bit<8> y; bit<8> z; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action set(out bit<8> dst, bit<8> v) { dst = v; }
    table tx { key = { hdr.h.k: exact; } actions = { set(hdr.h.x); NoAction; } }
    table ty { key = { hdr.h.k: exact; } actions = { set(hdr.h.y); NoAction; } }
    table tz { key = { hdr.h.k: exact; } actions = { set(hdr.h.z); NoAction; } }
    apply { sm.egress_spec = 1; tx.apply(); ty.apply(); tz.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
