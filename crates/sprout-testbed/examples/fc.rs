use sprout_core::{estimator, Config};
fn main() {
    let mut cfg = Config::default();
    if std::env::var("GRID").is_ok() {
        cfg.model.grid = sprout_core::params::RateGrid::Midpoint;
        cfg.model.bins = 257;
    }
    let mut pats: Vec<(String, Vec<f64>, usize)> = vec![];
    for p in [
        vec![5.0],
        vec![10.0],
        vec![15.0],
        vec![0.0, 20.0],
        vec![10.0, 10.0, 0.0],
        vec![1.0],
        vec![2.0],
        vec![3.0, 0.0],
        vec![18.0],
    ] {
        pats.push((format!("{p:?}"), p, 300));
    }
    let mut s1 = vec![10.0; 50];
    s1.extend(vec![0.0; 10]);
    pats.push(("seq60".into(), s1, 60));
    let mut s2 = vec![0.0; 20];
    s2.extend(vec![8.0; 5]);
    pats.push(("seq25".into(), s2, 25));
    for (name, pattern, n) in pats {
        let mut e = estimator::build(&cfg);
        for i in 0..n {
            e.evolve();
            e.observe(pattern[i % pattern.len()]);
        }
        let mut out = [0u32; 8];
        e.forecast(&mut out);
        println!("{name} -> {:?} mean {:.1}", out, e.rate_pps());
    }
}
