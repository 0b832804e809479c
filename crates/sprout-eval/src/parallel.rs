//! The opt-in experiments' runner: independent jobs on a pool of threads, the costliest
//! started first (so that the last to finish is a cheap one), results in the jobs' order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{EvalError, Result};

/// Runs `work` on every one of `jobs` on `threads` threads (`None`: one per core), starting
/// them in decreasing `cost` (any unit), with a progress bar when `progress` whose message
/// after each job is `message` of it. Returns the results in `jobs`' order.
pub fn run_costliest_first<J, R, W, C, M>(
    jobs: &[J],
    threads: Option<usize>,
    progress: bool,
    (cost, message): (C, M),
    work: W,
) -> Result<Vec<R>>
where
    J: Sync,
    R: Send,
    W: Fn(&J) -> R + Sync,
    C: Fn(&J) -> f64,
    M: Fn(&J) -> String + Sync,
{
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(EvalError::Threads)?;
    let bar = crate::progress::bar(jobs.len() as u64, "", progress);
    let costs: Vec<f64> = jobs.iter().map(&cost).collect();
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]));
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<R>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let worker = || {
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            let out = work(&jobs[i]);
            bar.inc(1);
            bar.set_message(message(&jobs[i]));
            *done[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
        }
    };
    pool.scope(|s| {
        for _ in 0..pool.current_num_threads() {
            s.spawn(|_| worker());
        }
    });
    bar.finish_and_clear();
    Ok(done
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every job ran")
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_jobs_order_whatever_the_costs() {
        let jobs: Vec<u64> = (0..50).collect();
        let out = run_costliest_first(
            &jobs,
            Some(3),
            false,
            (|j: &u64| (*j % 7) as f64, |j: &u64| j.to_string()),
            |j| j * j,
        )
        .unwrap();
        assert_eq!(out, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
    }
}
