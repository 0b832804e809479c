//! Sweeps: a grid of simulations (traces x schemes x Sprout parameters x simulator options x
//! seeds) described by a TOML spec, expanded into runs with stable ids, each run one
//! simulation (`sprout sim`'s code, [`sprout_sim::sim_json`]) giving one tidy row, and a resumable
//! CSV output. `sprout sweep` runs the runs on all cores ([`run_local`]); the Python package
//! (`sprout.sweep`) expands the same spec with this code and runs each run through
//! [`run_line`], in a local pool or as Ray tasks, so the rows are the same whichever executor
//! ran them.
//!
//! # The spec
//!
//! ```toml
//! traces = ["Verizon-LTE-short", { name = "synth", synthetic = { seed = 1, duration_s = 60 } }]
//! traces_dir = "../shared/traces"  # where trace names are looked up (default: as `sprout eval`)
//! schemes = ["sprout", "sprout-ewma", "cubic"]          # default ["sprout"]
//! seeds = [1, 2, 3]                                    # or a count: 3 = [1, 2, 3]; default [0]
//! out = "sigma.csv"                                    # default: the spec's name, .csv
//!
//! [params]             # Sprout parameters (`sprout params` lists them): a value or a list
//! "model.sigma" = [100, 200]
//! window_skip_ticks = [0, 1]
//!
//! [sim]                # `sprout sim`'s options: a value, or a list (another grid dimension)
//! duration = 20.0      # seconds [default: the shorter trace's length]
//! skip = 5.0           # seconds [default: 60]
//! load = "both"        # both, up or down
//! queue = "infinite"   # infinite or codel; also uplink_queue, downlink_queue
//! ecn = [false, true]  # ECN marking and the TCP peers' ECN (`sprout sim --ecn`) [default false]
//! loss = [0.0, 0.05]   # also uplink_loss, downlink_loss
//! host_jitter_ms = 1.0
//! confidence = 0.95    # Sprout only
//! app = ["constant:rate=500k", "video:rate=1M"]  # `sprout sim --app` specs [default "bulk"]
//! buffer = ["100pkt", "50ms"]  # the link's shaping, as `sprout sim`'s flags spell it [none]:
//! l4s_step = ["1ms", "5ms"]    # also gemodel, jitter, codel_target, codel_interval, fq_quantum,
//!                              # fq_flows; uplink_ and downlink_ buffer, gemodel, jitter
//! ```
//!
//! A trace entry is a pair's name (`NAME.up` and `NAME.down` in `traces_dir`), `"*"` (every
//! pair there), a table `{ name, uplink, downlink }` of files, `{ name, synthetic = {...} }`
//! (the paper's link model, [`SyntheticLink`]'s fields; the uplink uses `seed`, the downlink
//! `seed + 1`) or `{ name, constant = { mbps, seconds } }`. Paths are relative to the spec's
//! folder (to the current folder for a spec given as a value). A list-valued parameter is given
//! as a list of lists. Sprout parameters apply to Sprout schemes only, and those of Sprout's
//! Bayesian model (and `confidence`) to Sprout alone, not Sprout-EWMA
//! ([`sprout_sim::scheme::BAYESIAN_MODEL_KEYS`]): a scheme runs once per combination of what
//! it uses, with the other columns empty, so that no run is a duplicate under another name.
//!
//! # Runs, ids and rows
//!
//! Runs are expanded in the order traces, schemes, parameters (keys sorted), simulator options
//! (keys sorted), seeds. A run's id is 16 hex digits of FNV-1a (64 bits) of its configuration
//! as canonical JSON: trace name and source (file names with a digest of their contents,
//! not their folders, so a spec gives the same ids wherever it lies), scheme, parameters,
//! every simulator option with its default filled in, seed. Identical runs are run once.
//! A row is `run_id, trace, scheme, seed, params` (the `KEY=VALUE` assignments), a
//! `param.KEY` column per parameter of the spec, the simulator options (`duration_s` is the
//! simulated length), then `up_` and `down_` columns of every [`DirectionMetrics`] figure.
//! Numbers are written as Rust prints them (shortest exact decimal), so the same run gives
//! the same text on every executor.
//!
//! A spec whose `[sim]` sets `app` (even to `"bulk"`) adds an `app` column (the canonical
//! spec) after the simulator options, and, after the `down_` figures, `up_app_` and `down_app_`
//! columns of the application-level figures ([`APP_COLUMNS`]; empty in a direction without
//! data or for a bulk run). A spec without `app` has exactly the columns and run ids it had
//! before applications came in: a bulk run's id does not include the app. Likewise a spec whose
//! `[sim]` sets `ecn` adds, at the end of each row, the columns [`ECN_COLUMNS`]: `ecn`, and
//! each direction's CE marks and AQM drops; a run without ECN keeps its id. A spec whose
//! `[sim]` sets a link shaping option ([`LINK_KEYS`]: buffers, Gilbert-Elliott loss, jitter,
//! CoDel's and FQ-CoDel's parameters, the L4S step; not the delay traces, files) adds, at the
//! very end, a column per such option (its value as `sprout sim` spells it) and
//! [`LINK_COLUMNS`]: each direction's buffer drops and random losses; `l4s_step` adds the ECN
//! columns too (its marks). A run without those options keeps its id.
//!
//! A scheme that cannot run a bulk sender (`gcc`) runs, where the spec gives no app or
//! `"bulk"`, its natural application ([`Scheme::natural_app`]: the adaptive video source at
//! its defaults), as `sprout eval` runs it; its id is that of the same run with
//! `app = "adaptive"`. `direct` has none and is refused without an app of its own rate.
//!
//! # Output and resuming
//!
//! Rows are appended to the output as each run finishes, one `write` of a whole line (so a
//! crash leaves at most one partial line, which the next start drops); at the end the file is
//! rewritten sorted by run id (a temporary file renamed over it, so the sorted file replaces
//! the old one whole). Starting a sweep on an existing output skips the runs whose ids are
//! already in it (the header must match); rows of runs not in the spec are kept. A run that
//! fails is reported and left out, so the next start runs it again.
//!
//! # The modules
//!
//! [`spec`] reads the spec ([`SweepSpec`], serde-derived; unknown keys refused by name),
//! [`plan`] expands it into runs ([`SweepPlan`], [`RunSpec`]), [`output`] holds the columns and
//! the resumable CSV file ([`SweepOutput`]) and [`run`] runs the runs ([`run_line`],
//! [`run_local`]).
//!
//! [`SyntheticLink`]: sprout_link::SyntheticLink
//! [`DirectionMetrics`]: sprout_sim::metrics::DirectionMetrics
//! [`Scheme::natural_app`]: sprout_sim::scheme::Scheme::natural_app

pub mod output;
pub mod plan;
pub mod run;
pub mod spec;

#[cfg(test)]
mod tests;

pub use output::{
    csv_line, header, header_with_app, SweepOutput, APP_COLUMNS, ECN_COLUMNS, LINK_COLUMNS,
    MAX_OUTPUT_BYTES, METRIC_COLUMNS,
};
pub use plan::{
    trace_digest, RunSpec, SimSettings, SweepPlan, TraceRef, TraceSource, MAX_RUNS, MAX_SEEDS,
};
pub use run::{run_fields, run_line, run_local, sim_error_message, SweepReport};
pub use spec::{SweepSpec, LINK_KEYS, MAX_SPEC_BYTES, SIM_KEYS};
