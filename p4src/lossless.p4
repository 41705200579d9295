// lossless-lab: the lossless L3 pipeline for v1model (bmv2 simple_switch and p4-switch).
// Design, tables and formulas: README.md in this directory.
#include <core.p4>
#include <v1model.p4>

#include "headers.p4"

// Buffer accounting shared by ingress (admission) and egress (release), in bytes:
// per (ingress port, PG), per (egress port, queue) and for the shared pool.
register<bit<32>>(PORT_CLASSES) pg_bytes;
register<bit<32>>(PORT_CLASSES) queue_bytes;
register<bit<32>>(1) shared_pool_used;
// The part of pg_bytes a lossless PG holds in its headroom: bytes admitted while it was paused
// or beyond its pause point, up to the profile's xoff (SAI's XOFF_TH, "the maximum available
// buffer for a PG after XOFF is generated"). Kept apart from the reserved and shared part, as
// the chip's headroom is a reservation (or the ingress pool's xoff) outside the shared pool,
// so a dynamic pause point that falls as the pool fills does not eat into it.
register<bit<32>>(PORT_CLASSES) pg_headroom_bytes;
// XOFF state per (ingress port, PG) and when the last pause went out (us), for refresh.
register<bit<1>>(PORT_CLASSES) pg_paused;
register<bit<48>>(PORT_CLASSES) pg_last_pause;

// SFC duplicate suppression as the public reference does it (p4src/README.md): epochs of the
// configured window, each with an empty two-hash filter of (source, destination, DSCP). The
// reference alternates two banks of bits and clears the old bank when the epoch changes;
// v1model cannot clear a register from the data plane, so a slot holds the number (plus one)
// of the epoch that set it, and one from an older epoch counts as clear.
register<bit<32>>(1) sfc_epoch_start;
register<bit<32>>(1) sfc_epoch;
register<bit<32>>(SFC_FILTER_SLOTS) sfc_bank0_filter0;
register<bit<32>>(SFC_FILTER_SLOTS) sfc_bank0_filter1;
register<bit<32>>(SFC_FILTER_SLOTS) sfc_bank1_filter0;
register<bit<32>>(SFC_FILTER_SLOTS) sfc_bank1_filter1;

bit<32> port_class(in port_t port, in bit<3> cls) {
    return ((bit<32>)port << 3) | (bit<32>)cls;
}

// RFC 1624 eqn. 3: the header checksum after one 16-bit word changes from old_word to new_word.
bit<16> csum16_replace(in bit<16> csum, in bit<16> old_word, in bit<16> new_word) {
    bit<32> sum = (bit<32>)(~csum) + (bit<32>)(~old_word) + (bit<32>)new_word;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return ~(bit<16>)sum;
}

// Pause quanta covering duration_us at a port's rate (quanta per microsecond in Q16.16),
// rounded up so that the pause lasts at least duration_us, capped at the largest PFC timer.
bit<16> pause_quanta_for(in bit<16> duration_us, in bit<32> quanta_per_us_q16) {
    bit<64> quanta = ((bit<64>)duration_us * (bit<64>)quanta_per_us_q16 + 0xffff) >> 16;
    return quanta > 0xffff ? 16w0xffff : (bit<16>)quanta;
}

#include "parser.p4"
#include "ingress.p4"
#include "egress.p4"

V1Switch(LosslessParser(),
         LosslessVerifyChecksum(),
         LosslessIngress(),
         LosslessEgress(),
         LosslessComputeChecksum(),
         LosslessDeparser()) main;
