//! Feature statistics as LeRobot computes them: per episode, `min`, `max`,
//! `mean`, `std` (population), `count` and the quantiles `q01` `q10` `q50`
//! `q90` `q99` read from a 5000-bin histogram between the episode's minimum
//! and maximum (LeRobot's `RunningQuantileStats` fed one batch); for the whole
//! dataset, the episodes' statistics combined as LeRobot's
//! `aggregate_stats` does (count-weighted means and quantiles, pooled
//! variance, min of minima, max of maxima).
//!
//! Numeric features keep their values of the current episode (the
//! quantiles need them); camera frames keep a 256-value histogram per channel,
//! so an episode's frames cost nothing to remember.

use serde_json::{Value, json};

/// The quantiles LeRobot reports, with their keys.
pub const QUANTILES: [(f64, &str); 5] = [
    (0.01, "q01"),
    (0.10, "q10"),
    (0.50, "q50"),
    (0.90, "q90"),
    (0.99, "q99"),
];

/// Bins of LeRobot's quantile histogram.
const BINS: usize = 5000;

/// One feature's statistics, each a value per dimension (per channel for
/// images).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub min: Vec<f64>,
    pub max: Vec<f64>,
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
    pub count: u64,
    /// In the order of [`QUANTILES`].
    pub quantiles: Vec<Vec<f64>>,
}

/// The lower and upper histogram edges LeRobot uses for values in
/// `[min, max]`: padded by 1e-10, in float32 when the feature is float32 (as
/// NumPy computes `float32 - 1e-10`).
fn histogram_range(min: f64, max: f64, float32: bool) -> (f64, f64) {
    if float32 {
        (
            f64::from(min as f32 - 1e-10_f32),
            f64::from(max as f32 + 1e-10_f32),
        )
    } else {
        (min - 1e-10, max + 1e-10)
    }
}

/// NumPy's `histogram` with `BINS` equal bins over `[lo, hi]`: the bin of
/// `v` (values at `hi` fall in the last bin).
fn bin_of(v: f64, lo: f64, hi: f64, edges: &[f64]) -> usize {
    let norm = BINS as f64 / (hi - lo);
    let mut i = (((v - lo) * norm).floor().max(0.0) as usize).min(BINS - 1);
    if v < edges[i] && i > 0 {
        i -= 1;
    }
    if i + 1 < BINS && v >= edges[i + 1] {
        i += 1;
    }
    i
}

/// NumPy's `linspace(lo, hi, BINS + 1)`.
fn edges(lo: f64, hi: f64) -> Vec<f64> {
    let step = (hi - lo) / BINS as f64;
    let mut e: Vec<f64> = (0..=BINS).map(|i| lo + i as f64 * step).collect();
    e[BINS] = hi;
    e
}

/// LeRobot's quantile of a histogram: the bin where the cumulative count
/// reaches `q * count`, interpolated linearly within it.
fn quantile(hist: &[f64], edges: &[f64], target: f64) -> f64 {
    let mut cum = 0.0;
    let mut before = 0.0;
    // `searchsorted(cumsum, target)`: the first bin whose cumulative count
    // is at least `target`.
    let mut idx = hist.len();
    for (i, c) in hist.iter().enumerate() {
        before = cum;
        cum += c;
        if cum >= target {
            idx = i;
            break;
        }
    }
    if idx == 0 {
        return edges[0];
    }
    if idx >= hist.len() {
        return edges[edges.len() - 1];
    }
    let in_bin = cum - before;
    if in_bin == 0.0 {
        return edges[idx];
    }
    edges[idx] + (target - before) / in_bin * (edges[idx + 1] - edges[idx])
}

/// Quantiles of `values` (weighted by `weights`, all 1 when `None`) in
/// `[min, max]`, as LeRobot computes them.
fn quantiles_of(
    values: &mut dyn Iterator<Item = (f64, f64)>,
    min: f64,
    max: f64,
    count: f64,
    float32: bool,
) -> [f64; 5] {
    let (lo, hi) = histogram_range(min, max, float32);
    let e = edges(lo, hi);
    let mut hist = vec![0.0; BINS];
    for (v, w) in values {
        hist[bin_of(v, lo, hi, &e)] += w;
    }
    let mut out = [0.0; 5];
    for (o, (q, _)) in out.iter_mut().zip(QUANTILES) {
        *o = quantile(&hist, &e, q * count);
    }
    out
}

/// The values of one numeric feature in the current episode.
#[derive(Debug, Clone)]
pub struct NumericAccumulator {
    dims: usize,
    float32: bool,
    /// Row-major: `dims` values per frame.
    values: Vec<f64>,
}

