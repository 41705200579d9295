/* Type errors in expressions and assignments. */
#include <core.p4>

header h_t { bit<8> a; bit<16> b; int<8> c; bool f; }

control C(inout h_t h) {
    apply {
        h.a = h.b;                   // wrong width
        h.a = h.a + h.b;             // operands of different widths
        h.c = h.a;                   // sign differs
        h.f = (bool)h.a;             // only bit<1> casts to bool
        h.b = (bit<16>)h.c;          // int<8> to bit<16> changes sign and width
        h.a = h.b[8:1];              // slice width is 8: fine
        h.a = h.b[16:9];             // out of range
        h.a = h.b[3:4];              // high below low
        h.a = h.b[h.a:0];            // bounds not constant
        h.a = h.a << h.c;            // signed shift amount
        h.b = 1 ++ h.a;              // literal without width in ++
        if (h.a) { h.a = 0; }        // condition not bool
        h.a = ~5;                    // ~ on int
        h.a = h.f ? 1 : 2;           // width of ?: over int literals
        h.a = h.f && h.a;            // && on bit<8>
        h.a = 8w255 / 0;             // division by zero
        h.a = true;                  // bool to bit<8>
        h.c = h.c / 2;               // division of signed values
        h.a = h.a % 3;               // '%' of a non-constant
        h.a = 8w7 % 3;               // fine: folded
        h.a = h.a << -1;             // negative shift amount
        h.a = h.a << 8s2;            // fine: a constant amount
    }
}
