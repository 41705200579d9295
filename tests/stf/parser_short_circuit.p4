/* `&&` and `||` with a function call on the right, in a parser state: the call (which counts in
 * its inout argument) runs only when the left operand does not decide the result (P4_16 spec,
 * 8.6: the right operand of && is evaluated only if the left is true, of || only if it is
 * false). `count` also returns early, and `k + (count(k, 1) ? ...)` reads k before the call
 * changes it (operands are evaluated left to right). A call in a branch of `?:` runs only when
 * that branch is chosen; a call as a select key runs once, before the transition. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> n_and;
    bit<8> r_and;
    bit<8> n_or;
    bit<8> r_or;
    bit<8> seq;
    bit<8> k;
    bit<8> t;
    bit<8> k2;
    bit<8> s;
}
struct headers { h_t h; }
struct meta_t { bit<8> unused; }

/* Adds 1 to c; when v is 0 returns false, else adds 0x10 more and returns true. */
bool count(inout bit<8> c, in bit<8> v) {
    c = c + 1;
    if (v == 0) {
        return false;
    }
    c = c + 0x10;
    return true;
}

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    bit<8> k3;
    state start {
        pkt.extract(hdr.h);
        bit<8> n = 0;
        bool r1 = hdr.h.a == 1 && count(n, hdr.h.b);
        hdr.h.n_and = n;
        hdr.h.r_and = r1 ? 8w1 : 8w0;
        bit<8> n2 = 0;
        bool r2 = hdr.h.a == 1 || count(n2, hdr.h.b);
        hdr.h.n_or = n2;
        hdr.h.r_or = r2 ? 8w1 : 8w0;
        bit<8> k = 0;
        hdr.h.seq = k + (count(k, 1) ? 8w0 : 8w0);
        hdr.h.k = k;
        bit<8> k2 = 0;
        hdr.h.t = hdr.h.a == 1 ? 8w0 : (count(k2, hdr.h.b) ? 8w1 : 8w2);
        hdr.h.k2 = k2;
        k3 = 0;
        transition select(count(k3, hdr.h.b)) {
            true: counted;
            default: accept;
        }
    }
    state counted {
        hdr.h.s = k3 + 0x80;
        transition accept;
    }
}

control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
