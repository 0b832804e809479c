//! The one simulation loop: a clock that jumps from one event to the next, driving two
//! endpoints joined by two links. [`crate::sim::run`] runs it once, over the whole run; the
//! RL environment ([`crate::rl_env`]) runs it a tick at a time. The endpoints are a type
//! parameter, so the loop's calls are statically dispatched: no virtual call per event.

use sprout_core::time::Duration;
use sprout_core::Instant;

use crate::error::SimError;

/// What the loop drives: the links and the endpoints on them, one iteration at `now`.
pub(crate) trait Endpoints {
    /// Steps 1 and 2 at `now`: the links deliver what is due, and the receivers take in
    /// what reached them.
    fn deliver(&mut self, now: Instant) -> Result<(), SimError>;

    /// Step 3 at `now`: the endpoints run their timers and send.
    fn act(&mut self, now: Instant) -> Result<(), SimError>;

    /// The earliest time anything can happen next (a link event, a timer, a send).
    fn next_event(&self) -> Instant;
}

/// The simulation loop's clock; [`Simulation::run_until`] drives the endpoints.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Simulation {
    /// The time of the last iteration (`None` before the first).
    now: Option<Instant>,
    /// The time of the next iteration: the start, then the endpoints' next event (at least
    /// one microsecond after the last iteration).
    next: Instant,
}

impl Simulation {
    /// A loop whose first iteration is at `start`.
    pub(crate) fn new(start: Instant) -> Self {
        Simulation {
            now: None,
            next: start,
        }
    }

    /// Takes the endpoints' next event afresh, after something outside the loop changed
    /// them (an agent's action).
    pub(crate) fn wake<E: Endpoints>(&mut self, endpoints: &E) {
        if let Some(now) = self.now {
            self.next = endpoints.next_event().max(now + Duration::from_micros(1));
        }
    }

    /// Runs iterations up to `end`, the last exactly at `end` (so the links report
    /// everything up to it), calling `progress(now)` each time the clock passes a whole
    /// second. A later call goes on from there.
    pub(crate) fn run_until<E: Endpoints>(
        &mut self,
        endpoints: &mut E,
        end: Instant,
        progress: &mut impl FnMut(Instant),
    ) -> Result<(), SimError> {
        if self.now.is_some_and(|n| n >= end) {
            return Ok(());
        }
        let mut now = match self.now {
            None => self.next,
            Some(_) => self.next.min(end),
        };
        loop {
            // 1-2. Links deliver what is due; receivers take in their datagrams.
            endpoints.deliver(now)?;
            // 3. Endpoints start, run their timers and send.
            endpoints.act(now)?;
            // 4. Jump to the next thing that can happen.
            self.next = endpoints.next_event().max(now + Duration::from_micros(1));
            self.now = Some(now);
            if now >= end {
                return Ok(());
            }
            let before = now;
            now = self.next.min(end);
            if now.as_micros() / 1_000_000 != before.as_micros() / 1_000_000 {
                progress(now);
            }
        }
    }
}
