// setValid/setInvalid of a header stack element at an index known only at run time: bmv2's
// add_header/remove_header of a `dereference_header_stack` expression, as p4c writes them.
#include <core.p4>
#include <v1model.p4>
header i_t { bit<8> on; bit<8> off; }
header v_t { bit<8> v; }
struct H { i_t i; v_t[3] s; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.i);
        pk.extract(hdr.s[0]);
        transition accept;
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        hdr.s[hdr.i.off].setInvalid();
        hdr.s[hdr.i.on].setValid();
        hdr.s[hdr.i.on].v = 0xa0 + hdr.i.on;
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.i); pk.emit(hdr.s); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
