//! Ethernet links: a rate and a propagation delay. A frame occupies the line for its bytes plus
//! FCS (padded to 64), preamble and SFD (8) and the inter-frame gap (12), as switch-tm counts
//! them ([`switch_tm::wire_bytes`]); its last bit reaches the far end after everything but the
//! gap has been sent, plus the propagation delay.

/// Ethernet's minimum frame with FCS; shorter frames are padded.
const MIN_FRAME_WITH_FCS: u64 = 64;
const FCS: u64 = 4;
const PREAMBLE_SFD: u64 = 8;
pub const NS_PER_S: u128 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSpec {
    pub rate_bps: u64,
    pub delay_ns: u64,
}

impl LinkSpec {
    /// Nanoseconds from the first bit of the preamble to the last bit of the FCS of a frame of
    /// `len` bytes (without FCS, as the pipeline and the hosts hand it over), rounded up.
    pub fn frame_ns(&self, len: usize) -> u64 {
        self.frame_units(len).div_ceil(self.rate_bps as u128) as u64
    }

    /// The same in units of 1/rate ns, exact.
    pub fn frame_units(&self, len: usize) -> u128 {
        let bytes = (len as u64 + FCS).max(MIN_FRAME_WITH_FCS) + PREAMBLE_SFD;
        bytes as u128 * 8 * NS_PER_S
    }

    /// The line's busy time for that frame, gap included, in units of 1/rate ns (exact: at 100G a
    /// 64-byte frame takes 6.72 ns, and rounding each one would lose line rate).
    pub fn line_units(&self, len: usize) -> u128 {
        switch_tm::wire_bytes(len as u32) as u128 * 8 * NS_PER_S
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_counts_padding_fcs_and_preamble() {
        let l = LinkSpec {
            rate_bps: 100_000_000_000,
            delay_ns: 0,
        };
        // 60 bytes + FCS = 64, + 8 preamble/SFD = 72 bytes = 576 bits = 5.76 ns -> 6.
        assert_eq!(l.frame_ns(14), 6);
        assert_eq!(l.frame_ns(60), 6);
        // 1000 + 4 + 8 = 1012 bytes = 8096 bits = 80.96 ns -> 81.
        assert_eq!(l.frame_ns(1000), 81);
        // The gap occupies the line too: 1000 + 4 + 20 = 1024 bytes.
        assert_eq!(l.line_units(1000), 1024 * 8 * NS_PER_S);
    }
}
