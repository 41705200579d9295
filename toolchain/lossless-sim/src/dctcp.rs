//! DCTCP's sender estimate (RFC 8257 section 3.3): the fraction of bytes acknowledged with ECE
//! in each window of data, folded into alpha with gain g = 1/16 once per window. The window
//! reduction (cwnd x (1 - alpha / 2), once per window) and the receiver's CE state machine
//! (section 3.2) are in [`crate::tcp`], where the window and the ACKs are.

/// RFC 8257 section 4.2's recommended gain.
pub const G: f64 = 1.0 / 16.0;

/// DCTCP.Alpha with its observation window (DCTCP.WindowEnd, BytesAcked, BytesMarked).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Alpha {
    alpha: f64,
    /// Sequence offset whose acknowledgement ends the current window.
    window_end: u64,
    acked: u64,
    marked: u64,
    /// Windows folded in so far.
    windows: u64,
}

impl Default for Alpha {
    fn default() -> Self {
        Alpha::new()
    }
}

impl Alpha {
    /// Alpha starts at 1 (as Linux's dctcp_alpha_on_init): the first reduction halves the
    /// window as RFC 3168 would, until marks say otherwise.
    pub fn new() -> Alpha {
        Alpha {
            alpha: 1.0,
            window_end: 0,
            acked: 0,
            marked: 0,
            windows: 0,
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// An ACK newly acknowledging `acked` bytes up to `ack`, with or without ECE; `snd_nxt`:
    /// the next byte to send. Once `ack` passes the window's end, the window's marked
    /// fraction is folded in and the next window runs to `snd_nxt`.
    pub fn on_ack(&mut self, acked: u64, ece: bool, ack: u64, snd_nxt: u64) {
        self.acked += acked;
        if ece {
            self.marked += acked;
        }
        if ack <= self.window_end {
            return;
        }
        let m = if self.acked > 0 {
            self.marked as f64 / self.acked as f64
        } else {
            0.0
        };
        self.alpha = (1.0 - G) * self.alpha + G * m;
        self.windows += 1;
        self.acked = 0;
        self.marked = 0;
        self.window_end = snd_nxt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A steady fraction F of the bytes marked: alpha after n windows is the closed form
    /// (1 - g)^n alpha_0 + F (1 - (1 - g)^n), hence converges to F.
    #[test]
    fn a_steady_marked_fraction_converges_alpha_to_it_in_closed_form() {
        let seg = 1000;
        for (marks_in_8, f) in [(0usize, 0.0), (2, 0.25), (5, 0.625), (8, 1.0)] {
            let mut a = Alpha::new();
            // Every ACK acknowledges one segment and the sender keeps 7 more in flight, so
            // after the first ACK (which closes the empty window 0 with F = 0) every window
            // is 8 ACKs, `marks_in_8` of them with ECE.
            a.on_ack(seg, false, seg, 8 * seg);
            assert_eq!(a.alpha(), 1.0 - G);
            let mut ack = seg;
            for n in 1..=300 {
                for k in 0..8 {
                    ack += seg;
                    a.on_ack(seg, k < marks_in_8, ack, ack + 7 * seg);
                }
                assert_eq!(a.windows(), n + 1);
                let keep = (1.0 - G).powi(n as i32);
                let closed = keep * (1.0 - G) + f * (1.0 - keep);
                assert!(
                    (a.alpha() - closed).abs() < 1e-12,
                    "F {f}, window {n}: {} vs {closed}",
                    a.alpha()
                );
            }
            // (15/16)^300 of the start is left: under 1e-8.
            assert!((a.alpha() - f).abs() < 1e-8, "F {f}: alpha {}", a.alpha());
        }
    }

    #[test]
    fn acks_inside_the_window_only_count() {
        let mut a = Alpha::new();
        a.on_ack(100, true, 100, 1000);
        let after_first = a.alpha();
        a.on_ack(100, true, 200, 1100);
        a.on_ack(800, true, 1000, 1900);
        assert_eq!(
            (a.alpha(), a.windows()),
            (after_first, 1),
            "ack <= window end"
        );
        a.on_ack(100, false, 1100, 2000);
        // 1000 bytes acknowledged in the window, 900 of them with ECE.
        assert!((a.alpha() - ((1.0 - G) * after_first + G * 0.9)).abs() < 1e-15);
    }
}
