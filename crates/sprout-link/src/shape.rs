//! The link's shaping options beyond the queue's kind and Bernoulli loss, as the front ends
//! (`sprout sim`, `sprout link`, the Python package) set them on each direction: a buffer,
//! CoDel's target and interval, FQ-CoDel's quantum and flows, Gilbert-Elliott loss, a delay trace, jitter, ECN
//! marking and the L4S step. One type for
//! all, so that the simulator and the emulator read the same options the same way.

use std::sync::Arc;

use sprout_core::time::Duration;

use crate::buffer::Buffer;
use crate::delay::{DelayTrace, Jitter};
use crate::link::LinkConfig;
use crate::loss::GilbertElliott;
use crate::queue::QueueConfig;

/// One direction's shaping options; `None` leaves the link's configuration as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirectionShape {
    /// A finite buffer ([`LinkConfig::buffer`]).
    pub buffer: Option<Buffer>,
    /// CoDel's target, for a CoDel or FQ-CoDel queue.
    pub codel_target: Option<Duration>,
    /// CoDel's interval, for a CoDel or FQ-CoDel queue.
    pub codel_interval: Option<Duration>,
    /// FQ-CoDel's quantum (bytes), for an FQ-CoDel queue.
    pub fq_quantum: Option<u32>,
    /// FQ-CoDel's number of flow queues, for an FQ-CoDel queue.
    pub fq_flows: Option<u32>,
    /// Gilbert-Elliott loss ([`LinkConfig::gilbert_elliott`]).
    pub gilbert_elliott: Option<GilbertElliott>,
    /// A time-varying propagation delay ([`LinkConfig::delay_trace`]).
    pub delay_trace: Option<Arc<DelayTrace>>,
    /// Jitter ([`LinkConfig::jitter`]).
    pub jitter: Option<Jitter>,
    /// ECN marking by the AQM ([`LinkConfig::ecn`]).
    pub ecn: Option<bool>,
    /// The L4S step threshold ([`LinkConfig::l4s_step_us`]).
    pub l4s_step: Option<Duration>,
}

impl DirectionShape {
    /// These options, each one `over` gives replacing ours.
    pub fn overridden_by(&self, over: &DirectionShape) -> DirectionShape {
        DirectionShape {
            buffer: over.buffer.or(self.buffer),
            codel_target: over.codel_target.or(self.codel_target),
            codel_interval: over.codel_interval.or(self.codel_interval),
            fq_quantum: over.fq_quantum.or(self.fq_quantum),
            fq_flows: over.fq_flows.or(self.fq_flows),
            gilbert_elliott: over.gilbert_elliott.or(self.gilbert_elliott),
            delay_trace: over.delay_trace.clone().or(self.delay_trace.clone()),
            jitter: over.jitter.or(self.jitter),
            ecn: over.ecn.or(self.ecn),
            l4s_step: over.l4s_step.or(self.l4s_step),
        }
    }

    /// Whether no option is set.
    pub fn is_empty(&self) -> bool {
        *self == DirectionShape::default()
    }

    /// Sets the options given on `cfg`; CoDel's target and interval only on a CoDel or
    /// FQ-CoDel queue, FQ-CoDel's quantum and flows only on an FQ-CoDel queue (a
    /// configuration's [`validate`](LinkShape::validate) says when no queue takes them).
    pub fn apply(&self, cfg: &mut LinkConfig) {
        if let Some(b) = self.buffer {
            cfg.buffer = Some(b);
        }
        match &mut cfg.queue {
            QueueConfig::CoDel {
                target_us,
                interval_us,
                ..
            } => self.set_codel(target_us, interval_us),
            QueueConfig::FqCodel {
                target_us,
                interval_us,
                quantum_bytes,
                flows,
                ..
            } => {
                self.set_codel(target_us, interval_us);
                if let Some(q) = self.fq_quantum {
                    *quantum_bytes = q;
                }
                if let Some(n) = self.fq_flows {
                    *flows = n;
                }
            }
            _ => {}
        }
        if let Some(ge) = self.gilbert_elliott {
            cfg.gilbert_elliott = Some(ge);
        }
        if let Some(t) = &self.delay_trace {
            cfg.delay_trace = Some(t.clone());
        }
        if let Some(j) = self.jitter {
            cfg.jitter = Some(j);
        }
        if let Some(on) = self.ecn {
            cfg.ecn = on;
        }
        if let Some(t) = self.l4s_step {
            cfg.l4s_step_us = Some(t);
        }
    }

    /// Sets CoDel's target and interval where given.
    fn set_codel(&self, target_us: &mut Duration, interval_us: &mut Duration) {
        if let Some(t) = self.codel_target {
            *target_us = t;
        }
        if let Some(i) = self.codel_interval {
            *interval_us = i;
        }
    }
}

/// Both directions' shaping options: those of both, and each direction's own, which override
/// them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkShape {
    /// For both directions.
    pub both: DirectionShape,
    /// The uplink's, overriding `both`.
    pub uplink: DirectionShape,
    /// The downlink's, overriding `both`.
    pub downlink: DirectionShape,
}

