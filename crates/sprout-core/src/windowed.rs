//! The least or largest of a value over the last one to two spans of time, without a list of
//! samples: the extreme of the current span and of the one before it, so that an old extreme
//! ages out after at most two spans. The receiver keeps its least one-way delay this way, the
//! sender its largest recent window.

use crate::time::{Duration, Instant};

/// The least or largest value seen over the last one to two `span`s.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Windowed<T> {
    span: Duration,
    /// `min` or `max`: which of two values is kept.
    keep: fn(T, T) -> T,
    /// When the current span began (`None` before the first value).
    start: Option<Instant>,
    current: Option<T>,
    previous: Option<T>,
}

impl<T: Copy + Ord> Windowed<T> {
    /// Keeps the least value over the last one to two `span`s.
    pub(crate) fn least(span: Duration) -> Self {
        Self::new(span, std::cmp::min)
    }

    /// Keeps the largest value over the last one to two `span`s.
    pub(crate) fn largest(span: Duration) -> Self {
        Self::new(span, std::cmp::max)
    }

    fn new(span: Duration, keep: fn(T, T) -> T) -> Self {
        Windowed {
            span,
            keep,
            start: None,
            current: None,
            previous: None,
        }
    }

    /// Takes in `value`, seen at `now`; a span that has ended becomes the one before.
    pub(crate) fn update(&mut self, now: Instant, value: T) {
        match self.start {
            Some(s) if now - s < self.span => {}
            _ => {
                self.start = Some(now);
                self.previous = self.current.take();
            }
        }
        self.current = Some(self.current.map_or(value, |c| (self.keep)(c, value)));
    }

    /// The extreme of the current span and the one before (`None` before any value).
    pub(crate) fn get(&self) -> Option<T> {
        match (self.current, self.previous) {
            (Some(c), Some(p)) => Some((self.keep)(c, p)),
            (c, p) => c.or(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> Instant {
        Instant::from_micros(s * 1_000_000)
    }

    #[test]
    fn an_extreme_ages_out_after_one_to_two_spans() {
        let mut least = Windowed::least(Duration::from_micros(10_000_000));
        assert_eq!(least.get(), None::<i64>);
        least.update(t(0), 5);
        least.update(t(3), 9);
        assert_eq!(least.get(), Some(5));
        // A new span at 12 s: 5 is now the span before, still remembered.
        least.update(t(12), 8);
        assert_eq!(least.get(), Some(5));
        // Another at 24 s: 5 is gone, 8 (the span before) is the least.
        least.update(t(24), 11);
        assert_eq!(least.get(), Some(8));
        let mut largest = Windowed::largest(Duration::from_micros(10_000_000));
        largest.update(t(0), 7u64);
        largest.update(t(1), 3);
        assert_eq!(largest.get(), Some(7));
        largest.update(t(11), 1);
        largest.update(t(22), 2);
        assert_eq!(largest.get(), Some(2));
    }
}
