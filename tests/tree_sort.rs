//! The GPU radix sort against its CPU twin: random 64-bit keys at awkward
//! sizes, many equal keys (stability), fewer significant bits (skipped
//! passes, a partial top digit, odd pass counts), buffers longer than n.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::gpu::buffers::{read_vec, storage_buffer};
use webgrav::gpu::timing::PhaseTimer;
use webgrav::gpu::GpuContext;
use webgrav::tree::sort::{sort_cpu, RadixSort, BLOCK_KEYS};

/// splitmix64: a tiny deterministic generator, enough for test keys.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn split(key: u64) -> [u32; 2] {
    [(key >> 32) as u32, key as u32]
}

/// `n` random keys with only the low `key_bits` bits set.
fn random_keys(n: usize, key_bits: u32, seed: u64) -> Vec<[u32; 2]> {
    let mask = if key_bits == 64 {
        u64::MAX
    } else {
        (1u64 << key_bits) - 1
    };
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| split(rng.next() & mask)).collect()
}

/// Runs `sort` and reads back its whole key and value buffers.
fn sorted(
    ctx: &GpuContext,
    sort: &RadixSort,
    (keys, values): (&wgpu::Buffer, &wgpu::Buffer),
) -> (Vec<[u32; 2]>, Vec<u32>) {
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("test sort"),
        });
    sort.encode(&ctx.device, &mut encoder, None);
    ctx.queue.submit(Some(encoder.finish()));
    (
        pollster::block_on(read_vec(&ctx.device, &ctx.queue, keys)).unwrap(),
        pollster::block_on(read_vec(&ctx.device, &ctx.queue, values)).unwrap(),
    )
}

/// Sorts the first `keys.len()` pairs of buffers that hold `extra` more
/// elements on the GPU; returns the whole buffers.
fn gpu_sort(
    ctx: &GpuContext,
    keys: &[[u32; 2]],
    values: &[u32],
    key_bits: u32,
    extra: usize,
) -> (Vec<[u32; 2]>, Vec<u32>) {
    let n = keys.len();
    let mut key_data = keys.to_vec();
    let mut value_data = values.to_vec();
    // Tail elements the sort must leave alone.
    key_data.extend((0..extra).map(|k| [0xdead_beef, k as u32]));
    value_data.extend((0..extra).map(|k| 0xffff_0000 + k as u32));
    let key_buf = storage_buffer(&ctx.device, "test keys", &key_data);
    let value_buf = storage_buffer(&ctx.device, "test values", &value_data);
    let sort = RadixSort::new(&ctx.device, &key_buf, &value_buf, n as u32, key_bits);
    let (sorted_keys, sorted_values) = sorted(ctx, &sort, (&key_buf, &value_buf));
    let tail_keys = &sorted_keys[n..];
    let tail_values = &sorted_values[n..];
    assert_eq!(tail_keys, &key_data[n..], "n = {n}: keys beyond n changed");
    assert_eq!(
        tail_values,
        &value_data[n..],
        "n = {n}: values beyond n changed"
    );
    (sorted_keys[..n].to_vec(), sorted_values[..n].to_vec())
}

/// Sorts keys with values 0..n on the GPU and checks the result against
/// `sort_cpu` exactly, and that the values are a permutation of 0..n.
fn check_sort(ctx: &GpuContext, keys: &[[u32; 2]], key_bits: u32, extra: usize) -> Vec<u32> {
    let n = keys.len();
    let values: Vec<u32> = (0..n as u32).collect();
    let start = std::time::Instant::now();
    let (gpu_keys, gpu_values) = gpu_sort(ctx, keys, &values, key_bits, extra);
    eprintln!(
        "n = {n}, key_bits = {key_bits}: GPU sort and read-back {:?}",
        start.elapsed()
    );
    let (cpu_keys, cpu_values) = sort_cpu(keys, &values);
    let first_key_diff = gpu_keys.iter().zip(&cpu_keys).position(|(g, c)| g != c);
    assert_eq!(
        first_key_diff, None,
        "n = {n}, key_bits = {key_bits}: first wrong key"
    );
    let first_value_diff = gpu_values.iter().zip(&cpu_values).position(|(g, c)| g != c);
    assert_eq!(
        first_value_diff, None,
        "n = {n}, key_bits = {key_bits}: first wrong value"
    );
    let mut seen = gpu_values.clone();
    seen.sort_unstable();
    assert!(
        seen.iter().copied().eq(0..n as u32),
        "n = {n}: values are not a permutation of 0..n"
    );
    gpu_values
}