impl NumericAccumulator {
    /// An accumulator of `dims` values a frame; `float32` features get
    /// float32 histogram edges.
    pub fn new(dims: usize, float32: bool) -> Self {
        Self {
            dims,
            float32,
            values: Vec::new(),
        }
    }

    /// Adds one frame's values (`dims` of them).
    pub fn push(&mut self, frame: &[f64]) {
        debug_assert_eq!(frame.len(), self.dims);
        self.values.extend_from_slice(frame);
    }

    /// The episode's statistics; the accumulator is emptied for the next.
    pub fn finish(&mut self) -> Stats {
        let n = self.values.len() / self.dims.max(1);
        let mut s = Stats {
            min: Vec::with_capacity(self.dims),
            max: Vec::with_capacity(self.dims),
            mean: Vec::with_capacity(self.dims),
            std: Vec::with_capacity(self.dims),
            count: n as u64,
            quantiles: vec![Vec::with_capacity(self.dims); QUANTILES.len()],
        };
        for d in 0..self.dims {
            let col = || self.values.iter().skip(d).step_by(self.dims).copied();
            let min = col().fold(f64::INFINITY, f64::min);
            let max = col().fold(f64::NEG_INFINITY, f64::max);
            let mean = col().sum::<f64>() / n as f64;
            let var = col().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
            let qs = if n < 2 {
                // LeRobot's basic statistics: quantiles are the mean.
                [mean; 5]
            } else {
                quantiles_of(
                    &mut col().map(|v| (v, 1.0)),
                    min,
                    max,
                    n as f64,
                    self.float32,
                )
            };
            s.min.push(min);
            s.max.push(max);
            s.mean.push(mean);
            s.std.push(var.sqrt());
            for (q, v) in s.quantiles.iter_mut().zip(qs) {
                q.push(v);
            }
        }
        self.values.clear();
        s
    }
}

/// The pixel values of one camera in the current episode: a histogram of
/// the 256 values per channel, over every frame (downsampled as LeRobot
/// downsamples: every `k`-th pixel and row of frames of 300 pixels a side or
/// more, `k = longer side / 150`).
#[derive(Debug, Clone)]
pub struct ImageAccumulator {
    counts: [[u64; 256]; 3],
    frames: u64,
}

impl Default for ImageAccumulator {
    fn default() -> Self {
        Self {
            counts: [[0; 256]; 3],
            frames: 0,
        }
    }
}

/// The step of LeRobot's downsampling of a `width` x `height` frame.
pub fn downsample_step(width: u32, height: u32) -> usize {
    if width.max(height) < 300 {
        return 1;
    }
    let longer = if width > height { width } else { height };
    (longer / 150).max(1) as usize
}

impl ImageAccumulator {
    /// Adds an `rgb8` frame.
    pub fn push_rgb8(&mut self, rgb: &[u8], width: u32, height: u32) {
        let k = downsample_step(width, height);
        let row = width as usize * 3;
        for line in rgb.chunks_exact(row).step_by(k) {
            for px in line.chunks_exact(3).step_by(k) {
                for (counts, v) in self.counts.iter_mut().zip(px) {
                    counts[*v as usize] += 1;
                }
            }
        }
        self.frames += 1;
    }

    /// The episode's statistics in [0, 1] (values / 255); `count` is the
    /// number of frames. Emptied for the next episode.
    pub fn finish(&mut self) -> Stats {
        let mut s = Stats {
            min: vec![],
            max: vec![],
            mean: vec![],
            std: vec![],
            count: self.frames,
            quantiles: vec![vec![]; QUANTILES.len()],
        };
        for hist in &self.counts {
            let present = || (0..256).filter(|&v| hist[v] > 0);
            let min = present().next().unwrap_or(0) as f64;
            let max = present().next_back().unwrap_or(0) as f64;
            let n: u64 = hist.iter().sum();
            let nf = n.max(1) as f64;
            let mean = present().map(|v| v as f64 * hist[v] as f64).sum::<f64>() / nf;
            let var = present()
                .map(|v| (v as f64 - mean).powi(2) * hist[v] as f64)
                .sum::<f64>()
                / nf;
            let qs = if n < 2 {
                [mean; 5]
            } else {
                let mut it = present().map(|v| (v as f64, hist[v] as f64));
                quantiles_of(&mut it, min, max, n as f64, true)
            };
            s.min.push(min / 255.0);
            s.max.push(max / 255.0);
            s.mean.push(mean / 255.0);
            s.std.push(var.sqrt() / 255.0);
            for (q, v) in s.quantiles.iter_mut().zip(qs) {
                q.push(v / 255.0);
            }
        }
        *self = Self::default();
        s
    }
}

