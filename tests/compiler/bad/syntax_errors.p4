#include <core.p4>

header h_t {
    bit<8> a
    bit<8> b;
}

control C(inout h_t h) {
    action a1() {
        h.a = ;
        h.b = 1;
    }
    apply {
        if (h.a == 1 {
            a1();
        }
        h.b = h.a +;
    }
}

const bit<8> X = 3 $ 4;
