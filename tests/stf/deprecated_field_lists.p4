// clone3/resubmit/recirculate with a data argument (v1model's deprecated forms): the listed
// metadata fields survive into the copy, the others are reset.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct H { h_t h; }
struct M { bit<8> mark; bit<8> other; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.instance_type == 6) {
            // Resubmitted: `mark` was preserved, `other` was not.
            hdr.h.b = m.mark;
            hdr.h.c = m.other;
        } else if (hdr.h.a == 1) {
            m.mark = 0x5a;
            m.other = 0xee;
            resubmit({ m.mark });
        } else if (hdr.h.a == 2) {
            m.mark = 0x6b;
            m.other = 0xee;
            clone3(CloneType.I2E, 32w5, { m.mark });
        }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            hdr.h.d = m.mark;
        }
    }
}
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
