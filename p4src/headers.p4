// Headers, metadata and constants of the lossless pipeline. See README.md for the design.
#ifndef LOSSLESS_HEADERS_P4
#define LOSSLESS_HEADERS_P4

// The CPU port of the switch, as given to the switch with --cpu-port. A compile-time constant
// because the parser must recognise PacketOut before any table runs; override with -DCPU_PORT=N.
#ifndef CPU_PORT
#define CPU_PORT 255
#endif

// The switch's packet generator injects its packets into ingress as if received on this port
// (p4-switch's pktgen, toolchain/p4-switch/README.md; bmv2 has none, so nothing arrives on it
// there). Override with -DPKTGEN_PORT=N to match the switch's configured pktgen port.
#ifndef PKTGEN_PORT
#define PKTGEN_PORT 510
#endif

// Clone sessions that send a generated frame (PFC, SFC) out of port P use id PORT_SESSION_BASE + P.
// The controller creates one such session per front-panel port.
#ifndef PORT_SESSION_BASE
#define PORT_SESSION_BASE 512
#endif

// Sizes at SONiC scale (seed 002): 200k IPv4 and 65k IPv6 routes, 32k ARP + 16k ND neighbours,
// ECMP 512 groups x 32 members (or 256 x 64, 128 x 128).
#define IPV4_ROUTES 262144
#define IPV6_ROUTES 81920
#define NEIGHBORS 49152
#define NEXTHOPS 65536
#define ECMP_GROUPS 1024
#define ECMP_MEMBERS 16384
#define ROUTER_INTERFACES 1024

// Slots of each of the four SFC suppression filters (two banks of two hashes).
#ifndef SFC_FILTER_SLOTS
#define SFC_FILTER_SLOTS 4096
#endif

// Per-(port, 8 classes) arrays are indexed port * 8 + class over the 9-bit port space.
#define PORT_CLASSES 4096

typedef bit<9>   port_t;
typedef bit<48>  mac_t;
typedef bit<32>  ipv4_addr_t;
typedef bit<128> ipv6_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP = 0x0806;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_IPV6 = 0x86dd;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;
const bit<16> MAC_CONTROL_OPCODE_PFC = 0x0101;
const mac_t MAC_CONTROL_DST = 0x0180c2000001;
const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;
const bit<8> IP_PROTO_ICMPV6 = 58;
const bit<16> UDP_PORT_ROCEV2 = 4791;
const bit<16> UDP_PORT_SFC = 1674;
const bit<8> ICMPV6_NEIGHBOR_SOLICIT = 135;
const bit<8> ICMPV6_NEIGHBOR_ADVERT = 136;

// SFC duplicate suppression (sfc_mode): the public reference's two-bank (source, destination,
// DSCP) epoch filter, one signal per source per interval, or none.
const bit<2> SFC_DEDUP_TWO_BANK = 0;
const bit<2> SFC_DEDUP_PER_SOURCE = 1;
const bit<2> SFC_DEDUP_NONE = 2;

// The egress_spec that v1model's mark_to_drop sets (bmv2's default --drop-port). p4-switch
// starts egress with it for a packet its traffic manager dropped (the accounting pass).
const bit<9> V1MODEL_DROP_PORT = 511;

// bmv2's standard_metadata.instance_type values.
const bit<32> INSTANCE_NORMAL = 0;
const bit<32> INSTANCE_INGRESS_CLONE = 1;
const bit<32> INSTANCE_EGRESS_CLONE = 2;

// What a packet is to the egress pipeline.
const bit<3> KIND_DATA = 0;      // counted in the buffer accounting
const bit<3> KIND_PUNT = 1;      // to the controller
const bit<3> KIND_PFC = 2;       // clone that becomes a PFC frame (XOFF or XON)
const bit<3> KIND_SFC = 3;       // clone that becomes an SFC message (or PFC at an edge port)
const bit<3> KIND_CONTROL = 4;   // generated or converted in ingress; not accounted

// Why a packet was dropped: the index into the drop_reasons counter.
const bit<32> DROP_PARSER_ERROR = 0;
const bit<32> DROP_NOT_ROUTER_MAC = 1;
const bit<32> DROP_NO_ROUTE = 2;
const bit<32> DROP_TTL_EXPIRED = 3;
const bit<32> DROP_NO_NEIGHBOR = 4;
const bit<32> DROP_LOSSY_THRESHOLD = 5;
const bit<32> DROP_LOSSLESS_VIOLATION = 6;
const bit<32> DROP_COPP = 7;
const bit<32> DROP_ROUTE_ACTION = 8;
const bit<32> DROP_MAC_CONTROL = 9;
const bit<32> DROP_REASONS = 16;

// v1model meter colours.
const bit<2> METER_RED = 2;

// Why a packet went to the controller: packet_in.reason and the CoPP meter index.
const bit<8> PUNT_ARP = 1;
const bit<8> PUNT_ND = 2;
const bit<8> PUNT_IP2ME = 3;
const bit<8> PUNT_TTL = 4;
const bit<32> PUNT_REASONS = 8;

