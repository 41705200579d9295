// static_assert: checked while compiling, with or without a message.
#include <core.p4>
#include <v1model.p4>

const bool recent = static_assert(V1MODEL_VERSION >= 20180101, "v1model too old");
const bool too_new = static_assert(V1MODEL_VERSION > 30000000, "needs a future v1model");

control C(inout bit<8> x) {
    apply {
        static_assert(true);
        static_assert(8w1 == 8w2);
        static_assert(x == 1, "x is not known here");
    }
}
