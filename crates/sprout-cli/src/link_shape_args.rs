//! The link's shaping options on the command line, shared by `sprout sim` and `sprout link`
//! (flattened into both): buffers, CoDel's and FQ-CoDel's parameters, Gilbert-Elliott loss, delay traces,
//! jitter, ECN marking and the L4S step, for both directions and each. Their values are parsed by the link's own types
//! (`sprout_link::{Buffer, GilbertElliott, Jitter, DelayTrace}`) and turned into the link's shape
//! by `sprout_link::ShapeOptions`, as the Python package and the sweeps do, so every front end
//! reads them alike.

use std::path::PathBuf;

use anyhow::Result;
use sprout_core::time::Duration;
use sprout_link::{Buffer, GilbertElliott, Jitter, LinkShape, ShapeOptions};

/// A time on the command line: `5ms`, `0.1s`, `500us`.
fn time_parser(s: &str) -> Result<Duration, String> {
    sprout_link::parse_positive_time(s).map_err(|e| e.to_string())
}

/// The shaping options of `sprout sim` and `sprout link`.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct LinkShapeArgs {
    /// Buffer of both directions' queues: a limit in packets, bytes or time at the trace's
    /// mean rate (100pkt, 200kB, 50ms), drop-tail, or drop-head with ,head (50ms,head)
    /// [default: unlimited].
    #[arg(long, value_name = "LIMIT[,head]")]
    buffer: Option<Buffer>,
    /// The uplink's buffer, overriding --buffer [default: --buffer].
    #[arg(long, value_name = "LIMIT[,head]")]
    uplink_buffer: Option<Buffer>,
    /// The downlink's buffer, overriding --buffer [default: --buffer].
    #[arg(long, value_name = "LIMIT[,head]")]
    downlink_buffer: Option<Buffer>,
    /// CoDel's target (e.g. 10ms) for every codel queue and every fq-codel flow [default: 5ms,
    /// RFC 8289's].
    #[arg(long, value_name = "TIME", value_parser = time_parser)]
    codel_target: Option<Duration>,
    /// CoDel's interval (e.g. 200ms) for every codel queue and every fq-codel flow [default:
    /// 100ms, RFC 8289's].
    #[arg(long, value_name = "TIME", value_parser = time_parser)]
    codel_interval: Option<Duration>,
    /// FQ-CoDel's deficit round robin quantum, in bytes, for every fq-codel queue [default:
    /// 1514, Linux's].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..))]
    fq_quantum: Option<u32>,
    /// FQ-CoDel's number of flow queues (1 to 65536), for every fq-codel queue [default: 1024,
    /// Linux's].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    fq_flows: Option<u32>,
    /// Gilbert-Elliott bursty loss of both directions instead of --loss, as netem's `loss
    /// gemodel p r 1-h 1-k`: probabilities or percentages, 1-h defaulting to 1 and 1-k to 0
    /// (e.g. 1%,30%) [default: none].
    #[arg(long, value_name = "P,R[,1-H[,1-K]]")]
    gemodel: Option<GilbertElliott>,
    /// The uplink's Gilbert-Elliott loss, overriding --gemodel [default: --gemodel].
    #[arg(long, value_name = "P,R[,1-H[,1-K]]")]
    uplink_gemodel: Option<GilbertElliott>,
    /// The downlink's Gilbert-Elliott loss, overriding --gemodel [default: --gemodel].
    #[arg(long, value_name = "P,R[,1-H[,1-K]]")]
    downlink_gemodel: Option<GilbertElliott>,
    /// Propagation delay of both directions varying over time, from a file: an `interval T`
    /// line, then one delay in ms per line (docs/evaluation.md); replaces the fixed delay
    /// [default: none].
    #[arg(long, value_name = "FILE")]
    delay_trace: Option<PathBuf>,
    /// The uplink's delay trace, overriding --delay-trace [default: --delay-trace].
    #[arg(long, value_name = "FILE")]
    uplink_delay_trace: Option<PathBuf>,
    /// The downlink's delay trace, overriding --delay-trace [default: --delay-trace].
    #[arg(long, value_name = "FILE")]
    downlink_delay_trace: Option<PathBuf>,
    /// Random jitter of both directions' delay, uniform within +/- this (netem's `delay D J`);
    /// packets keep their order unless ,reorder (5ms,reorder) [default: none].
    #[arg(long, value_name = "TIME[,reorder]")]
    jitter: Option<Jitter>,
    /// The uplink's jitter, overriding --jitter [default: --jitter].
    #[arg(long, value_name = "TIME[,reorder]")]
    uplink_jitter: Option<Jitter>,
    /// The downlink's jitter, overriding --jitter [default: --jitter].
    #[arg(long, value_name = "TIME[,reorder]")]
    downlink_jitter: Option<Jitter>,
    /// ECN: codel, fq-codel and pie mark ECN-capable packets CE instead of dropping them (pie
    /// while its drop probability is at most 10%), in both directions; `sprout sim`'s TCP
    /// peers then negotiate ECN (RFC 3168). Sprout's own datagrams are not ECN-capable
    /// [default: off, every packet dropped].
    #[arg(long)]
    ecn: bool,
    /// L4S step marking: an ECT(1) packet that waited longer than this in either direction's
    /// queue (any discipline) is marked CE (RFC 9332's shallow step, e.g. 1ms) [default:
    /// none].
    #[arg(long, value_name = "TIME", value_parser = time_parser)]
    l4s_step: Option<Duration>,
}

impl LinkShapeArgs {
    /// The options as the link model takes them, delay traces loaded (each file once): the
    /// link's own [`ShapeOptions::shape`], which the Python package and the sweeps share.
    pub(crate) fn shape(&self) -> Result<LinkShape> {
        let options = ShapeOptions {
            buffer: self.buffer,
            uplink_buffer: self.uplink_buffer,
            downlink_buffer: self.downlink_buffer,
            codel_target: self.codel_target,
            codel_interval: self.codel_interval,
            fq_quantum: self.fq_quantum,
            fq_flows: self.fq_flows,
            gemodel: self.gemodel,
            uplink_gemodel: self.uplink_gemodel,
            downlink_gemodel: self.downlink_gemodel,
            delay_trace: self.delay_trace.clone(),
            uplink_delay_trace: self.uplink_delay_trace.clone(),
            downlink_delay_trace: self.downlink_delay_trace.clone(),
            jitter: self.jitter,
            uplink_jitter: self.uplink_jitter,
            downlink_jitter: self.downlink_jitter,
            ecn: self.ecn,
            l4s_step: self.l4s_step,
        };
        Ok(options.shape()?)
    }
}
