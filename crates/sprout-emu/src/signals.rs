//! Running a command under the emulator: waiting for it, for a deadline or for a signal to
//! the emulator, then ending its process group; and handing the terminal back and forth.
//! The code is [`sprout_os::child`] and [`sprout_os::signals`].

pub use sprout_os::child::{
    become_subreaper, exit_code, owns_terminal, reclaim_terminal, terminate_group, wait_for,
    WaitOutcome,
};
pub use sprout_os::signals::{SignalWatcher, STOP_SIGNALS};
