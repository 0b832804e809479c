//! Scheduling: real-time and nice priorities, and timer slack.
//!
//! `sched_setscheduler` is called through libc: neither rustix nor nix wraps it.

use std::io;
use std::num::NonZeroU64;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// `sched_setscheduler(0, policy, priority)` on the calling thread; whether it worked.
fn set_scheduler(policy: libc::c_int, priority: libc::c_int) -> bool {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 is the calling
    // thread. The call reads nothing else.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

/// Puts the calling thread under `SCHED_FIFO` at real-time `priority` (1 to 99), or with
/// `None` back under `SCHED_OTHER`; whether it worked (real-time needs `CAP_SYS_NICE`).
pub fn set_fifo(priority: Option<i32>) -> bool {
    match priority {
        Some(p) => set_scheduler(libc::SCHED_FIFO, p),
        None => set_scheduler(libc::SCHED_OTHER, 0),
    }
}

/// Makes `cmd` start under `SCHED_OTHER` even when spawned by a real-time thread (the policy
/// is inherited across `fork`); a failure leaves the inherited policy.
pub fn normal_priority_on_exec(cmd: &mut Command) {
    // SAFETY: the hook runs in the child between fork and exec, where only async-signal-safe
    // calls are allowed: it makes one sched_setscheduler system call and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            set_scheduler(libc::SCHED_OTHER, 0);
            Ok(())
        });
    }
}

/// Sets the calling thread's nice value (`setpriority(PRIO_PROCESS, 0, nice)`: -20, most
/// favoured, to 19, least); lowering it needs `CAP_SYS_NICE`.
pub fn set_nice(nice: i32) -> io::Result<()> {
    Ok(rustix::process::setpriority_process(None, nice)?)
}

/// Makes the calling thread's timers as precise as the kernel allows (`PR_SET_TIMERSLACK`
/// 1 ns; the default slack is 50 µs). Best effort.
pub fn set_precise_timer_slack() {
    let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_goes_real_time_and_back() {
        std::thread::spawn(|| {
            if set_fifo(Some(10)) {
                assert!(set_fifo(None));
            }
            set_precise_timer_slack();
            assert_eq!(rustix::thread::current_timer_slack().unwrap(), 1);
            set_nice(1).unwrap();
        })
        .join()
        .unwrap();
        let mut cmd = Command::new("true");
        normal_priority_on_exec(&mut cmd);
        assert!(cmd.status().unwrap().success());
    }
}
