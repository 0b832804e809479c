//! CI's short fuzz run: 10^5 inputs per target (the README gives the long run's command).

const ITERATIONS: u64 = 100_000;

#[test]
fn every_target_survives_a_short_run() {
    for mut t in sprout_fuzz::targets() {
        let r = sprout_fuzz::run(t.as_mut(), ITERATIONS, 7, &mut |_| {});
        eprintln!(
            "{}: {} inputs in {:.1} s ({:.0}/s)",
            r.target,
            r.iterations,
            r.seconds,
            r.rate()
        );
        if let Some((hex, msg)) = &r.panic {
            panic!(
                "{} panicked after {} inputs: {msg}\ninput: {hex}",
                r.target, r.iterations
            );
        }
        assert_eq!(r.iterations, ITERATIONS);
    }
}
