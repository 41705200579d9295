/* Name resolution errors: each is reported once, at the name. */
#include <core.p4>

header h_t { bit<8> a; bit<8> a; }
struct s_t { h_t h; undeclared_t x; }
enum Color { Red, Green }
const bit<8> C1 = 1;
const bit<8> C1 = 2;

control C(inout s_t s) {
    action a1() { s.h.a = missing; }
    apply {
        Color c = Color.Blue;
        error e = error.NoSuchError;
        s.h.nofield = 1;
        .a1();
        bit<8> v = C1;
        bit<8> v = 2;
    }
}

parser P(packet_in pkt, out s_t s) {
    state start {
        transition nowhere;
    }
    state start {
        transition accept;
    }
}
