//! ARP for IPv4 over Ethernet (RFC 826): enough to resolve a peer's MAC and to answer for our own
//! address, so a Linux host or the lab switch can reach an endpoint that owns no kernel address.

pub const ETHERTYPE_ARP: u16 = 0x0806;
const OP_REQUEST: u16 = 1;
const OP_REPLY: u16 = 2;
const ARP_LEN: usize = 28;
const ETH_LEN: usize = 14;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpOp {
    Request,
    Reply,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arp {
    pub op: ArpOp,
    pub sender_mac: [u8; 6],
    pub sender_ip: [u8; 4],
    pub target_mac: [u8; 6],
    pub target_ip: [u8; 4],
}

impl Arp {
    /// Parses an Ethernet frame; `None` if it is not an Ethernet/IPv4 ARP request or reply
    /// (truncated frames included).
    pub fn parse(frame: &[u8]) -> Option<Arp> {
        let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
        if ethertype != ETHERTYPE_ARP {
            return None;
        }
        let a = frame.get(ETH_LEN..ETH_LEN + ARP_LEN)?;
        // htype 1 (Ethernet), ptype 0x0800, hlen 6, plen 4
        if a[0..6] != [0, 1, 8, 0, 6, 4] {
            return None;
        }
        let op = match u16::from_be_bytes([a[6], a[7]]) {
            OP_REQUEST => ArpOp::Request,
            OP_REPLY => ArpOp::Reply,
            _ => return None,
        };
        let mut arp = Arp {
            op,
            sender_mac: [0; 6],
            sender_ip: [0; 4],
            target_mac: [0; 6],
            target_ip: [0; 4],
        };
        arp.sender_mac.copy_from_slice(&a[8..14]);
        arp.sender_ip.copy_from_slice(&a[14..18]);
        arp.target_mac.copy_from_slice(&a[18..24]);
        arp.target_ip.copy_from_slice(&a[24..28]);
        Some(arp)
    }

    /// The frame: a request is broadcast, a reply goes to the target; padded to 60 bytes.
    pub fn encode(&self) -> Vec<u8> {
        let dst = match self.op {
            ArpOp::Request => [0xff; 6],
            ArpOp::Reply => self.target_mac,
        };
        let mut f = Vec::with_capacity(60);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&self.sender_mac);
        f.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4]);
        let op = match self.op {
            ArpOp::Request => OP_REQUEST,
            ArpOp::Reply => OP_REPLY,
        };
        f.extend_from_slice(&op.to_be_bytes());
        f.extend_from_slice(&self.sender_mac);
        f.extend_from_slice(&self.sender_ip);
        f.extend_from_slice(&self.target_mac);
        f.extend_from_slice(&self.target_ip);
        f.resize(60, 0);
        f
    }

    pub fn request(mac: [u8; 6], ip: [u8; 4], target_ip: [u8; 4]) -> Arp {
        Arp {
            op: ArpOp::Request,
            sender_mac: mac,
            sender_ip: ip,
            target_mac: [0; 6],
            target_ip,
        }
    }

    /// Our answer to `req`.
    pub fn reply_to(req: &Arp, mac: [u8; 6]) -> Arp {
        Arp {
            op: ArpOp::Reply,
            sender_mac: mac,
            sender_ip: req.target_ip,
            target_mac: req.sender_mac,
            target_ip: req.sender_ip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes_follow_rfc_826_and_reply_round_trips() {
        let req = Arp::request([2, 0, 0, 0, 0, 1], [10, 0, 0, 1], [10, 0, 0, 2]);
        let f = req.encode();
        assert_eq!(f.len(), 60);
        assert_eq!(&f[0..6], &[0xff; 6]);
        assert_eq!(&f[12..22], &[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
        assert_eq!(Arp::parse(&f), Some(req));
        let rep = Arp::reply_to(&req, [2, 0, 0, 0, 0, 2]);
        let g = rep.encode();
        assert_eq!(&g[0..6], &[2, 0, 0, 0, 0, 1]);
        assert_eq!(Arp::parse(&g), Some(rep));
        assert_eq!(rep.sender_ip, [10, 0, 0, 2]);
        for len in 0..42 {
            assert_eq!(Arp::parse(&f[..len]), None, "truncated to {len}");
        }
    }
}
