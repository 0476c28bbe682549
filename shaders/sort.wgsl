// Stable LSD radix sort of (64-bit key, u32 value) pairs, RADIX_BITS-bit
// digits, driven by src/tree/sort.rs. Keys are vec2<u32>: x = high 32 bits,
// y = low 32 bits. Plain WebGPU: no subgroup operations, workgroups of
// SORT_THREADS = RADIX invocations (one per digit in the bin-wise steps).
//
// The pairs are cut into blocks of BLOCK_KEYS consecutive pairs. One digit
// pass is three dispatches (reduce, then scan, then scatter):
// 1. count_digits: block b counts its digits into
//    block_offsets[d * num_blocks + b] (the [digit][block] table).
// 2. scan_digit_rows: workgroup d turns row d of the table into exclusive
//    prefix sums over the blocks, and writes the row total to digit_totals[d]
//    (scan_digit_rows_serial: one workgroup, a row per invocation, where
//    rows are short).
// 3. scatter: block b starts digit d at (all pairs of smaller digits) +
//    (pairs of digit d in earlier blocks), then ranks its pairs stably in
//    rounds of SORT_THREADS and writes them to the other buffer pair.
// The [digit][block] order of the table is what makes the sort stable: the
// pairs of one digit land block by block, in block order.

@group(0) @binding(0) var<uniform> params: SortParams;
@group(0) @binding(1) var<storage, read> src_keys: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> src_values: array<u32>;
@group(0) @binding(3) var<storage, read_write> block_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> digit_totals: array<u32>;
@group(0) @binding(5) var<storage, read_write> dst_keys: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> dst_values: array<u32>;

// Digit counts of one block (count_digits).
var<workgroup> block_histogram: array<atomic<u32>, RADIX>;
// Operand and result of workgroup_exclusive_scan.
var<workgroup> scan_buffer: array<u32, SORT_THREADS>;
// scatter: where the next pair of each digit goes in the output.
var<workgroup> digit_next: array<u32, RADIX>;
// scatter: for each digit, a SORT_THREADS-bit mask of the invocations
// holding a pair of that digit in the current round (MASK_WORDS words each).
var<workgroup> digit_masks: array<atomic<u32>, RADIX * MASK_WORDS>;

// The digit of this pass. A digit never straddles the two halves because
// RADIX_BITS divides 32; digit_mask cuts the top digit to key_bits.
fn digit_of(key: vec2<u32>) -> u32 {
    let half = select(key.y, key.x, params.shift >= 32u);
    return (half >> (params.shift & 31u)) & params.digit_mask;
}

// Exclusive prefix sum of `value` over the workgroup (x) and the workgroup
// total (y). Hillis–Steele in workgroup memory; must be called by every
// invocation (it contains barriers).
fn workgroup_exclusive_scan(lid: u32, value: u32) -> vec2<u32> {
    scan_buffer[lid] = value;
    workgroupBarrier();
    for (var offset = 1u; offset < SORT_THREADS; offset <<= 1u) {
        var left = 0u;
        if (lid >= offset) {
            left = scan_buffer[lid - offset];
        }
        workgroupBarrier();
        scan_buffer[lid] += left;
        workgroupBarrier();
    }
    let inclusive = scan_buffer[lid];
    let total = scan_buffer[SORT_THREADS - 1u];
    // The buffer may be rewritten by the next call only after every
    // invocation has read its result.
    workgroupBarrier();
    return vec2<u32>(inclusive - value, total);
}

@compute @workgroup_size(SORT_THREADS)
fn count_digits(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    if (block >= params.num_blocks) {
        return;
    }
    atomicStore(&block_histogram[lid], 0u);
    workgroupBarrier();
    let first = block * BLOCK_KEYS;
    // Strided by SORT_THREADS so each round's loads are contiguous.
    for (var round = 0u; round < KEYS_PER_THREAD; round++) {
        let i = first + round * SORT_THREADS + lid;
        if (i < params.n) {
            atomicAdd(&block_histogram[digit_of(src_keys[i])], 1u);
        }
    }
    workgroupBarrier();
    block_offsets[lid * params.num_blocks + block] = atomicLoad(&block_histogram[lid]);
}