/// Shaping options that do not fit the links they are for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// CoDel's target or interval without a CoDel or FQ-CoDel queue in either direction.
    #[error(
        "--codel-target and --codel-interval apply to a codel or fq-codel queue, and neither \
         direction has one"
    )]
    ParamsWithoutTheirQueue,
    /// FQ-CoDel's quantum or flows without an FQ-CoDel queue in either direction.
    #[error(
        "--fq-quantum and --fq-flows apply to an fq-codel queue, and neither direction has one"
    )]
    FqParamsWithoutTheirQueue,
}

impl LinkShape {
    /// The uplink's options: `both`, overridden by the uplink's.
    pub fn uplink(&self) -> DirectionShape {
        self.both.overridden_by(&self.uplink)
    }

    /// The downlink's options: `both`, overridden by the downlink's.
    pub fn downlink(&self) -> DirectionShape {
        self.both.overridden_by(&self.downlink)
    }

    /// Checks the options against the directions' configurations once applied: CoDel's
    /// parameters need a CoDel or FQ-CoDel queue in at least one direction, FQ-CoDel's an
    /// FQ-CoDel queue.
    pub fn validate(&self, uplink: &LinkConfig, downlink: &LinkConfig) -> Result<(), ShapeError> {
        let all = [&self.both, &self.uplink, &self.downlink];
        let codel_params = all
            .iter()
            .any(|s| s.codel_target.is_some() || s.codel_interval.is_some());
        let fq_params = all
            .iter()
            .any(|s| s.fq_quantum.is_some() || s.fq_flows.is_some());
        let is_fq = |c: &LinkConfig| matches!(c.queue, QueueConfig::FqCodel { .. });
        let is_codel = |c: &LinkConfig| matches!(c.queue, QueueConfig::CoDel { .. }) || is_fq(c);
        if codel_params && !is_codel(uplink) && !is_codel(downlink) {
            return Err(ShapeError::ParamsWithoutTheirQueue);
        }
        if fq_params && !is_fq(uplink) && !is_fq(downlink) {
            return Err(ShapeError::FqParamsWithoutTheirQueue);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_options_override_both() {
        let shape = LinkShape {
            both: DirectionShape {
                buffer: Some("100pkt".parse().unwrap()),
                jitter: Some("5ms".parse().unwrap()),
                ..DirectionShape::default()
            },
            uplink: DirectionShape {
                buffer: Some("50ms,head".parse().unwrap()),
                ..DirectionShape::default()
            },
            downlink: DirectionShape::default(),
        };
        assert_eq!(shape.uplink().buffer, Some("50ms,head".parse().unwrap()));
        assert_eq!(shape.uplink().jitter, Some("5ms".parse().unwrap()));
        assert_eq!(shape.downlink().buffer, Some("100pkt".parse().unwrap()));
        assert!(DirectionShape::default().is_empty());
        assert!(!shape.downlink().is_empty());
    }

    #[test]
    fn codel_parameters_reach_codel_queues_only() {
        let s = DirectionShape {
            codel_target: Some(Duration::from_millis(10)),
            codel_interval: Some(Duration::from_millis(200)),
            ..DirectionShape::default()
        };
        let mut codel = LinkConfig {
            queue: QueueConfig::codel(),
            ..LinkConfig::default()
        };
        s.apply(&mut codel);
        assert_eq!(
            codel.queue,
            QueueConfig::CoDel {
                target_us: Duration::from_millis(10),
                interval_us: Duration::from_millis(200),
                limit_bytes: None
            }
        );
        let mut plain = LinkConfig::default();
        s.apply(&mut plain);
        assert_eq!(plain, LinkConfig::default());
        let shape = LinkShape {
            both: s,
            ..LinkShape::default()
        };
        assert_eq!(
            shape.validate(&plain, &plain),
            Err(ShapeError::ParamsWithoutTheirQueue)
        );
        assert_eq!(shape.validate(&plain, &codel), Ok(()));
    }

    #[test]
    fn fq_codel_takes_codel_and_its_own_parameters() {
        let s = DirectionShape {
            codel_target: Some(Duration::from_millis(10)),
            fq_quantum: Some(300),
            fq_flows: Some(16),
            ..DirectionShape::default()
        };
        let mut fq = LinkConfig {
            queue: QueueConfig::fq_codel(),
            ..LinkConfig::default()
        };
        s.apply(&mut fq);
        let QueueConfig::FqCodel {
            target_us,
            interval_us,
            quantum_bytes,
            flows,
            ..
        } = fq.queue
        else {
            panic!("{:?}", fq.queue)
        };
        assert_eq!(
            (target_us, interval_us, quantum_bytes, flows),
            (
                Duration::from_millis(10),
                crate::CODEL_DEFAULT_INTERVAL,
                300,
                16
            )
        );
        let shape = LinkShape {
            both: s,
            ..LinkShape::default()
        };
        assert_eq!(shape.validate(&fq, &LinkConfig::default()), Ok(()));
        let mut codel = LinkConfig {
            queue: QueueConfig::codel(),
            ..LinkConfig::default()
        };
        shape.both.apply(&mut codel);
        assert_eq!(
            shape.validate(&codel, &codel),
            Err(ShapeError::FqParamsWithoutTheirQueue)
        );
    }
}