/// The dataset's statistics of a feature from its episodes' (LeRobot's
/// `aggregate_feature_stats`).
pub fn aggregate(episodes: &[Stats]) -> Option<Stats> {
    let first = episodes.first()?;
    let dims = first.mean.len();
    let total: u64 = episodes.iter().map(|s| s.count).sum();
    let t = total.max(1) as f64;
    let mut out = Stats {
        min: vec![f64::INFINITY; dims],
        max: vec![f64::NEG_INFINITY; dims],
        mean: vec![0.0; dims],
        std: vec![0.0; dims],
        count: total,
        quantiles: vec![vec![0.0; dims]; QUANTILES.len()],
    };
    for s in episodes {
        let w = s.count as f64;
        for d in 0..dims {
            out.min[d] = out.min[d].min(s.min[d]);
            out.max[d] = out.max[d].max(s.max[d]);
            out.mean[d] += s.mean[d] * w / t;
            for (q, sq) in out.quantiles.iter_mut().zip(&s.quantiles) {
                q[d] += sq[d] * w / t;
            }
        }
    }
    for s in episodes {
        let w = s.count as f64;
        for d in 0..dims {
            let delta = s.mean[d] - out.mean[d];
            out.std[d] += (s.std[d] * s.std[d] + delta * delta) * w / t;
        }
    }
    for v in &mut out.std {
        *v = v.sqrt();
    }
    Some(out)
}

impl Stats {
    /// The statistics as LeRobot's JSON: lists per dimension, images as
    /// `[[[v]], [[v]], [[v]]]` (channels, 1, 1).
    pub fn to_json(&self, image: bool) -> Value {
        let list = |v: &[f64]| -> Value {
            if image {
                Value::Array(v.iter().map(|x| json!([[x]])).collect())
            } else {
                json!(v)
            }
        };
        let mut m = serde_json::Map::new();
        m.insert("min".into(), list(&self.min));
        m.insert("max".into(), list(&self.max));
        m.insert("mean".into(), list(&self.mean));
        m.insert("std".into(), list(&self.std));
        m.insert("count".into(), json!([self.count]));
        for ((_, key), q) in QUANTILES.iter().zip(&self.quantiles) {
            m.insert((*key).into(), list(q));
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_statistics_match_lerobot() {
        // LeRobot's own output for frames 0..10 of a float32 feature
        // [i, 0, 1]: its statistics of the first column.
        let mut acc = NumericAccumulator::new(3, true);
        for i in 0..10 {
            acc.push(&[f64::from(i), 0.0, 1.0]);
        }
        let s = acc.finish();
        assert_eq!(
            (s.min[0], s.max[0], s.mean[0], s.count),
            (0.0, 9.0, 4.5, 10)
        );
        assert!((s.std[0] - 2.872281323269).abs() < 1e-9);
        let q: Vec<f64> = s.quantiles.iter().map(|q| q[0]).collect();
        let lerobot = [
            -1.000000013351432e-10,
            -1.000000013351432e-10,
            4.001399993896484,
            8.000999450683594,
            8.999819946289062,
        ];
        for (a, b) in q.iter().zip(lerobot) {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1e-9), "{q:?}");
        }
        assert_eq!(s.quantiles[2][2], 1.0);
    }

    #[test]
    fn image_statistics_are_per_channel_in_unit_range() {
        let mut acc = ImageAccumulator::default();
        for i in 0..10u8 {
            acc.push_rgb8(&[i * 10; 2 * 2 * 3], 2, 2);
        }
        let s = acc.finish();
        assert_eq!(s.count, 10);
        assert_eq!(s.max[0], 90.0 / 255.0);
        assert!((s.mean[1] - 45.0 / 255.0).abs() < 1e-12);
    }

    #[test]
    fn aggregation_pools_episodes() {
        let mut acc = NumericAccumulator::new(1, false);
        let mut eps = Vec::new();
        for range in [0..4, 4..10] {
            for i in range {
                acc.push(&[f64::from(i)]);
            }
            eps.push(acc.finish());
        }
        let all = aggregate(&eps).unwrap();
        assert_eq!(
            (all.min[0], all.max[0], all.mean[0], all.count),
            (0.0, 9.0, 4.5, 10)
        );
        assert!((all.std[0] - 2.872281323269).abs() < 1e-9);
    }
}
