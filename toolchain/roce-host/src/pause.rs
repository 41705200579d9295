//! The transmit side of 802.1Qbb PFC and 802.3x PAUSE as a NIC honours them: a received frame
//! stops new transmissions of the priorities it names for `quanta x 512` bit times at the
//! port's rate, counted from its arrival; a timer of 0 resumes at once (XON). PAUSE stops every
//! priority. A frame already on the wire finishes.

use lossless_wire::pfc::{quanta_to_ns, MacControl};
use serde::Serialize;

/// Pause state and counters of one port.
#[derive(Debug, Clone)]
pub struct PauseState {
    rate_bps: u64,
    until: [u64; 8],
    counters: PauseCounters,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PauseCounters {
    /// PFC frames received.
    pub rx_pfc_frames: u64,
    /// Per priority: PFC frames whose class-enable vector named it with a non-zero timer (XOFF).
    pub rx_pfc_xoff: [u64; 8],
    /// Per priority: PFC frames whose class-enable vector named it with timer 0 (XON).
    pub rx_pfc_xon: [u64; 8],
    /// 802.3x PAUSE frames received.
    pub rx_pause_frames: u64,
    /// Other MAC control opcodes, consumed and ignored.
    pub rx_other_mac_control: u64,
}

impl PauseState {
    pub fn new(rate_bps: u64) -> Self {
        PauseState {
            rate_bps,
            until: [0; 8],
            counters: PauseCounters::default(),
        }
    }

    pub fn on_frame(&mut self, now: u64, frame: &MacControl) {
        match *frame {
            MacControl::Pfc {
                class_enable,
                quanta,
            } => {
                self.counters.rx_pfc_frames += 1;
                for (p, q) in quanta.iter().enumerate() {
                    if class_enable & (1 << p) == 0 {
                        continue;
                    }
                    if *q == 0 {
                        self.counters.rx_pfc_xon[p] += 1;
                    } else {
                        self.counters.rx_pfc_xoff[p] += 1;
                    }
                    self.until[p] = now.saturating_add(quanta_to_ns(*q, self.rate_bps));
                }
            }
            MacControl::Pause { quanta } => {
                self.counters.rx_pause_frames += 1;
                let end = now.saturating_add(quanta_to_ns(quanta, self.rate_bps));
                self.until = [end; 8];
            }
            MacControl::Other { .. } => self.counters.rx_other_mac_control += 1,
        }
    }

    /// True while `prio` may not start a frame at `now`.
    pub fn paused(&self, prio: u8, now: u64) -> bool {
        self.until.get(prio as usize).is_some_and(|&t| t > now)
    }

    /// When `prio` may transmit again (a time at or before now when it is not paused).
    pub fn resume_at(&self, prio: u8) -> u64 {
        self.until.get(prio as usize).copied().unwrap_or(0)
    }

    pub fn counters(&self) -> &PauseCounters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfc_pauses_named_priorities_for_quanta_times_512_bit_times() {
        let mut s = PauseState::new(10_000_000_000);
        s.on_frame(1_000, &MacControl::pfc_xoff(0b0000_1000, 1000));
        // 1000 quanta x 512 bits / 10 Gb/s = 51.2 us
        assert!(s.paused(3, 1_000 + 51_199));
        assert!(!s.paused(3, 1_000 + 51_200));
        assert!(!s.paused(4, 1_000));
        assert_eq!(s.counters().rx_pfc_xoff[3], 1);
        assert_eq!(s.counters().rx_pfc_frames, 1);
    }

    #[test]
    fn zero_quanta_resumes_and_pause_stops_everything() {
        let mut s = PauseState::new(25_000_000_000);
        s.on_frame(0, &MacControl::pfc_xoff(0xff, 0xffff));
        s.on_frame(10, &MacControl::pfc_xon(0b0000_1000));
        assert!(!s.paused(3, 10));
        assert!(s.paused(4, 10));
        assert_eq!(s.counters().rx_pfc_xon[3], 1);
        s.on_frame(100, &MacControl::Pause { quanta: 1 });
        // one quantum at 25G is 20.48 ns
        assert!(s.paused(3, 119));
        assert!(!s.paused(0, 121));
        assert_eq!(s.counters().rx_pause_frames, 1);
        assert!(!s.paused(9, 0), "out-of-range priority is never paused");
    }
}
