//! DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015) as two
//! pure state machines driven by the caller's clock in nanoseconds:
//!
//! - [`CnpLimiter`], the notification point (receiver): at most one CNP per QP per interval
//!   (N = 50 us) for CE-marked packets.
//! - [`ReactionPoint`], the sender: on a CNP `RT = RC; RC = RC (1 - alpha/2);
//!   alpha = (1 - g) alpha + g`; without CNPs alpha decays `alpha = (1 - g) alpha` every K; the
//!   rate recovers on two event sources, a timer (every T) and a byte counter (every B bytes):
//!   while both have fired at most F times since the last CNP, fast recovery `RC = (RT + RC)/2`;
//!   once one exceeds F, additive increase `RT += R_AI` then `RC = (RT + RC)/2`; once both exceed
//!   F, hyper increase `RT += i R_HAI` (i = min(T, BC) - F) then `RC = (RT + RC)/2`.
//!
//! Timers are evaluated lazily: every input first replays the timer events that fell due before
//! it, in time order, so the result equals that of a timer interrupt at each period without
//! waking hundreds of QPs every 55 us. Once the rate is back at line rate the timers stop, as a
//! NIC's rate limiter releases the flow.

use serde::{Deserialize, Serialize};

/// Every DCQCN parameter, with the paper's defaults (see [`DcqcnConfig::paper`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DcqcnConfig {
    /// The NIC's line rate, the ceiling of RC and RT.
    pub line_rate_bps: f64,
    /// Gain g of the alpha moving average (1/256).
    pub g: f64,
    /// Alpha update period K without CNPs (55 us).
    pub alpha_timer_ns: u64,
    /// Rate increase timer period T (55 us).
    pub rate_timer_ns: u64,
    /// Byte counter B: bytes sent per rate increase event (10 MB).
    pub byte_counter: u64,
    /// Fast recovery steps F (5).
    pub fast_recovery_steps: u32,
    /// Additive increase step R_AI (40 Mb/s).
    pub rai_bps: f64,
    /// Hyper increase step R_HAI. The paper only says it is larger than R_AI; 10 x R_AI is the
    /// ratio NICs ship (rpg_hai_rate 50 vs rpg_ai_rate 5 Mb/s).
    pub rhai_bps: f64,
    /// Floor of RC (NICs: rpg_min_rate, 1 Mb/s).
    pub min_rate_bps: f64,
    /// Alpha before the first CNP (1, so the first cut halves the rate).
    pub initial_alpha: f64,
    /// Notification point: minimum gap between two CNPs for one QP (N = 50 us).
    pub cnp_interval_ns: u64,
}

impl DcqcnConfig {
    /// The SIGCOMM 2015 defaults at the given line rate.
    pub fn paper(line_rate_bps: f64) -> Self {
        DcqcnConfig {
            line_rate_bps,
            g: 1.0 / 256.0,
            alpha_timer_ns: 55_000,
            rate_timer_ns: 55_000,
            byte_counter: 10_000_000,
            fast_recovery_steps: 5,
            rai_bps: 40e6,
            rhai_bps: 400e6,
            min_rate_bps: 1e6,
            initial_alpha: 1.0,
            cnp_interval_ns: 50_000,
        }
    }
}

/// Which equation the last rate increase applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Stage {
    FastRecovery,
    AdditiveIncrease,
    HyperIncrease,
}

/// The sender side of DCQCN for one QP.
#[derive(Debug, Clone)]
pub struct ReactionPoint {
    cfg: DcqcnConfig,
    rc: f64,
    rt: f64,
    alpha: f64,
    /// Timer and byte-counter events since the last CNP.
    t: u32,
    bc: u32,
    bytes: u64,
    /// Start of the current alpha period (last CNP or last decay), once a CNP was seen.
    alpha_at: Option<u64>,
    /// Next rate timer event while the rate is below line rate.
    rate_event_at: Option<u64>,
    last_stage: Option<Stage>,
    cnps: u64,
}

impl ReactionPoint {
    pub fn new(cfg: DcqcnConfig) -> Self {
        ReactionPoint {
            rc: cfg.line_rate_bps,
            rt: cfg.line_rate_bps,
            alpha: cfg.initial_alpha,
            cfg,
            t: 0,
            bc: 0,
            bytes: 0,
            alpha_at: None,
            rate_event_at: None,
            last_stage: None,
            cnps: 0,
        }
    }