// Sizes that are not powers of two nor multiples of the block, from a
// single partial block to about 50 blocks.
#[test]
fn sorts_random_64_bit_keys() {
    let ctx = common::gpu();
    for (k, n) in [1usize, 2, 1000, 12_345, 200_003].into_iter().enumerate() {
        check_sort(&ctx, &random_keys(n, 64, 11 + k as u64), 64, 0);
    }
}

// Only three distinct keys, spread over every 32-bit half and digit: every
// block holds long runs of equal digits, so ranking within a round, across
// rounds and across blocks must all keep input order.
#[test]
fn equal_keys_keep_input_order() {
    let ctx = common::gpu();
    let n = 100_000;
    let distinct = [
        0x8000_0000_0000_0001u64,
        0x0123_4567_89ab_cdef,
        0x8000_0000_0000_0000,
    ];
    let mut rng = SplitMix64(5);
    let keys: Vec<[u32; 2]> = (0..n)
        .map(|_| split(distinct[(rng.next() % 3) as usize]))
        .collect();
    let values = check_sort(&ctx, &keys, 64, 0);
    // Explicitly: values (input positions) increase within each run of equal keys.
    let (sorted_keys, _) = sort_cpu(&keys, &values);
    for i in 1..n {
        if sorted_keys[i] == sorted_keys[i - 1] {
            assert!(
                values[i] > values[i - 1],
                "equal keys out of input order at {i}"
            );
        }
    }
}

// All keys equal: the whole input is one digit in every pass.
#[test]
fn all_keys_equal() {
    let ctx = common::gpu();
    let keys = vec![split(0x0f0f_0f0f_f0f0_f0f0); 3 * BLOCK_KEYS as usize + 17];
    check_sort(&ctx, &keys, 64, 0);
}

// Fewer significant bits: 63 and 30 (the Morton-key widths of the tree;
// 30 bits: 4 passes, the top one of 6 bits), 20 (3 passes: odd, so the
// result is copied back), 1 (a single 1-bit pass). Bits above key_bits
// are zero, as the caller guarantees.
#[test]
fn sorts_fewer_key_bits() {
    let ctx = common::gpu();
    for (k, key_bits) in [63u32, 30, 20, 1].into_iter().enumerate() {
        check_sort(
            &ctx,
            &random_keys(54_321, key_bits, 100 + k as u64),
            key_bits,
            0,
        );
    }
}

// Buffers longer than n (as a tree code with spare capacity has): only the
// first n pairs move, with an even and an odd pass count.
#[test]
fn leaves_elements_beyond_n_alone() {
    let ctx = common::gpu();
    for key_bits in [64u32, 24] {
        check_sort(&ctx, &random_keys(9_999, key_bits, 77), key_bits, 1_000);
    }
}

// More than SORT_THREADS blocks, so the table rows are scanned in several
// chunks with a carry; 12 bits keep it to two passes on lavapipe.
#[test]
fn scans_long_digit_rows() {
    let ctx = common::gpu();
    let n = 300 * BLOCK_KEYS as usize + 123;
    check_sort(&ctx, &random_keys(n, 12, 9), 12, 0);
}