// Field lists preserved into clones.
#define FL_CLONE 1

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
    bit<8> reason;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

// What the packet generator puts in front of each packet, in Tofino's (TF1) timer-trigger
// layout: which application fired, and the batch and packet number within that firing.
header pktgen_t {
    bit<3> _pad1;
    bit<2> pipe_id;
    bit<3> app_id;
    bit<8> _pad2;
    bit<16> batch_id;
    bit<16> packet_id;
}

header ethernet_t {
    mac_t dst_addr;
    mac_t src_addr;
    bit<16> ether_type;
}

header vlan_t {
    bit<3> pcp;
    bit<1> dei;
    bit<12> vid;
    bit<16> ether_type;
}

// IEEE 802.1Qbb priority-based flow control: one pause time per priority, in quanta of 512 bit
// times, effective for the priorities set in class_enable.
header pfc_t {
    bit<16> opcode;
    bit<8> _reserved;
    bit<8> class_enable;
    bit<16> time0;
    bit<16> time1;
    bit<16> time2;
    bit<16> time3;
    bit<16> time4;
    bit<16> time5;
    bit<16> time6;
    bit<16> time7;
}

// Zero fill that brings a generated frame to the 60-byte minimum (64 with the FCS).
header pad14_t { bit<112> zero; }
header pad26_t { bit<208> zero; }

header arp_t {
    bit<16> htype;
    bit<16> ptype;
    bit<8> hlen;
    bit<8> plen;
    bit<16> oper;
    mac_t sha;
    ipv4_addr_t spa;
    mac_t tha;
    ipv4_addr_t tpa;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

// Options are carried through untouched; the checksum is updated incrementally, so it stays
// right whatever they hold.
header ipv4_options_t {
    varbit<320> options;
}

header ipv6_t {
    bit<4> version;
    bit<6> dscp;
    bit<2> ecn;
    bit<20> flow_label;
    bit<16> payload_len;
    bit<8> next_hdr;
    bit<8> hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

header icmpv6_t {
    bit<8> type;
    bit<8> code;
    bit<16> checksum;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4> data_offset;
    bit<4> res;
    bit<8> flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

// InfiniBand Base Transport Header, as RoCEv2 carries it over UDP 4791.
header bth_t {
    bit<8> opcode;
    bit<1> solicited;
    bit<1> mig_req;
    bit<2> pad_count;
    bit<4> version;
    bit<16> pkey;
    bit<1> fecn;
    bit<1> becn;
    bit<6> _reserved;
    bit<24> dest_qp;
    bit<1> ack_req;
    bit<7> _reserved2;
    bit<24> psn;
}

// Source Flow Control message (UDP 1674): the pause a congested switch asks the source ToR to
// apply toward the sender of the traffic carrying `dscp`. The public reference's sfc_pause_h;
// its 14 bytes of zero padding (pad14) follow it inside the UDP payload.
header sfc_t {
    bit<8> version;
    bit<8> dscp;
    bit<16> duration_us;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    pktgen_t pktgen;
    ethernet_t ethernet;
    vlan_t vlan;
    pfc_t pfc;
    arp_t arp;
    ipv4_t ipv4;
    ipv4_options_t ipv4_options;
    ipv6_t ipv6;
    icmpv6_t icmpv6;
    udp_t udp;
    tcp_t tcp;
    bth_t bth;
    sfc_t sfc;
    pad14_t pad14;
    pad26_t pad26;
}

struct metadata_t {
    // Flow fields, IPv4 addresses zero-extended, for ECMP hashing.
    ipv6_addr_t flow_src;
    ipv6_addr_t flow_dst;
    bit<8> flow_proto;
    bit<16> l4_src;
    bit<16> l4_dst;
    bit<6> dscp;

    // Classification (SAI QoS maps bound per port).
    bit<1> trust_dscp;
    bit<8> dscp_map;
    bit<8> dot1p_map;
    bit<8> tc_pg_map;
    bit<8> tc_queue_map;
    bit<3> tc;
    bit<3> pg;
    bit<3> queue;

    // Routing.
    bit<16> nexthop_id;
    bit<16> ecmp_group_id;
    bit<16> rif;
    ipv6_addr_t neighbor_ip;
    bit<1> routed;
    bit<8> punt_reason;

    // Buffer accounting, bridged from ingress to egress for data packets.
    bit<1> lossless;
    bit<32> acct_len;
    bit<32> xon_th;
    @field_list(FL_CLONE)
    bit<8> class_enable;
    @field_list(FL_CLONE)
    bit<16> pause_quanta;
    bit<3> kind;
    @field_list(FL_CLONE)
    bit<3> clone_kind;

    // Source Flow Control, preserved into the clone that carries the signal.
    @field_list(FL_CLONE)
    bit<16> sfc_duration_us;
    @field_list(FL_CLONE)
    bit<8> sfc_dscp;
    @field_list(FL_CLONE)
    bit<6> sfc_ip_dscp;
    @field_list(FL_CLONE)
    bit<8> sfc_version;
    @field_list(FL_CLONE)
    bit<1> sfc_fixed_port;

    bit<1> dropped;
}

#endif