    /// Current rate RC.
    pub fn rate_bps(&self) -> f64 {
        self.rc
    }

    /// Target rate RT.
    pub fn target_bps(&self) -> f64 {
        self.rt
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn cnps(&self) -> u64 {
        self.cnps
    }

    /// (timer events, byte counter events) since the last CNP.
    pub fn counters(&self) -> (u32, u32) {
        (self.t, self.bc)
    }

    pub fn last_stage(&self) -> Option<Stage> {
        self.last_stage
    }

    /// Replays the alpha and rate timer events due at or before `now`.
    pub fn advance(&mut self, now: u64) {
        if let Some(at) = self.alpha_at {
            let k = self.cfg.alpha_timer_ns.max(1);
            let n = now.saturating_sub(at) / k;
            if n > 0 {
                self.alpha *= (1.0 - self.cfg.g).powf(n as f64);
                self.alpha_at = Some(at + n * k);
            }
        }
        let period = self.cfg.rate_timer_ns.max(1);
        while let Some(at) = self.rate_event_at {
            if at > now {
                break;
            }
            self.t = self.t.saturating_add(1);
            self.rate_event_at = Some(at + period);
            self.increase();
        }
    }

    /// A CNP arrived for this QP.
    pub fn on_cnp(&mut self, now: u64) {
        self.advance(now);
        self.cnps += 1;
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.cfg.min_rate_bps);
        self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g;
        self.alpha_at = Some(now);
        self.t = 0;
        self.bc = 0;
        self.bytes = 0;
        self.rate_event_at = Some(now + self.cfg.rate_timer_ns.max(1));
    }

    /// `bytes` left the QP at `now`: feeds the byte counter.
    pub fn on_sent(&mut self, bytes: u64, now: u64) {
        self.advance(now);
        if self.rate_event_at.is_none() {
            return;
        }
        self.bytes += bytes;
        let b = self.cfg.byte_counter.max(1);
        while self.bytes >= b && self.rate_event_at.is_some() {
            self.bytes -= b;
            self.bc = self.bc.saturating_add(1);
            self.increase();
        }
    }

    fn increase(&mut self) {
        let f = self.cfg.fast_recovery_steps;
        let stage = if self.t.max(self.bc) <= f {
            Stage::FastRecovery
        } else if self.t.min(self.bc) > f {
            let i = self.t.min(self.bc) - f;
            self.rt += i as f64 * self.cfg.rhai_bps;
            Stage::HyperIncrease
        } else {
            self.rt += self.cfg.rai_bps;
            Stage::AdditiveIncrease
        };
        self.last_stage = Some(stage);
        let line = self.cfg.line_rate_bps;
        self.rt = self.rt.min(line);
        self.rc = ((self.rt + self.rc) / 2.0).min(line);
        // Halving the gap never reaches RT exactly in floating point: release the flow once it
        // is within 1 b/s of line rate.
        if line - self.rc < 1.0 {
            self.rc = line;
            self.rt = line;
            self.rate_event_at = None;
        }
    }
}

/// The notification point for one QP: decides whether a CE-marked packet triggers a CNP.
#[derive(Debug, Clone, Default)]
pub struct CnpLimiter {
    last: Option<u64>,
}

