/* lossless-lab: the v1model architecture of the BMv2 simple_switch target, declared for
 * p4-compile. Names, signatures and numbering follow p4lang's v1model so that programs and
 * controllers written for p4c and simple_switch work unchanged. */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

/* p4c's default: a program that wants the 20200408 API (PortId_t, index types of counters,
 * meters and registers) defines V1MODEL_VERSION before including this file. */
#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

match_kind {
    range,
    optional,
    selector
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9>  PortId_t;
#endif

@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;
    PortId_t egress_spec;
    PortId_t egress_port;
#else
    bit<9>   ingress_port;
    bit<9>   egress_spec;
    bit<9>   egress_port;
#endif
    bit<32>  instance_type;
    bit<32>  packet_length;
    @alias("queueing_metadata.enq_timestamp")
    bit<32>  enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19>  enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32>  deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19>  deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48>  ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48>  egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16>  mcast_grp;
    @alias("intrinsic_metadata.egress_rid")
    bit<16>  egress_rid;
    /* Set by the target when verify_checksum fails. */
    bit<1>   checksum_error;
    /* Set by the target when the parser ends with an error. */
    error    parser_error;
    @alias("intrinsic_metadata.priority")
    bit<3>   priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* An array of counters indexed from the data plane. */
extern counter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    counter(bit<32> size, CounterType type);
#if V1MODEL_VERSION >= 20200408
    void count(in I index);
#else
    void count(in bit<32> index);
#endif
}

/* One counter per entry of the table it is attached to. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* An array of two-rate three-colour meters (RFC 2698). */
extern meter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    meter(bit<32> size, MeterType type);
#if V1MODEL_VERSION >= 20200408
    void execute_meter<T>(in I index, out T result);
#else
    void execute_meter<T>(in bit<32> index, out T result);
#endif
}

/* One meter per entry of the table it is attached to. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* Stateful array; read and write are atomic with respect to one packet. */
extern register<T, I>
{
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in I index);
    void write(in I index, in T value);
}

/* Table implementation that shares action data among entries. */
extern action_profile {
    action_profile(bit<32> size);
}

/* A value drawn uniformly from [lo, hi]. */
extern void random<T>(out T result, in T lo, in T hi);

/* Sends data to the control plane (receiver selects the digest stream). */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/* Marks the packet to be dropped at the end of the current pipeline. */
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash(data) mod max); max 0 means no modulo. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* An action profile whose member is chosen by hashing the selector key fields. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* When condition holds, sets standard_metadata.checksum_error if checksum is not the
 * checksum of data under algo. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* When condition holds, stores the checksum of data under algo into checksum. */
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As verify_checksum, with the packet payload appended to data. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* As update_checksum, with the packet payload appended to data. */
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Sends the packet back to the ingress parser, keeping the user metadata fields annotated
 * with @field_list(index). */
extern void resubmit_preserving_field_list(bit<8> index);

/* Sends the deparsed packet back to the ingress parser, keeping the user metadata fields
 * annotated with @field_list(index). */
extern void recirculate_preserving_field_list(bit<8> index);

/* Copies the packet to the clone session. */
extern void clone(in CloneType type, in bit<32> session);

/* Copies the packet to the clone session, keeping the user metadata fields annotated with
 * @field_list(index). */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);
@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/* Sends at most length bytes of the packet out. */
extern void truncate(in bit<32> length);

/* Stops the switch when check is false (logged by BMv2). */
extern void assert(in bool check);

/* Like assert for the target; formal tools treat it as an assumption. */
extern void assume(in bool check);

/* Writes msg to the switch log; "{}" in msg stands for the fields of data in order. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The six programmable blocks of the v1model pipeline. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif  /* _V1_MODEL_P4_ */
