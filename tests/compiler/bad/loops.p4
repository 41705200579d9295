// Loops (P4_16 1.2.5): `break` and `continue` only inside one, a boolean condition, and the
// loop's own names are its own.
#include <core.p4>
header h_t { bit<8> a; }
action outside(inout h_t h) {
    break;
}
action cont(inout h_t h) {
    if (h.a == 0) {
        continue;
    }
}
action cond(inout h_t h) {
    for (bit<8> i = 0; i; i = i + 1) { }
}
action scope(inout h_t h) {
    for (bit<8> i = 0; i < 4; i = i + 1) { }
    h.a = i;
}
action range(inout h_t h) {
    for (bit<8> i in 0 .. true) { }
}
