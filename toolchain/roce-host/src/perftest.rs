//! perftest's reports (`ib_write_bw`, `ib_write_lat`): the same columns, units and formulas.
//!
//! - Bandwidth: MB/sec is 2^20 bytes per second (perftest's MBS format); BW average is all bytes
//!   over the time from the first post to the last completion; BW peak is perftest's best
//!   average over any run of consecutive messages, `min over i <= j of (completed[j] -
//!   posted[i]) / (j - i + 1)` (runs limited to [`PEAK_WINDOW`] messages to stay linear);
//!   MsgRate is messages per second / 10^6.
//! - Latency: each sample is half a ping-pong round trip, in microseconds; t_typical is the
//!   median; t_stdev the population standard deviation; percentiles are nearest-rank.

use serde::{Deserialize, Serialize};

/// Longest run of messages considered for BW peak.
pub const PEAK_WINDOW: usize = 4096;
const MB: f64 = 1_048_576.0;

pub const BW_HEADER: &str =
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
/// With `--report_gbits`: Gb/sec is 10^9 bits per second.
pub const BW_HEADER_GBITS: &str =
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
pub const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BwReport {
    pub bytes: u64,
    pub msg_size: u64,
    pub iterations: u64,
    pub bw_peak_mb_per_sec: f64,
    pub bw_average_mb_per_sec: f64,
    pub bw_peak_gbps: f64,
    pub bw_average_gbps: f64,
    pub msg_rate_mpps: f64,
    pub duration_ns: u64,
}

impl BwReport {
    /// `posted` and `completed` are the times of every post and every completion, each in the
    /// order they happened (across all QPs, as perftest records them).
    pub fn compute(msg_size: u64, iterations: u64, posted: &[u64], completed: &[u64]) -> Self {
        let n = posted.len().min(completed.len());
        let bytes = msg_size * n as u64;
        let duration_ns = match (posted.first(), completed.last()) {
            (Some(&p), Some(&c)) if c > p => c - p,
            _ => 0,
        };
        let per_sec = |b: f64, ns: f64| if ns > 0.0 { b * 1e9 / ns } else { 0.0 };
        let avg = per_sec(bytes as f64, duration_ns as f64);
        let mut best = f64::INFINITY;
        for (i, &p) in posted[..n].iter().enumerate() {
            for (k, &c) in completed[i..n.min(i + PEAK_WINDOW)].iter().enumerate() {
                if c > p {
                    best = best.min((c - p) as f64 / (k + 1) as f64);
                }
            }
        }
        let peak = if best.is_finite() {
            per_sec(msg_size as f64, best)
        } else {
            0.0
        };
        BwReport {
            bytes,
            msg_size,
            iterations,
            bw_peak_mb_per_sec: peak / MB,
            bw_average_mb_per_sec: avg / MB,
            bw_peak_gbps: peak * 8.0 / 1e9,
            bw_average_gbps: avg * 8.0 / 1e9,
            msg_rate_mpps: if msg_size > 0 {
                avg / msg_size as f64 / 1e6
            } else {
                per_sec(n as f64, duration_ns as f64) / 1e6
            },
            duration_ns,
        }
    }

    /// A duration run (`-D`): totals only. perftest reports no peak then (0.00).
    pub fn from_totals(msg_size: u64, messages: u64, duration_ns: u64) -> Self {
        let bytes = msg_size * messages;
        let secs = duration_ns as f64 / 1e9;
        let avg = if secs > 0.0 { bytes as f64 / secs } else { 0.0 };
        BwReport {
            bytes,
            msg_size,
            iterations: messages,
            bw_peak_mb_per_sec: 0.0,
            bw_average_mb_per_sec: avg / MB,
            bw_peak_gbps: 0.0,
            bw_average_gbps: avg * 8.0 / 1e9,
            msg_rate_mpps: if secs > 0.0 {
                messages as f64 / secs / 1e6
            } else {
                0.0
            },
            duration_ns,
        }
    }

