//! Latency percentiles: nearest-rank over the full sample (no histogram buckets, no
//! interpolation), so a reported p99 is a latency some message really had.

use serde::{Deserialize, Serialize};

/// p50/p95/p99/max of a latency sample, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Messages measured.
    pub samples: usize,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest message.
    pub max_ms: f64,
}

impl Latency {
    /// Summarises latencies given in microseconds (sorts them in place); `None` when empty.
    pub fn from_micros(samples: &mut [u64]) -> Option<Self> {
        samples.sort_unstable();
        let ms = |p| percentile(samples, p).map(|us| us as f64 / 1000.0);
        Some(Self {
            samples: samples.len(),
            p50_ms: ms(50.0)?,
            p95_ms: ms(95.0)?,
            p99_ms: ms(99.0)?,
            max_ms: ms(100.0)?,
        })
    }
}

/// The nearest-rank `p`th percentile of an ascending sample: the smallest value with at
/// least `p`% of the sample at or below it. `None` for an empty sample.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = ((p.clamp(0.0, 100.0) / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_of_one_to_a_hundred_are_the_ranks_themselves() {
        let sample: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sample, 50.0), Some(50));
        assert_eq!(percentile(&sample, 95.0), Some(95));
        assert_eq!(percentile(&sample, 99.0), Some(99));
        assert_eq!(percentile(&sample, 100.0), Some(100));
        assert_eq!(percentile(&sample, 0.0), Some(1));
    }

    #[test]
    fn small_samples_round_the_rank_up_to_a_real_value() {
        assert_eq!(percentile(&[7], 99.0), Some(7));
        assert_eq!(percentile(&[1, 2, 3], 50.0), Some(2));
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), Some(2));
        assert_eq!(percentile(&[1, 2, 3, 4], 51.0), Some(3));
        assert_eq!(
            percentile(&[10, 20, 30, 40, 50, 60, 70, 80, 90, 1000], 95.0),
            Some(1000)
        );
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn the_summary_sorts_its_input_and_converts_to_milliseconds() {
        let mut us: Vec<u64> = (1..=1000).rev().map(|i| i * 1000).collect();
        let l = Latency::from_micros(&mut us).unwrap();
        assert_eq!(l.samples, 1000);
        assert_eq!(l.p50_ms, 500.0);
        assert_eq!(l.p95_ms, 950.0);
        assert_eq!(l.p99_ms, 990.0);
        assert_eq!(l.max_ms, 1000.0);
        assert!(Latency::from_micros(&mut []).is_none());
    }
}
