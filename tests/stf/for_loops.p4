// For loops (P4_16 1.2.5) in actions, functions and apply blocks: `in` over a range that ends
// at the type's largest value, a stack's elements by index with `continue`, `break`, a
// `return` inside a loop, several init and update clauses, and a call in the condition (run
// once per test).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
header v_t { bit<8> v; }
struct H { h_t h; v_t[3] s; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        pk.extract(hdr.s.next);
        pk.extract(hdr.s.next);
        pk.extract(hdr.s.next);
        transition accept;
    }
}

// The first i of 1..n with i * i >= x, else 0.
bit<8> first_square_at_least(in bit<8> x, in bit<8> n) {
    for (bit<8> i in 1 .. n) {
        if (i * i >= x) {
            return i;
        }
    }
    return 0;
}

bit<8> bump(inout bit<8> k) {
    k = k + 1;
    return k;
}

control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action sums() {
        bit<16> total = 0;
        for (bit<8> i in 0 .. 255) {
            total = total + (bit<16>)i;
        }
        hdr.h.a = total[15:8];
        bit<8> s = 0;
        for (bit<32> j = 0; j < 3; j = j + 1) {
            if (hdr.s[j].v == 0) {
                continue;
            }
            s = s + hdr.s[j].v;
        }
        hdr.h.b = s;
    }
    apply {
        sums();
        hdr.h.c = first_square_at_least(hdr.h.n, 15);
        bit<8> k = 0;
        bit<8> x;
        bit<8> y;
        for (x = 0, y = 10; bump(k) < 6; x = x + 1, y = y - 1) {
            if (x == 3) {
                break;
            }
        }
        hdr.h.d = y << 4 | x;
        hdr.h.e = k;
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.s); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