// The bits above key_bits are ignored by the GPU sort: pairs that differ
// only there keep their input order.
#[test]
fn ignores_bits_above_key_bits() {
    let ctx = common::gpu();
    let n = 5_000;
    let keys = random_keys(n, 64, 3);
    let values: Vec<u32> = (0..n as u32).collect();
    let (gpu_keys, gpu_values) = gpu_sort(&ctx, &keys, &values, 12, 0);
    let low = |k: &[u32; 2]| [0, k[1] & 0xfff];
    let masked: Vec<[u32; 2]> = keys.iter().map(low).collect();
    let (_, cpu_values) = sort_cpu(&masked, &values);
    assert_eq!(gpu_values, cpu_values);
    let expected_keys: Vec<[u32; 2]> = cpu_values.iter().map(|&v| keys[v as usize]).collect();
    assert_eq!(gpu_keys, expected_keys);
}

// Sorting only the high bits (`encode_high_bits`, as the tree does with
// its levels fitted): the passes over digits wholly below the ignored
// bits are skipped, so the result is the stable sort by the key with
// those digits cleared. 63-bit keys, 21 ignored bits (2 passes skipped,
// 6 run: even), 45 (5 skipped, 3 run: odd, copied back) and 63 (7
// skipped: the top digit alone).
#[test]
fn sorts_only_the_high_bits_asked_for() {
    let ctx = common::gpu();
    let n = 20_000;
    for (k, ignored) in [21u32, 45, 63].into_iter().enumerate() {
        // Few distinct high parts, so that many keys tie above the
        // ignored digits and their input order shows.
        let mut rng = SplitMix64(40 + k as u64);
        let keys: Vec<[u32; 2]> = (0..n)
            .map(|_| {
                let high = (rng.next() % 97) << 55;
                split((high | (rng.next() >> 9)) & ((1u64 << 63) - 1))
            })
            .collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let key_buf = storage_buffer(&ctx.device, "test keys", &keys);
        let value_buf = storage_buffer(&ctx.device, "test values", &values);
        let sort = RadixSort::new(&ctx.device, &key_buf, &value_buf, n as u32, 63);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        sort.encode_high_bits(&mut encoder, ignored, None);
        ctx.queue.submit(Some(encoder.finish()));
        let gpu_keys: Vec<[u32; 2]> =
            pollster::block_on(read_vec(&ctx.device, &ctx.queue, &key_buf)).unwrap();
        let gpu_values: Vec<u32> =
            pollster::block_on(read_vec(&ctx.device, &ctx.queue, &value_buf)).unwrap();
        let sorted_from = ignored / 8 * 8;
        let high =
            |k: &[u32; 2]| split(((k[0] as u64) << 32 | k[1] as u64) >> sorted_from << sorted_from);
        let masked: Vec<[u32; 2]> = keys.iter().map(high).collect();
        let (_, cpu_values) = sort_cpu(&masked, &values);
        assert_eq!(
            gpu_values.iter().zip(&cpu_values).position(|(g, c)| g != c),
            None,
            "{ignored} ignored bits: first value out of place"
        );
        let expected_keys: Vec<[u32; 2]> = cpu_values.iter().map(|&v| keys[v as usize]).collect();
        assert_eq!(gpu_keys, expected_keys, "{ignored} ignored bits: keys");
        // Not vacuous: the input was out of order in the sorted bits.
        assert_ne!(
            cpu_values, values,
            "{ignored} ignored bits: input already sorted"
        );
    }
}

