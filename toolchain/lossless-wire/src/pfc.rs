//! IEEE 802.3 MAC control frames: 802.3x PAUSE and 802.1Qbb priority-based flow control (PFC).
//!
//! Layout after the Ethernet header (EtherType 0x8808):
//! PAUSE: opcode 0x0001, one 16-bit pause time.
//! PFC:   opcode 0x0101, a 16-bit class-enable vector (bit p enables priority p; the high octet is
//!        reserved), then eight 16-bit pause times, one per priority.
//! Both are padded to the 60-byte minimum frame (64 with the FCS, which the ports add).

use crate::inet::be16;

/// Destination of every MAC control frame (a reserved, never-forwarded group address).
pub const MAC_CONTROL_DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
pub const MAC_CONTROL_ETHERTYPE: u16 = 0x8808;
pub const OPCODE_PAUSE: u16 = 0x0001;
pub const OPCODE_PFC: u16 = 0x0101;
/// Minimum Ethernet frame without FCS.
pub const MIN_FRAME_LEN: usize = 60;
/// One pause quantum is 512 bit times at the port's rate.
pub const BITS_PER_QUANTUM: u64 = 512;

const ETH_HEADER_LEN: usize = 14;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacControl {
    /// 802.3x: pause every priority of the port.
    Pause { quanta: u16 },
    /// 802.1Qbb: pause the priorities whose bit is set in `class_enable` for `quanta[p]`.
    Pfc { class_enable: u8, quanta: [u16; 8] },
    /// A MAC control opcode this crate does not interpret (e.g. EPON GATE); ports still consume it.
    Other { opcode: u16 },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MacControlError {
    #[error("MAC control frame of {len} bytes is shorter than its {needed}-byte opcode body")]
    Truncated { len: usize, needed: usize },
}

impl MacControl {
    /// PFC frame that resumes (XON) the given priorities: every enabled timer is zero.
    pub fn pfc_xon(class_enable: u8) -> Self {
        MacControl::Pfc {
            class_enable,
            quanta: [0; 8],
        }
    }

    /// PFC frame that pauses (XOFF) the given priorities for `quanta` each.
    pub fn pfc_xoff(class_enable: u8, quanta: u16) -> Self {
        let mut timers = [0u16; 8];
        for (p, t) in timers.iter_mut().enumerate() {
            if class_enable & (1 << p) != 0 {
                *t = quanta;
            }
        }
        MacControl::Pfc {
            class_enable,
            quanta: timers,
        }
    }

    /// Decodes an Ethernet frame (starting at the destination MAC, FCS stripped).
    /// Returns `Ok(None)` when the frame is not a MAC control frame at all.
    pub fn decode(frame: &[u8]) -> Result<Option<Self>, MacControlError> {
        if frame.len() < ETH_HEADER_LEN + 2 || be16(frame, 12) != MAC_CONTROL_ETHERTYPE {
            return Ok(None);
        }
        let body = &frame[ETH_HEADER_LEN..];
        let opcode = be16(body, 0);
        let needed = match opcode {
            OPCODE_PAUSE => 4,
            OPCODE_PFC => 4 + 16,
            _ => return Ok(Some(MacControl::Other { opcode })),
        };
        if body.len() < needed {
            return Err(MacControlError::Truncated {
                len: frame.len(),
                needed: ETH_HEADER_LEN + needed,
            });
        }
        Ok(Some(match opcode {
            OPCODE_PAUSE => MacControl::Pause {
                quanta: be16(body, 2),
            },
            _ => {
                let mut quanta = [0u16; 8];
                for (p, q) in quanta.iter_mut().enumerate() {
                    *q = be16(body, 4 + 2 * p);
                }
                // The high octet of the vector is reserved: receivers ignore it.
                MacControl::Pfc {
                    class_enable: body[3],
                    quanta,
                }
            }
        }))
    }

    /// Encodes the frame with source MAC `src`, padded to [`MIN_FRAME_LEN`] bytes (no FCS).
    pub fn encode(&self, src: [u8; 6]) -> Vec<u8> {
        let mut f = Vec::with_capacity(MIN_FRAME_LEN);
        f.extend_from_slice(&MAC_CONTROL_DST);
        f.extend_from_slice(&src);
        f.extend_from_slice(&MAC_CONTROL_ETHERTYPE.to_be_bytes());
        match *self {
            MacControl::Pause { quanta } => {
                f.extend_from_slice(&OPCODE_PAUSE.to_be_bytes());
                f.extend_from_slice(&quanta.to_be_bytes());
            }
            MacControl::Pfc {
                class_enable,
                quanta,
            } => {
                f.extend_from_slice(&OPCODE_PFC.to_be_bytes());
                f.extend_from_slice(&[0, class_enable]);
                for q in quanta {
                    f.extend_from_slice(&q.to_be_bytes());
                }
            }
            MacControl::Other { opcode } => f.extend_from_slice(&opcode.to_be_bytes()),
        }
        f.resize(MIN_FRAME_LEN, 0);
        f
    }
}

/// How long `quanta` pause quanta last on a port running at `rate_bps`, in nanoseconds
/// (e.g. 65535 quanta at 100 Gb/s is about 335.5 us).
pub fn quanta_to_ns(quanta: u16, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return u64::MAX;
    }
    ((quanta as u128 * BITS_PER_QUANTUM as u128 * 1_000_000_000) / rate_bps as u128) as u64
}

