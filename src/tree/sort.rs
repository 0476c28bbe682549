//! GPU radix sort of (64-bit key, u32 value) pairs (drives `shaders/sort.wgsl`)
//! and its CPU twin `sort_cpu`.
//!
//! A stable LSD radix sort with `RADIX_BITS`-bit digits on plain WebGPU (no
//! subgroups, no device-wide barrier inside a dispatch). Each digit pass is
//! three dispatches: per-block digit counts, an exclusive scan of the
//! `[digit][block]` count table, and a stable scatter (see the WGSL header).
//! Passes alternate between the caller's buffers and a scratch pair; an odd
//! pass count ends with a copy back, so the result is always in the caller's
//! buffers. A caller that only needs the keys' high bits in order (the tree,
//! whose recorded levels are fitted to the tree's depth) skips the passes
//! over lower digits (`encode_high_bits`): pairs equal in the bits sorted
//! keep their input order.

use crate::gpu::buffers::{empty_storage_buffer, uniform_buffer};
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, ShaderSource, Slot};
use crate::gpu::layout::SortParams;
use crate::gpu::shader::compose;
use crate::gpu::timing::{timed_pass, PhaseTimer};

/// Bits per digit: one pass per digit.
pub const RADIX_BITS: u32 = 8;
/// Buckets per digit.
pub const RADIX: u32 = 1 << RADIX_BITS;
/// Invocations per workgroup of every sort kernel. Equal to `RADIX`: the
/// bin-wise steps (clearing, writing and scanning counts) give one
/// invocation to each digit.
pub const SORT_THREADS: u32 = RADIX;
/// Pairs each invocation handles per pass. Smaller blocks spread a pass
/// over more workgroups; larger ones keep the `[digit][block]` table (and its
/// scan) small. Measured on the H100 (the tree's 63-bit sort, ms at N =
/// 2^18 / 2^20 / 2^22): 4: 0.18 / 0.48 / 1.85; 8: 0.21 / 0.46 / 1.97; 16:
/// 0.33 / 0.52 / 2.33; 32: 0.69 / 0.66 / 2.56.
pub const KEYS_PER_THREAD: u32 = 4;
/// Consecutive pairs per block.
pub const BLOCK_KEYS: u32 = SORT_THREADS * KEYS_PER_THREAD;
/// u32 words of one digit's invocation mask in the scatter ranking.
const MASK_WORDS: u32 = SORT_THREADS / 32;
/// Up to this many blocks (N ≤ 128 × BLOCK_KEYS = 131,072) the `[digit][block]`
/// rows are scanned by one workgroup, one row per invocation, without
/// barriers (`scan_digit_rows_serial`); longer rows by a workgroup each.
pub const SERIAL_SCAN_MAX_BLOCKS: u32 = 128;

const SORT_WGSL: &str = include_str!("../../shaders/sort.wgsl");

/// Bytes of one key (`vec2<u32>`) and one value (`u32`).
const KEY_BYTES: u64 = 8;
const VALUE_BYTES: u64 = 4;

/// The composed WGSL of the sort kernels.
pub fn wgsl() -> String {
    compose(
        &[
            ("RADIX", RADIX),
            ("SORT_THREADS", SORT_THREADS),
            ("KEYS_PER_THREAD", KEYS_PER_THREAD),
            ("BLOCK_KEYS", BLOCK_KEYS),
            ("MASK_WORDS", MASK_WORDS),
        ],
        SORT_WGSL,
    )
}

/// The binding contract of `shaders/sort.wgsl`, shared by its three
/// kernels: params, source keys and values, the `[digit][block]` table, the
/// digit totals, destination keys and values.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("src_keys", Binding::StorageRead),
    ("src_values", Binding::StorageRead),
    ("block_offsets", Binding::StorageReadWrite),
    ("digit_totals", Binding::StorageReadWrite),
    ("dst_keys", Binding::StorageReadWrite),
    ("dst_values", Binding::StorageReadWrite),
];

/// Sorts `n` pairs in place: `keys` is `array<vec2<u32>>` in WGSL (`[u32; 2]`
/// in Rust, x = HIGH 32 bits, y = LOW 32 bits of the 64-bit key), `values`
/// is `array<u32>`. Stable.
pub struct RadixSort {
    count_digits: Kernel,
    scan_digit_rows: Kernel,
    scatter: Kernel,
    /// One bind group per digit pass, lowest digit first, for either
    /// parity of the first pass run: `pass_binds[s][p]` reads the caller's
    /// buffers when p % 2 == s and the scratch pair otherwise, so that the
    /// first pass run always reads the caller's buffers.
    pass_binds: [Vec<wgpu::BindGroup>; 2],
    keys: wgpu::Buffer,
    values: wgpu::Buffer,
    scratch: SortScratch,
    /// Workgroups of the per-block dispatches (split over y when needed).
    block_groups: (u32, u32),
    /// Workgroups of the row scan: RADIX, or 1 for the serial scan.
    scan_groups: u32,
    n: u32,
    key_bits: u32,
    scratch_bytes: u64,
}