@compute @workgroup_size(SORT_THREADS)
fn scan_digit_rows(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let digit = wid.x;
    let num_blocks = params.num_blocks;
    let row = digit * num_blocks;
    // Rows longer than a workgroup are scanned in chunks of SORT_THREADS
    // blocks, carrying the running total (identical in every invocation).
    var carry = 0u;
    for (var chunk = 0u; chunk < num_blocks; chunk += SORT_THREADS) {
        let block = chunk + lid;
        var count = 0u;
        if (block < num_blocks) {
            count = block_offsets[row + block];
        }
        let scan = workgroup_exclusive_scan(lid, count);
        if (block < num_blocks) {
            block_offsets[row + block] = carry + scan.x;
        }
        carry += scan.y;
    }
    if (lid == 0u) {
        digit_totals[digit] = carry;
    }
}

// The same for short rows (few blocks): invocation d scans row d alone,
// with no barriers. One workgroup instead of RADIX, each with a barrier
// per scan step: the barrier-heavy version costs ~1 ms per workgroup on
// software WebGPU (SwiftShader), which made small sorts take seconds.
@compute @workgroup_size(SORT_THREADS)
fn scan_digit_rows_serial(@builtin(local_invocation_index) lid: u32) {
    let row = lid * params.num_blocks;
    var carry = 0u;
    for (var block = 0u; block < params.num_blocks; block++) {
        let count = block_offsets[row + block];
        block_offsets[row + block] = carry;
        carry += count;
    }
    digit_totals[lid] = carry;
}

@compute @workgroup_size(SORT_THREADS)
fn scatter(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    if (block >= params.num_blocks) {
        return;
    }
    // Invocation lid stands for digit lid here: where this block's pairs of
    // that digit start in the output.
    let smaller_digits = workgroup_exclusive_scan(lid, digit_totals[lid]).x;
    digit_next[lid] = smaller_digits + block_offsets[lid * params.num_blocks + block];
    for (var w = 0u; w < MASK_WORDS; w++) {
        atomicStore(&digit_masks[lid * MASK_WORDS + w], 0u);
    }
    workgroupBarrier();

    // Round r holds pairs first + r * SORT_THREADS + lid: rounds in order,
    // and within a round invocations in order, is the input order. All
    // loads are issued up front so their latencies overlap instead of
    // being paid once per round between barriers.
    let first = block * BLOCK_KEYS;
    var round_keys: array<vec2<u32>, KEYS_PER_THREAD>;
    var round_values: array<u32, KEYS_PER_THREAD>;
    for (var round = 0u; round < KEYS_PER_THREAD; round++) {
        let i = first + round * SORT_THREADS + lid;
        if (i < params.n) {
            round_keys[round] = src_keys[i];
            round_values[round] = src_values[i];
        }
    }

    let my_word = lid / 32u;
    let my_bit = 1u << (lid % 32u);
    for (var round = 0u; round < KEYS_PER_THREAD; round++) {
        let valid = first + round * SORT_THREADS + lid < params.n;
        let key = round_keys[round];
        let value = round_values[round];
        var digit = 0u;
        if (valid) {
            digit = digit_of(key);
            atomicOr(&digit_masks[digit * MASK_WORDS + my_word], my_bit);
        }
        workgroupBarrier();
        // Rank among this round's pairs of the same digit = invocations
        // below lid in that digit's mask.
        var rank = 0u;
        var count = 0u;
        if (valid) {
            for (var w = 0u; w < MASK_WORDS; w++) {
                let mask = atomicLoad(&digit_masks[digit * MASK_WORDS + w]);
                let ones = countOneBits(mask);
                count += ones;
                if (w < my_word) {
                    rank += ones;
                } else if (w == my_word) {
                    rank += countOneBits(mask & (my_bit - 1u));
                }
            }
            let dst = digit_next[digit] + rank;
            dst_keys[dst] = key;
            dst_values[dst] = value;
        }
        workgroupBarrier();
        // The last pair of each digit advances that digit's position and
        // clears its mask for the next round (everyone has read both).
        if (valid && rank + 1u == count) {
            digit_next[digit] += count;
            for (var w = 0u; w < MASK_WORDS; w++) {
                atomicStore(&digit_masks[digit * MASK_WORDS + w], 0u);
            }
        }
        workgroupBarrier();
    }
}