// GPU time of sorting 2^20 random pairs with 64 and 30 significant bits
// (median of 20 sorts, timestamp queries). Not an assertion: run on a real
// GPU with `cargo test --release --test tree_sort -- --ignored --nocapture`.
#[test]
#[ignore]
fn sort_timing() {
    let ctx = common::gpu();
    assert!(
        ctx.has_timestamps,
        "timestamp queries needed: {}",
        ctx.adapter_summary()
    );
    let n = 1usize << 20;
    for key_bits in [64u32, 30] {
        let keys = random_keys(n, key_bits, 1);
        let values: Vec<u32> = (0..n as u32).collect();
        let key_buf = storage_buffer(&ctx.device, "timing keys", &keys);
        let value_buf = storage_buffer(&ctx.device, "timing values", &values);
        let sort = RadixSort::new(&ctx.device, &key_buf, &value_buf, n as u32, key_bits);
        let mut timer = PhaseTimer::new(&ctx, 1);
        let mut times = Vec::new();
        for _ in 0..20 {
            // Unsorted input every time: sorted input scatters more coherently.
            ctx.queue
                .write_buffer(&key_buf, 0, bytemuck::cast_slice(&keys));
            ctx.queue
                .write_buffer(&value_buf, 0, bytemuck::cast_slice(&values));
            timer.reset();
            let mut encoder = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("timing sort"),
                });
            sort.encode(&ctx.device, &mut encoder, Some(&mut timer));
            timer.resolve(&mut encoder);
            ctx.queue.submit(Some(encoder.finish()));
            let phases = pollster::block_on(timer.read(&ctx)).unwrap();
            times.push(phases[0].1);
        }
        let (sorted_keys, sorted_values) = sort_cpu(&keys, &values);
        let gpu_keys: Vec<[u32; 2]> =
            pollster::block_on(read_vec(&ctx.device, &ctx.queue, &key_buf)).unwrap();
        let gpu_values: Vec<u32> =
            pollster::block_on(read_vec(&ctx.device, &ctx.queue, &value_buf)).unwrap();
        assert!(
            gpu_keys == sorted_keys && gpu_values == sorted_values,
            "wrong result"
        );
        times.sort_by(f64::total_cmp);
        eprintln!(
            "{}: n = {n}, key_bits = {key_bits}, {} passes: sort {:.3} ms (median of 20, min {:.3})",
            ctx.adapter_summary(),
            sort.passes(),
            times[times.len() / 2],
            times[0]
        );
    }
}

/// A sort made with room (`RadixSort::with_room`) and resized keeps its
/// buffers and sorts each new count as a sort made for it does: fewer
/// pairs (the serial scan's size), then more again, up to the room (a
/// parallel run's redraw changes a rank's count so).
#[test]
fn a_resized_sort_sorts_each_count_it_is_given() {
    let ctx = common::gpu();
    let held = 3 * BLOCK_KEYS as usize * 64 + 17;
    let keys = random_keys(held, 64, 11);
    let values: Vec<u32> = (0..held as u32).collect();
    let key_buf = storage_buffer(&ctx.device, "test keys", &keys);
    let value_buf = storage_buffer(&ctx.device, "test values", &values);
    let mut sort = RadixSort::with_room(&ctx.device, (&key_buf, &value_buf), (5, held as u32), 64);
    assert_eq!(sort.held(), held as u32);
    for n in [1000, held, 333, BLOCK_KEYS as usize * 129 + 1] {
        ctx.queue
            .write_buffer(&key_buf, 0, bytemuck::cast_slice(&keys));
        ctx.queue
            .write_buffer(&value_buf, 0, bytemuck::cast_slice(&values));
        sort.resize(&ctx.device, n as u32);
        let (got_keys, got_values) = sorted(&ctx, &sort, (&key_buf, &value_buf));
        let (want_keys, want_values) = sort_cpu(&keys[..n], &values[..n]);
        assert_eq!(&got_keys[..n], &want_keys[..], "n = {n}");
        assert_eq!(&got_values[..n], &want_values[..], "n = {n}");
        assert_eq!(&got_keys[n..], &keys[n..], "n = {n}: pairs past n moved");
    }
}

/// A sort cannot be resized past the room it was made with.
#[test]
#[should_panic(expected = "room for 64 pairs, 65 to sort")]
fn a_sort_is_not_resized_past_its_room() {
    let ctx = common::gpu();
    let keys = random_keys(64, 64, 1);
    let key_buf = storage_buffer(&ctx.device, "test keys", &keys);
    let value_buf = storage_buffer(&ctx.device, "test values", &[0u32; 64]);
    let mut sort = RadixSort::with_room(&ctx.device, (&key_buf, &value_buf), (64, 64), 64);
    sort.resize(&ctx.device, 65);
}