    /// perftest's result row, in MB/sec or (`gbits`) Gb/sec.
    pub fn row(&self, gbits: bool) -> String {
        let (peak, avg) = if gbits {
            (self.bw_peak_gbps, self.bw_average_gbps)
        } else {
            (self.bw_peak_mb_per_sec, self.bw_average_mb_per_sec)
        };
        format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}",
            self.msg_size, self.iterations, peak, avg, self.msg_rate_mpps
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatReport {
    pub msg_size: u64,
    pub iterations: u64,
    pub t_min_usec: f64,
    pub t_max_usec: f64,
    pub t_typical_usec: f64,
    pub t_avg_usec: f64,
    pub t_stdev_usec: f64,
    pub p99_usec: f64,
    pub p99_9_usec: f64,
}

impl LatReport {
    /// One-way latency samples in nanoseconds (sorted in place).
    pub fn compute(msg_size: u64, samples_ns: &mut [u64]) -> Self {
        samples_ns.sort_unstable();
        let n = samples_ns.len();
        let us = |v: u64| v as f64 / 1000.0;
        let rank = |p: f64| {
            let r = (p * n as f64).ceil() as usize;
            samples_ns.get(r.saturating_sub(1)).copied().unwrap_or(0)
        };
        let avg = if n > 0 {
            samples_ns.iter().map(|&v| v as f64).sum::<f64>() / n as f64
        } else {
            0.0
        };
        let var = if n > 0 {
            samples_ns
                .iter()
                .map(|&v| (v as f64 - avg).powi(2))
                .sum::<f64>()
                / n as f64
        } else {
            0.0
        };
        LatReport {
            msg_size,
            iterations: n as u64,
            t_min_usec: us(samples_ns.first().copied().unwrap_or(0)),
            t_max_usec: us(samples_ns.last().copied().unwrap_or(0)),
            t_typical_usec: us(samples_ns.get(n / 2).copied().unwrap_or(0)),
            t_avg_usec: avg / 1000.0,
            t_stdev_usec: var.sqrt() / 1000.0,
            p99_usec: us(rank(0.99)),
            p99_9_usec: us(rank(0.999)),
        }
    }

    pub fn row(&self) -> String {
        format!(
            " {:<7} {:<10}  {:<7.2}        {:<7.2}      {:<7.2}          {:<7.2}         {:<7.2}         {:<7.2}                {:<7.2}",
            self.msg_size,
            self.iterations,
            self.t_min_usec,
            self.t_max_usec,
            self.t_typical_usec,
            self.t_avg_usec,
            self.t_stdev_usec,
            self.p99_usec,
            self.p99_9_usec
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bw_average_peak_and_rate_follow_perftest_formulas() {
        // 4 messages of 1 MiB posted at t=0; completions every 1 ms, but the 3rd and 4th only
        // 0.5 ms apart.
        let posted = [0, 0, 0, 0];
        let completed = [1_000_000, 2_000_000, 3_000_000, 3_500_000];
        let r = BwReport::compute(1 << 20, 4, &posted, &completed);
        assert_eq!(r.bytes, 4 << 20);
        // 4 MiB in 3.5 ms
        assert!((r.bw_average_mb_per_sec - 4.0 / 0.0035).abs() < 1e-6);
        // best (completed[j] - posted[i]) / (j-i+1): j=3, i=0: 3.5 ms / 4 = 0.875 ms per MiB
        assert!((r.bw_peak_mb_per_sec - 1.0 / 0.000875).abs() < 1e-6);
        assert!((r.msg_rate_mpps - 4.0 / 0.0035 / 1e6).abs() < 1e-9);
        assert!(r.row(false).starts_with(" 1048576    4 "));
        // 4 MiB in 3.5 ms in Gb/s (10^9 bits)
        assert!((r.bw_average_gbps - 4.0 * 1048576.0 * 8.0 / 0.0035 / 1e9).abs() < 1e-9);
        let row = r.row(true);
        let g: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(g[3], format!("{:.2}", r.bw_average_gbps));
    }

    #[test]
    fn latency_statistics_are_nearest_rank_and_population_stdev() {
        let mut s: Vec<u64> = (1..=1000).map(|v| v * 1000).collect();
        let r = LatReport::compute(2, &mut s);
        assert_eq!(r.t_min_usec, 1.0);
        assert_eq!(r.t_max_usec, 1000.0);
        assert_eq!(r.t_typical_usec, 501.0);
        assert_eq!(r.t_avg_usec, 500.5);
        assert_eq!(r.p99_usec, 990.0);
        assert_eq!(r.p99_9_usec, 999.0);
        // population stdev of 1..=1000 is sqrt((1000^2 - 1) / 12)
        assert!((r.t_stdev_usec - ((1e6f64 - 1.0) / 12.0).sqrt()).abs() < 1e-9);
        let empty = LatReport::compute(2, &mut []);
        assert_eq!(empty.iterations, 0);
    }
}
