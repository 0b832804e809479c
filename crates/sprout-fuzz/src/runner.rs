//! The driver: random inputs and mutations of seeds, each run under `catch_unwind`.

use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A fuzz target: something that takes arbitrary bytes and must never panic.
pub trait Target {
    /// The target's name on the command line.
    fn name(&self) -> &'static str;
    /// Well-formed inputs to mutate (may be empty: then inputs are random bytes only).
    fn seeds(&mut self) -> Vec<Vec<u8>>;
    /// Runs one input. A panic is a bug.
    fn run(&mut self, input: &[u8]);
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The target's name.
    pub target: String,
    /// Inputs run.
    pub iterations: u64,
    /// Wall time, in seconds.
    pub seconds: f64,
    /// The first input that panicked (hex), with the panic message, if any.
    pub panic: Option<(String, String)>,
}

impl Report {
    /// Inputs per second.
    pub fn rate(&self) -> f64 {
        self.iterations as f64 / self.seconds.max(1e-9)
    }
}

/// Boundary values written over random offsets: where parsers and arithmetic break.
const INTERESTING: [u64; 12] = [
    0,
    1,
    0x7f,
    0xff,
    0x7fff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x8000_0000,
    u64::MAX,
    u64::MAX - 1,
    1 << 63,
];

/// Longest random input, in bytes.
const MAX_LEN: usize = 1600;

/// One input: random bytes a quarter of the time, else a mutated seed.
fn next_input(rng: &mut ChaCha8Rng, seeds: &[Vec<u8>], out: &mut Vec<u8>) {
    out.clear();
    if seeds.is_empty() || rng.gen_ratio(1, 4) {
        let len = if rng.gen_bool(0.5) {
            rng.gen_range(0..64)
        } else {
            rng.gen_range(0..MAX_LEN)
        };
        out.extend((0..len).map(|_| rng.gen::<u8>()));
        return;
    }
    out.extend_from_slice(&seeds[rng.gen_range(0..seeds.len())]);
    let rounds = 1 + rng.gen_range(0..4);
    for _ in 0..rounds {
        match rng.gen_range(0..7) {
            // Flip a bit.
            0 if !out.is_empty() => {
                let i = rng.gen_range(0..out.len());
                out[i] ^= 1 << rng.gen_range(0..8);
            }
            // Set a byte.
            1 if !out.is_empty() => {
                let i = rng.gen_range(0..out.len());
                out[i] = rng.gen();
            }
            // A boundary integer of 1, 2, 4 or 8 bytes, big-endian, at a random offset.
            2 if !out.is_empty() => {
                let v = INTERESTING[rng.gen_range(0..INTERESTING.len())];
                let width = [1usize, 2, 4, 8][rng.gen_range(0..4)];
                let bytes = v.to_be_bytes();
                let at = rng.gen_range(0..out.len());
                for (k, b) in bytes[8 - width..].iter().enumerate() {
                    if let Some(slot) = out.get_mut(at + k) {
                        *slot = *b;
                    }
                }
            }
            // Cut.
            3 => {
                let n = rng.gen_range(0..=out.len());
                out.truncate(n);
            }
            // Append random bytes.
            4 => {
                let n = rng.gen_range(1..32);
                out.extend((0..n).map(|_| rng.gen::<u8>()));
            }
            // Splice the tail of another seed.
            5 => {
                let other = &seeds[rng.gen_range(0..seeds.len())];
                let at = rng.gen_range(0..=out.len());
                let from = rng.gen_range(0..=other.len());
                out.truncate(at);
                out.extend_from_slice(&other[from..]);
            }
            // Remove a byte.
            _ if !out.is_empty() => {
                let i = rng.gen_range(0..out.len());
                out.remove(i);
            }
            _ => {}
        }
    }
}

/// Runs `target` on `iterations` inputs drawn from `seed`, stopping at the first panic.
/// `progress` is called about once a second with the inputs run so far.
pub fn run(
    target: &mut dyn Target,
    iterations: u64,
    seed: u64,
    progress: &mut dyn FnMut(u64),
) -> Report {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let seeds = target.seeds();
    let mut input = Vec::with_capacity(MAX_LEN);
    let start = Instant::now();
    let mut last = Instant::now();
    // The default hook would print every caught panic; the report says it once.
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let mut report = Report {
        target: target.name().to_string(),
        ..Report::default()
    };
    for i in 0..iterations {
        next_input(&mut rng, &seeds, &mut input);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| target.run(&input)));
        report.iterations = i + 1;
        if let Err(e) = outcome {
            let msg = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(non-string panic)".into());
            let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
            report.panic = Some((hex, msg));
            break;
        }
        if i % 4096 == 0 && last.elapsed().as_secs_f64() >= 1.0 {
            last = Instant::now();
            progress(i + 1);
        }
    }
    panic::set_hook(hook);
    report.seconds = start.elapsed().as_secs_f64();
    report
}
