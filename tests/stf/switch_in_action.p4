// `switch` on a value inside an action: first matching label, shared bodies, default.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action classify(inout bit<8> x) {
        switch (hdr.h.a) {
            1: { x = 0x10; }
            2:
            3: { x = 0x23; hdr.h.a = 0; }
            default: { x = 0xff; }
        }
        sm.egress_spec = 1;
    }
    apply { classify(hdr.h.b); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
