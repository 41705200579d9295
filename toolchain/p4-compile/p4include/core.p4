/* lossless-lab: the P4_16 core library (language spec 1.2.x), declared for p4-compile.
 * Names and signatures follow the specification so that programs written for p4c compile. */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Error codes the packet_in methods and verify() raise. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

extern packet_in {
    /* Fixed-size header: copies the next bits of the packet into hdr and marks it valid. */
    void extract<T>(out T hdr);
    /* Header ending in a varbit field whose length, in bits, is given. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* The next bits, without moving the cursor. */
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    /* Length of the packet in bytes (not every target knows it). */
    bit<32> length();
}

extern packet_out {
    /* Appends hdr if it is valid (all valid members of a struct, stack or union). */
    void emit<T>(in T hdr);
}

/* Ends parsing with toSignal when check is false. */
extern void verify(in bool check, in error toSignal);

/* Checked while compiling: an error (with message) when check is false; the call is the
 * constant true. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

/* As p4c 34b86e9's core.p4: its P4Info gives NoAction only @noWarn("unused") (newer p4c
 * versions add @corelib; tests/p4c-corpus/ holds the reference outputs we match). */
@noWarn("unused")
action NoAction() {}

match_kind {
    exact,
    ternary,
    lpm
}

#endif  /* _CORE_P4_ */