/// The sort's own arrays, for up to `held` pairs.
#[derive(Clone)]
struct SortScratch {
    keys: wgpu::Buffer,
    values: wgpu::Buffer,
    /// The `[digit][block]` table.
    block_offsets: wgpu::Buffer,
    digit_totals: wgpu::Buffer,
    held: u32,
}

impl SortScratch {
    fn new(device: &wgpu::Device, held: u32) -> Self {
        // Zero-sized bindings are invalid: scratch buffers hold at least one
        // element even when there is nothing to sort.
        let scratch = |label: &str, bytes: u64| empty_storage_buffer(device, label, bytes.max(4));
        Self {
            keys: scratch("radix sort scratch keys", held as u64 * KEY_BYTES),
            values: scratch("radix sort scratch values", held as u64 * VALUE_BYTES),
            block_offsets: scratch(
                "radix sort block offsets",
                RADIX as u64 * held.div_ceil(BLOCK_KEYS) as u64 * 4,
            ),
            digit_totals: scratch("radix sort digit totals", RADIX as u64 * 4),
            held,
        }
    }

    fn bytes(&self) -> u64 {
        [
            &self.keys,
            &self.values,
            &self.block_offsets,
            &self.digit_totals,
        ]
        .iter()
        .map(|b| b.size())
        .sum()
    }
}

impl RadixSort {
    /// Binds to the given buffers (each must hold at least n elements; they
    /// need STORAGE | COPY_SRC | COPY_DST usage). `key_bits` (1..=64) is how
    /// many low bits of the key are significant: passes over higher bits are
    /// skipped, and bits above `key_bits` are ignored (pairs that differ only
    /// there keep their input order).
    pub fn new(
        device: &wgpu::Device,
        keys: &wgpu::Buffer,
        values: &wgpu::Buffer,
        n: u32,
        key_bits: u32,
    ) -> Self {
        Self::with_room(device, (keys, values), (n, n), key_bits)
    }

    /// `new` of `n` pairs with its scratch sized for `held` (at least `n`;
    /// the caller's buffers must hold as many), which `resize` keeps.
    pub fn with_room(
        device: &wgpu::Device,
        (keys, values): (&wgpu::Buffer, &wgpu::Buffer),
        (n, held): (u32, u32),
        key_bits: u32,
    ) -> Self {
        assert!(
            (1..=64).contains(&key_bits),
            "key_bits must be in 1..=64, got {key_bits}"
        );
        assert!(held >= n, "room for {held} pairs, {n} to sort");
        for (buffer, what, bytes) in [(keys, "keys", KEY_BYTES), (values, "values", VALUE_BYTES)] {
            let needed = held as u64 * bytes;
            assert!(
                buffer.size() >= needed,
                "{what} buffer holds {} bytes, {held} {what} need {needed}",
                buffer.size()
            );
        }
        let scratch = SortScratch::new(device, held);
        Self::bound(device, (keys, values), scratch, n, key_bits)
    }

    /// Sorts `n` pairs from now on (at most the room it was made with),
    /// keeping its buffers: a parallel run's redraw changes a rank's count.
    pub fn resize(&mut self, device: &wgpu::Device, n: u32) {
        assert!(
            n <= self.scratch.held,
            "room for {} pairs, {n} to sort",
            self.scratch.held
        );
        let (keys, values) = (self.keys.clone(), self.values.clone());
        *self = Self::bound(
            device,
            (&keys, &values),
            self.scratch.clone(),
            n,
            self.key_bits,
        );
    }

    /// Pairs the sort's buffers hold.
    pub fn held(&self) -> u32 {
        self.scratch.held
    }