impl CnpLimiter {
    /// A CE-marked packet arrived at `now`: true if a CNP is to be sent.
    pub fn on_ce(&mut self, now: u64, interval_ns: u64) -> bool {
        match self.last {
            Some(t) if now.saturating_sub(t) < interval_ns => false,
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: f64 = 40e9;
    const US: u64 = 1_000;

    fn rp() -> ReactionPoint {
        ReactionPoint::new(DcqcnConfig::paper(LINE))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn first_cnp_halves_the_rate_and_keeps_alpha_at_one() {
        let mut r = rp();
        assert_eq!(r.rate_bps(), LINE);
        r.on_cnp(0);
        // RT = RC; RC = RC(1 - alpha/2) with alpha = 1; alpha = (1-g)*1 + g = 1
        assert_eq!(r.target_bps(), LINE);
        assert_eq!(r.rate_bps(), LINE / 2.0);
        assert!(close(r.alpha(), 1.0));
        // a second CNP before any K period: RT = 20G, RC = 10G
        r.on_cnp(10 * US);
        assert_eq!(r.target_bps(), LINE / 2.0);
        assert_eq!(r.rate_bps(), LINE / 4.0);
    }

    #[test]
    fn alpha_decays_every_k_without_cnp_and_sets_the_next_cut() {
        let mut r = rp();
        r.on_cnp(0);
        let g: f64 = 1.0 / 256.0;
        r.advance(3 * 55 * US + 1);
        let decayed = (1.0 - g).powi(3);
        assert!(close(r.alpha(), decayed), "{} vs {decayed}", r.alpha());
        let rc = r.rate_bps();
        r.on_cnp(3 * 55 * US + 1);
        assert!(close(r.rate_bps(), rc * (1.0 - decayed / 2.0)));
        assert!(close(r.alpha(), (1.0 - g) * decayed + g));
    }

    #[test]
    fn timer_drives_fast_recovery_then_additive_increase() {
        let mut r = rp();
        r.on_cnp(0);
        r.on_cnp(0); // RT = 20G, RC = 10G
        let (mut rt, mut rc) = (20e9, 10e9);
        for step in 1..=5u64 {
            r.advance(step * 55 * US);
            rc = (rt + rc) / 2.0;
            assert!(close(r.rate_bps(), rc), "fast recovery step {step}");
            assert_eq!(r.last_stage(), Some(Stage::FastRecovery));
        }
        assert!(close(r.rate_bps(), 20e9 - 10e9 / 32.0));
        r.advance(6 * 55 * US);
        rt += 40e6;
        rc = (rt + rc) / 2.0;
        assert_eq!(r.last_stage(), Some(Stage::AdditiveIncrease));
        assert!(close(r.target_bps(), rt));
        assert!(close(r.rate_bps(), rc));
        assert_eq!(r.counters(), (6, 0));
    }

    #[test]
    fn byte_counter_and_timer_together_reach_hyper_increase() {
        let mut r = rp();
        r.on_cnp(0);
        r.on_cnp(0);
        // six byte-counter events at t=0: five fast recovery, one additive increase
        r.on_sent(6 * 10_000_000, 0);
        assert_eq!(r.counters(), (0, 6));
        assert_eq!(r.last_stage(), Some(Stage::AdditiveIncrease));
        for n in 1..=5u64 {
            r.advance(n * 55 * US);
            assert_eq!(r.last_stage(), Some(Stage::AdditiveIncrease), "timer {n}");
        }
        let (rt, rc) = (r.target_bps(), r.rate_bps());
        r.advance(6 * 55 * US);
        assert_eq!(r.last_stage(), Some(Stage::HyperIncrease));
        // i = min(T, BC) - F = 1
        assert!(close(r.target_bps(), rt + 400e6));
        assert!(close(r.rate_bps(), (rt + 400e6 + rc) / 2.0));
        r.on_sent(10_000_000, 6 * 55 * US);
        // BC = 7, T = 6: i = 1 again
        assert!(close(r.target_bps(), rt + 800e6));
    }

    #[test]
    fn rate_recovers_to_line_rate_and_timers_stop() {
        let mut r = rp();
        r.on_cnp(0);
        r.advance(1_000_000_000);
        assert_eq!(r.rate_bps(), LINE);
        assert_eq!(r.target_bps(), LINE);
        let (t, _) = r.counters();
        r.advance(2_000_000_000);
        assert_eq!(r.counters().0, t, "no timer events after release");
    }

    #[test]
    fn rate_never_falls_below_the_floor() {
        let mut r = rp();
        for i in 0..100 {
            r.on_cnp(i);
        }
        assert_eq!(r.rate_bps(), 1e6);
        assert_eq!(r.cnps(), 100);
    }

    #[test]
    fn cnp_limiter_allows_one_per_interval() {
        let mut l = CnpLimiter::default();
        assert!(l.on_ce(100, 50 * US));
        assert!(!l.on_ce(100 + 49 * US, 50 * US));
        assert!(l.on_ce(100 + 50 * US, 50 * US));
        assert!(!l.on_ce(100 + 60 * US, 50 * US));
    }
}
