//! The exposure passes (drive `shaders/exposure.wgsl`): a log histogram of
//! the frame's lit pixels and the values at two of its quantiles, all on
//! the GPU; `expose` is their CPU twin.

use super::{BINS_PER_OCTAVE, HIST_BINS};
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::{Exposure, ToneUniform};

const EXPOSURE_WGSL: &str = include_str!("../../shaders/exposure.wgsl");

/// The composed WGSL of the exposure passes.
pub fn wgsl() -> String {
    super::compose(EXPOSURE_WGSL)
}

/// The binding contract of `shaders/exposure.wgsl` (both entry points).
pub const BINDINGS: &[Slot] = &[
    ("tone", Binding::Uniform),
    ("accum", Binding::StorageRead),
    ("hist", Binding::StorageReadWrite),
    ("exposure", Binding::StorageReadWrite),
];

pub(crate) struct ExposurePasses {
    pub histogram: Kernel,
    pub expose: Kernel,
}

impl ExposurePasses {
    pub fn new(device: &wgpu::Device) -> Self {
        let module = ShaderSource::new("render exposure", wgsl());
        Self {
            histogram: Kernel::from_module(
                device,
                "render histogram",
                &module,
                "histogram",
                BINDINGS,
            ),
            expose: Kernel::from_module(device, "render expose", &module, "expose", BINDINGS),
        }
    }
}

/// The histogram bin of a pixel value (accumulation units; values below
/// one are unlit).
pub fn bin_of(value: f64) -> Option<usize> {
    (value >= 1.0).then(|| {
        ((BINS_PER_OCTAVE as f64 * value.log2()).floor() as usize).min(HIST_BINS as usize - 1)
    })
}

/// What `expose` computes from a histogram, in f64 (the CPU twin of the
/// `expose` entry point).
pub fn expose(hist: &[u32], tone: &ToneUniform) -> Exposure {
    let at_bin = |x: f64| (x / BINS_PER_OCTAVE as f64).exp2();
    let light = tone.quantity == 0;
    let weight =
        |bin: usize, count: u32| count as f64 * if light { at_bin(bin as f64 + 0.5) } else { 1.0 };
    let total: u64 = hist.iter().map(|&c| c as u64).sum();
    let total_weight: f64 = hist.iter().enumerate().map(|(b, &c)| weight(b, c)).sum();
    let mut e = Exposure {
        lo: 1.0,
        hi: 1.0,
        lit: total as u32,
        top: 1.0,
    };
    let (mut before, mut before_weight) = (0u64, 0.0);
    for (bin, &count) in hist.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let w = weight(bin, count);
        let after = before + count as u64;
        let lo_rank = tone.lo_quantile as f64 * total_weight;
        if lo_rank > before_weight && lo_rank <= before_weight + w {
            e.lo = at_bin(bin as f64 + ((lo_rank - before_weight) / w).clamp(0.0, 1.0)) as f32;
        }
        let hi_rank = tone.hi_quantile as f64 * total as f64;
        if hi_rank > before as f64 && hi_rank <= after as f64 {
            let frac = (hi_rank - before as f64) / count as f64;
            e.hi = at_bin(bin as f64 + frac.clamp(0.0, 1.0)) as f32;
        }
        if after == total {
            e.top = at_bin(bin as f64 + 1.0) as f32;
        }
        before = after;
        before_weight += w;
    }
    if tone.fixed_hi > 0.0 {
        e.lo = tone.fixed_lo;
        e.hi = tone.fixed_hi;
    }
    e
}