/// The smallest number of quanta that covers `ns` nanoseconds at `rate_bps`, saturating at 0xffff.
pub fn ns_to_quanta(ns: u64, rate_bps: u64) -> u16 {
    let bits = ns as u128 * rate_bps as u128;
    let quanta = bits.div_ceil(BITS_PER_QUANTUM as u128 * 1_000_000_000);
    quanta.min(u16::MAX as u128) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x11];

    #[test]
    fn pfc_xoff_bytes_match_802_1qbb_layout() {
        let f = MacControl::pfc_xoff(0b0001_1000, 0xffff).encode(SRC);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[0..6], &MAC_CONTROL_DST);
        assert_eq!(&f[6..12], &SRC);
        assert_eq!(&f[12..18], &[0x88, 0x08, 0x01, 0x01, 0x00, 0x18]);
        // timers for priorities 0..7: only 3 and 4 set
        let timers: Vec<u16> = (0..8).map(|p| be16(&f, 18 + 2 * p)).collect();
        assert_eq!(timers, vec![0, 0, 0, 0xffff, 0xffff, 0, 0, 0]);
        assert!(f[34..].iter().all(|&b| b == 0), "padding must be zero");
    }

    #[test]
    fn decode_round_trips_pfc_and_pause() {
        for m in [
            MacControl::pfc_xoff(0x08, 1234),
            MacControl::pfc_xon(0xff),
            MacControl::Pause { quanta: 77 },
        ] {
            assert_eq!(MacControl::decode(&m.encode(SRC)).unwrap(), Some(m));
        }
    }

    #[test]
    fn decode_ignores_reserved_vector_octet_and_non_control_frames() {
        let mut f = MacControl::pfc_xoff(0x01, 5).encode(SRC);
        f[16] = 0xff;
        assert!(matches!(
            MacControl::decode(&f),
            Ok(Some(MacControl::Pfc {
                class_enable: 0x01,
                ..
            }))
        ));
        let mut ipv4 = f.clone();
        ipv4[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(MacControl::decode(&ipv4), Ok(None));
        let mut gate = f;
        gate[14..16].copy_from_slice(&[0x00, 0x02]);
        assert_eq!(
            MacControl::decode(&gate),
            Ok(Some(MacControl::Other { opcode: 2 }))
        );
    }

    #[test]
    fn truncated_pfc_is_an_error_not_a_panic() {
        let f = MacControl::pfc_xoff(0x01, 5).encode(SRC);
        for len in 16..34 {
            assert!(
                matches!(
                    MacControl::decode(&f[..len]),
                    Err(MacControlError::Truncated { .. })
                ),
                "len {len}"
            );
        }
    }

    #[test]
    fn quanta_durations_match_reference_figures() {
        assert_eq!(quanta_to_ns(1, 10_000_000_000), 51); // 51.2 ns at 10G
        assert_eq!(quanta_to_ns(65535, 100_000_000_000), 335_539); // ~335.5 us at 100G
        assert_eq!(ns_to_quanta(335_539, 100_000_000_000), 65535);
        assert_eq!(ns_to_quanta(u64::MAX / 2, 100_000_000_000), u16::MAX);
        assert_eq!(ns_to_quanta(52, 10_000_000_000), 2);
    }
}
