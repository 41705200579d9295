// Compound assignment (P4_16 1.2.4: `a op= b` is `a = a op b`, `a` evaluated once) for every
// operator, and `/` and `%` on run-time values by a power of two, which p4c reduces to `>>`
// and `&` (no run-time division on the target), with `0 / x` and `0 % x` as 0 that still
// evaluate `x`. Expected bytes in opassign_div.stf follow from the operators' definitions on
// bit<8>.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
bit<8> bump(inout bit<8> x) {
    x = x + 1;
    return x;
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            hdr.h.a += hdr.h.b;
            hdr.h.b -= 3;
            hdr.h.c *= 3;
        } else if (hdr.h.op == 2) {
            hdr.h.a &= 0x0f;
            hdr.h.b |= 0x80;
            hdr.h.c ^= 0xff;
        } else if (hdr.h.op == 3) {
            hdr.h.a <<= 2;
            hdr.h.b >>= 3;
            hdr.h.c |+|= 0xf0;
        } else if (hdr.h.op == 4) {
            hdr.h.a |-|= 0x10;
            hdr.h.b /= 4;
            hdr.h.c %= 8;
        } else if (hdr.h.op == 5) {
            hdr.h.a = hdr.h.b / 16 + hdr.h.c % 16;
            hdr.h.b = hdr.h.b / 1;
        } else if (hdr.h.op == 6) {
            hdr.h.a = 8w0 / bump(hdr.h.c);
            hdr.h.b = 8w0 % bump(hdr.h.c);
        }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