    fn bound(
        device: &wgpu::Device,
        (keys, values): (&wgpu::Buffer, &wgpu::Buffer),
        scratch: SortScratch,
        n: u32,
        key_bits: u32,
    ) -> Self {
        let module = ShaderSource::new("radix sort", wgsl());
        let count_digits = Kernel::from_module(
            device,
            "radix sort count_digits",
            &module,
            "count_digits",
            BINDINGS,
        );
        let num_blocks = n.div_ceil(BLOCK_KEYS);
        let serial_scan = num_blocks <= SERIAL_SCAN_MAX_BLOCKS;
        let scan_digit_rows = Kernel::from_module(
            device,
            "radix sort scan_digit_rows",
            &module,
            if serial_scan {
                "scan_digit_rows_serial"
            } else {
                "scan_digit_rows"
            },
            BINDINGS,
        );
        let scatter =
            Kernel::from_module(device, "radix sort scatter", &module, "scatter", BINDINGS);

        // Nothing to sort: no passes (encode records nothing).
        let passes = if n == 0 {
            0
        } else {
            key_bits.div_ceil(RADIX_BITS)
        };
        let params: Vec<wgpu::Buffer> = (0..passes)
            .map(|pass| {
                let shift = pass * RADIX_BITS;
                let digit_bits = (key_bits - shift).min(RADIX_BITS);
                uniform_buffer(
                    device,
                    "radix sort pass params",
                    &SortParams {
                        n,
                        num_blocks,
                        shift,
                        digit_mask: (1 << digit_bits) - 1,
                    },
                )
            })
            .collect();
        let scratch_bytes = scratch.bytes() + params.iter().map(|p| p.size()).sum::<u64>();
        let binds_from = |parity: u32| -> Vec<wgpu::BindGroup> {
            params
                .iter()
                .enumerate()
                .map(|(pass, params)| {
                    let (src_keys, src_values, dst_keys, dst_values) = if pass as u32 % 2 == parity
                    {
                        (keys, values, &scratch.keys, &scratch.values)
                    } else {
                        (&scratch.keys, &scratch.values, keys, values)
                    };
                    // One bind group serves all three kernels: their layouts
                    // are identical (BINDINGS), hence compatible.
                    count_digits.bind(
                        device,
                        &[
                            params,
                            src_keys,
                            src_values,
                            &scratch.block_offsets,
                            &scratch.digit_totals,
                            dst_keys,
                            dst_values,
                        ],
                    )
                })
                .collect()
        };
        let pass_binds = [binds_from(0), binds_from(1)];

        Self {
            count_digits,
            scan_digit_rows,
            scatter,
            pass_binds,
            keys: keys.clone(),
            values: values.clone(),
            scratch,
            block_groups: dispatch_size(device, num_blocks, 1),
            scan_groups: if serial_scan { 1 } else { RADIX },
            n,
            key_bits,
            scratch_bytes,
        }
    }

    /// Records the whole sort into `encoder` (no CPU read-back, no waiting:
    /// works in the browser). Timestamps (if `timer` is given) under the
    /// phase label "sort". The device is not needed (dispatch sizes are fixed
    /// at construction); it is taken for symmetry with the other kernels.
    pub fn encode(
        &self,
        _device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        self.encode_high_bits(encoder, 0, timer);
    }

    /// Records a sort by the key bits from `ignored_low_bits` up: the passes
    /// over digits that lie wholly below it are skipped (a digit that
    /// straddles it is sorted whole). Pairs whose keys differ only in the
    /// skipped digits keep their input order.
    pub fn encode_high_bits(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        ignored_low_bits: u32,
        timer: Option<&mut PhaseTimer>,
    ) {
        let passes = self.passes();
        let first = (ignored_low_bits / RADIX_BITS).min(passes);
        if first == passes {
            return;
        }
        let binds = &self.pass_binds[first as usize % 2][first as usize..];
        {
            let mut pass = timed_pass(encoder, "sort", timer);
            // Each dispatch sees all writes of the previous one: WebGPU
            // orders dispatches of one pass that share writable storage.
            for bind in binds {
                self.count_digits
                    .dispatch(&mut pass, bind, self.block_groups);
                self.scan_digit_rows
                    .dispatch(&mut pass, bind, (self.scan_groups, 1));
                self.scatter.dispatch(&mut pass, bind, self.block_groups);
            }
        }
        if binds.len() % 2 == 1 {
            // An odd pass count leaves the result in the scratch pair.
            encoder.copy_buffer_to_buffer(
                &self.scratch.keys,
                0,
                &self.keys,
                0,
                self.n as u64 * KEY_BYTES,
            );
            encoder.copy_buffer_to_buffer(
                &self.scratch.values,
                0,
                &self.values,
                0,
                self.n as u64 * VALUE_BYTES,
            );
        }
    }

    /// Bytes of GPU scratch memory it allocated: the scratch key/value pair
    /// (12 bytes per pair), the `[digit][block]` table (1 KiB per block of
    /// `BLOCK_KEYS` pairs), the digit totals and the per-pass uniforms.
    pub fn scratch_bytes(&self) -> u64 {
        self.scratch_bytes
    }

    /// Digit passes recorded by `encode`: ceil(key_bits / RADIX_BITS), or 0
    /// when there is nothing to sort.
    pub fn passes(&self) -> u32 {
        self.pass_binds[0].len() as u32
    }
}

/// CPU twin used by tests: the same stable sort of (key, value) pairs, by
/// the full 64-bit key.
pub fn sort_cpu(keys: &[[u32; 2]], values: &[u32]) -> (Vec<[u32; 2]>, Vec<u32>) {
    assert_eq!(keys.len(), values.len(), "one value per key");
    let mut pairs: Vec<([u32; 2], u32)> =
        keys.iter().copied().zip(values.iter().copied()).collect();
    // [high, low] compares lexicographically, i.e. as the 64-bit key; the
    // standard sort is stable.
    pairs.sort_by_key(|&(key, _)| key);
    pairs.into_iter().unzip()
}
