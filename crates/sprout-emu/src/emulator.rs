//! The emulator: a "mobile" network namespace joined to the emulator's own namespace by two TUN
//! devices, with a trace-driven [`Link`] in each direction between them.

use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use sprout_link::{Link, LinkConfig, MmLogWriter, Trace};
use sprout_os::clock::monotonic_ns;
use sprout_os::netns::NetNamespace;
use sprout_os::poll::EventFd;
use sprout_os::tun::{self, TunDevice};

use crate::addressing::{self, Addressing};
use crate::event_loop::{self, Direction, LoopOutcome, LoopSetup};
use crate::stats::{DirectionReport, EmulatorStats};

/// MTU of both TUN devices (bytes).
pub const MTU_BYTES: u32 = 1500;

/// Packets each TUN device holds for the emulator's loop before the kernel drops the next
/// (`txqueuelen`; the kernel's default is 500). The link model's queue is the only one meant
/// to hold or drop packets: with 500, a sender's burst at 500 Mbit/s (UDP GSO hands the
/// kernel 64 datagrams at once) overflowed it while the loop was writing the other
/// direction's deliveries, 10,000 of 270,000 datagrams in 8 s. 20,000 is a quarter of a
/// second at 1 Gbit/s, 30 MB at most, reached only if the loop stalls that long.
const TUN_QUEUE_PACKETS: u32 = 20_000;

/// Environment variable holding the mobile (inside) address, set for spawned commands.
pub const ENV_MOBILE: &str = "SPROUT_LINK_MOBILE";
/// Environment variable holding the outside address, set for spawned commands.
pub const ENV_OUTSIDE: &str = "SPROUT_LINK_OUTSIDE";
/// Mahimahi's name for the outside address, also set for spawned commands.
pub const ENV_MAHIMAHI_BASE: &str = "MAHIMAHI_BASE";

/// Why the emulator could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The process lacks the privileges to create a namespace and TUN devices.
    #[error(
        "sprout link needs root (CAP_NET_ADMIN) to create a network namespace and TUN devices"
    )]
    NotPrivileged,
    /// A link configuration was rejected by [`LinkConfig::validate`].
    #[error("{direction}: {reason}")]
    InvalidConfig {
        /// `uplink` or `downlink`.
        direction: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A log file could not be created or written.
    #[error("log {path}: {source}")]
    Log {
        /// The log's path.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
    /// A system call failed while setting up or running the emulator.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> EmuError {
    let what = what.into();
    move |source| EmuError::Io { what, source }
}

/// What to emulate. Time 0 of both links (and of the logs) is when [`Emulator::start`] starts
/// the event loop, just before it returns.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Trace of the uplink (mobile → outside): delivery opportunities (ms).
    pub uplink: Arc<Trace>,
    /// Trace of the downlink (outside → mobile).
    pub downlink: Arc<Trace>,
    /// Uplink parameters (one-way propagation delay in µs, queue, loss, looping, ...).
    pub uplink_link: LinkConfig,
    /// Downlink parameters.
    pub downlink_link: LinkConfig,
    /// Write the uplink's mahimahi mm-link log here.
    pub uplink_log: Option<PathBuf>,
    /// Write the downlink's mahimahi mm-link log here.
    pub downlink_log: Option<PathBuf>,
}

impl EmulatorConfig {
    /// Both traces with [`LinkConfig::default`] (20 ms one-way delay, unlimited drop-tail
    /// queue, looping, no loss), no logs, no records.
    pub fn new(uplink: Arc<Trace>, downlink: Arc<Trace>) -> Self {
        EmulatorConfig {
            uplink,
            downlink,
            uplink_link: LinkConfig::default(),
            downlink_link: LinkConfig::default(),
            uplink_log: None,
            downlink_log: None,
        }
    }
}

/// What the emulator did, returned by [`Emulator::stop`].
#[derive(Debug, Clone)]
pub struct EmulatorReport {
    /// Mobile → outside.
    pub uplink: DirectionReport,
    /// Outside → mobile.
    pub downlink: DirectionReport,
    /// Link time when the emulator stopped (µs since time 0).
    pub duration_us: u64,
}

/// A request to the namespace thread: spawn this command and send it back with the result
/// (the caller's `&mut Command` is lent by value, and put back when it returns).
enum Job {
    Spawn {
        command: Command,
        reply: mpsc::Sender<(Command, io::Result<Child>)>,
    },
}

/// The thread that made the mobile namespace and stays in it: it spawns commands there, so
/// that they die (`PR_SET_PDEATHSIG`) when it ends, i.e. when the emulator stops or dies.
struct NamespaceThread {
    jobs: Option<mpsc::Sender<Job>>,
    handle: Option<JoinHandle<()>>,
}

impl NamespaceThread {
    /// Starts the thread: new namespace, `lo` up, the inner TUN device configured as
    /// `mobile` ↔ `outside` with a default route through it. Returns the thread, the namespace
    /// and the inner device.
    fn start(a: &Addressing) -> Result<(NamespaceThread, NetNamespace, TunDevice), EmuError> {
        let (setup_tx, setup_rx) = mpsc::channel::<io::Result<(NetNamespace, TunDevice)>>();
        let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
        let a = a.clone();
        let handle = std::thread::Builder::new()
            .name("sprout-emu-ns".into())
            .spawn(move || {
                let setup = || -> io::Result<(NetNamespace, TunDevice)> {
                    let ns = NetNamespace::unshare_current_thread()
                        .map_err(|e| io::Error::new(e.kind(), format!("unshare: {e}")))?;
                    tun::set_up("lo")?;
                    let tun = TunDevice::create(&a.inner_name)?;
                    tun::configure_point_to_point(&a.inner_name, a.mobile, a.outside, MTU_BYTES)?;
                    tun::set_tx_queue_len(&a.inner_name, TUN_QUEUE_PACKETS)?;
                    tun::add_default_route(&a.inner_name, a.outside)?;
                    Ok((ns, tun))
                };
                let ok = setup_tx.send(setup()).is_ok();
                if !ok {
                    return;
                }
                for job in jobs_rx {
                    match job {
                        Job::Spawn { mut command, reply } => {
                            let child = command.spawn();
                            let _ = reply.send((command, child));
                        }
                    }
                }
            })
            .map_err(io_err("start the namespace thread"))?;
        let thread = NamespaceThread {
            jobs: Some(jobs_tx),
            handle: Some(handle),
        };
        match setup_rx.recv() {
            Ok(Ok((ns, tun))) => Ok((thread, ns, tun)),
            Ok(Err(e)) => Err(EmuError::Io {
                what: "set up the mobile namespace".into(),
                source: e,
            }),
            Err(_) => Err(EmuError::Io {
                what: "set up the mobile namespace".into(),
                source: io::Error::other("namespace thread died"),
            }),
        }
    }

    fn spawn(&self, cmd: &mut Command) -> io::Result<Child> {
        let (tx, rx) = mpsc::channel();
        let jobs = self
            .jobs
            .as_ref()
            .ok_or_else(|| io::Error::other("emulator stopped"))?;
        // Lend the command to the namespace thread; an empty one stands in meanwhile.
        let command = std::mem::replace(cmd, Command::new(""));
        if let Err(mpsc::SendError(Job::Spawn { command, .. })) =
            jobs.send(Job::Spawn { command, reply: tx })
        {
            *cmd = command;
            return Err(io::Error::other("namespace thread gone"));
        }
        // Blocks until the namespace thread is done with the command (it always replies, or
        // dies and drops the reply channel, losing the command: the caller keeps an empty one).
        match rx.recv() {
            Ok((command, child)) => {
                *cmd = command;
                child
            }
            Err(_) => Err(io::Error::other("namespace thread gone")),
        }
    }

    fn shut_down(&mut self) {
        self.jobs = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for NamespaceThread {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// A running emulator. Nothing it creates is persistent: the namespace is held by descriptors
/// and threads, the TUN devices by descriptors, so the kernel removes them all (with their
/// addresses and routes) when the emulator stops, is dropped, or its process dies.
///
/// ```no_run
/// use std::sync::Arc;
/// use sprout_emu::{Emulator, EmulatorConfig};
/// use sprout_link::Trace;
///
/// let up = Arc::new(Trace::load("Verizon-LTE-short.up").unwrap());
/// let down = Arc::new(Trace::load("Verizon-LTE-short.down").unwrap());
/// let emu = Emulator::start(EmulatorConfig::new(up, down)).unwrap();
/// let mut ping = std::process::Command::new("ping");
/// ping.args(["-c", "3", &emu.outside_addr().to_string()]);
/// let status = emu.spawn_in_namespace(&mut ping).unwrap().wait().unwrap();
/// let report = emu.stop().unwrap();
/// println!("{status}: {} packets up", report.uplink.stats.link.packets_delivered);
/// ```
pub struct Emulator {
    addressing: Addressing,
    namespace: NetNamespace,
    epoch_ns: u64,
    stop: Arc<EventFd>,
    drain_us: Arc<AtomicU64>,
    shared: Arc<Mutex<EmulatorStats>>,
    event_loop: Option<JoinHandle<io::Result<LoopOutcome>>>,
    ns_thread: NamespaceThread,
    log_paths: [Option<PathBuf>; 2],
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("mobile", &self.addressing.mobile)
            .field("outside", &self.addressing.outside)
            .field("outer_interface", &self.addressing.outer_name)
            .field("inner_interface", &self.addressing.inner_name)
            .finish_non_exhaustive()
    }
}

/// `Ok` if this process may create a network namespace and TUN devices (root, or
/// `CAP_NET_ADMIN` and `CAP_SYS_ADMIN`), else [`EmuError::NotPrivileged`].
pub fn check_privileges() -> Result<(), EmuError> {
    if sprout_os::caps::has_network_privileges() {
        Ok(())
    } else {
        Err(EmuError::NotPrivileged)
    }
}

fn open_log(
    path: &Option<PathBuf>,
    direction: &str,
    trace: &Trace,
    config: &LinkConfig,
) -> Result<Option<MmLogWriter<File>>, EmuError> {
    let Some(path) = path else { return Ok(None) };
    let log_err = |source| EmuError::Log {
        path: path.clone(),
        source,
    };
    let file = File::create(path).map_err(log_err)?;
    let name = path.display().to_string();
    MmLogWriter::with_log_name(file, direction, trace.name(), &name, config)
        .map(Some)
        .map_err(log_err)
}

impl Emulator {
    /// Checks privileges and the link configurations, creates the log files, the mobile
    /// namespace and both TUN devices, and starts the event loop (time 0 of the links).
    pub fn start(config: EmulatorConfig) -> Result<Emulator, EmuError> {
        Self::start_recording(config, 0)
    }

    /// Like [`start`](Emulator::start), also recording the first `record_deliveries`
    /// deliveries of each direction as [`DeliveryRecord`](crate::DeliveryRecord)s in the
    /// report (for measurements of the emulator itself).
    pub fn start_recording(
        config: EmulatorConfig,
        record_deliveries: usize,
    ) -> Result<Emulator, EmuError> {
        check_privileges()?;
        for (direction, c) in [
            ("uplink", &config.uplink_link),
            ("downlink", &config.downlink_link),
        ] {
            c.validate().map_err(|e| EmuError::InvalidConfig {
                direction,
                reason: e.to_string(),
            })?;
        }
        let up_log = open_log(
            &config.uplink_log,
            "uplink",
            &config.uplink,
            &config.uplink_link,
        )?;
        let down_log = open_log(
            &config.downlink_log,
            "downlink",
            &config.downlink,
            &config.downlink_link,
        )?;

        // The outside end, in our own namespace. Retry with new names if another emulator
        // took ours in the meantime.
        let mut attempts = 0;
        let (addressing, outer) = loop {
            let a = addressing::choose();
            match TunDevice::create(&a.outer_name) {
                Ok(t) => break (a, t),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempts < 10 => attempts += 1,
                Err(e) => {
                    return Err(EmuError::Io {
                        what: "create the outside TUN device".into(),
                        source: e,
                    })
                }
            }
        };
        tun::configure_point_to_point(
            &addressing.outer_name,
            addressing.outside,
            addressing.mobile,
            MTU_BYTES,
        )
        .map_err(io_err(format!("configure {}", addressing.outer_name)))?;
        tun::set_tx_queue_len(&addressing.outer_name, TUN_QUEUE_PACKETS)
            .map_err(io_err(format!("configure {}", addressing.outer_name)))?;
        let (ns_thread, namespace, inner) = NamespaceThread::start(&addressing)?;

        let stop = Arc::new(EventFd::new().map_err(io_err("eventfd"))?);
        let drain_us = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(Mutex::new(EmulatorStats::default()));
        let inner = Arc::new(inner);
        let outer = Arc::new(outer);
        let uplink = Direction::new(
            Link::new(config.uplink.clone(), config.uplink_link.clone()),
            inner.clone(),
            outer.clone(),
            up_log,
            record_deliveries,
        );
        let downlink = Direction::new(
            Link::new(config.downlink.clone(), config.downlink_link.clone()),
            outer,
            inner,
            down_log,
            record_deliveries,
        );
        let epoch_ns = monotonic_ns();
        let setup = LoopSetup {
            uplink,
            downlink,
            stop: stop.clone(),
            drain_us: drain_us.clone(),
            shared: shared.clone(),
            epoch_ns,
        };
        let event_loop = std::thread::Builder::new()
            .name("sprout-emu-loop".into())
            .spawn(move || event_loop::run(setup))
            .map_err(io_err("start the event loop"))?;
        Ok(Emulator {
            addressing,
            namespace,
            epoch_ns,
            stop,
            drain_us,
            shared,
            event_loop: Some(event_loop),
            ns_thread,
            log_paths: [config.uplink_log, config.downlink_log],
        })
    }

    /// The command's address, inside the mobile namespace.
    pub fn mobile_addr(&self) -> Ipv4Addr {
        self.addressing.mobile
    }

    /// The address of the emulator's side (its own namespace), reachable from the mobile
    /// namespace through the emulated link; the mobile namespace's default gateway.
    pub fn outside_addr(&self) -> Ipv4Addr {
        self.addressing.outside
    }

    /// Name of the TUN device in the emulator's own namespace.
    pub fn outside_interface(&self) -> &str {
        &self.addressing.outer_name
    }

    /// Name of the TUN device in the mobile namespace.
    pub fn mobile_interface(&self) -> &str {
        &self.addressing.inner_name
    }

    /// The mobile namespace.
    pub fn namespace(&self) -> &NetNamespace {
        &self.namespace
    }

    /// `CLOCK_MONOTONIC` time of the links' time 0 (ns; see [`monotonic_ns`]).
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    /// Link time now (µs since time 0).
    pub fn now_us(&self) -> u64 {
        monotonic_ns().saturating_sub(self.epoch_ns) / 1000
    }

    /// Counters of both directions as of the event loop's latest iteration.
    pub fn stats(&self) -> EmulatorStats {
        self.shared.lock().map(|s| *s).unwrap_or_default()
    }

    /// Prepares `cmd` to run in the mobile namespace and spawns it there: with
    /// [`ENV_MOBILE`], [`ENV_OUTSIDE`] and [`ENV_MAHIMAHI_BASE`] set, in a new process group
    /// (its id is the child's pid), and with `PR_SET_PDEATHSIG(SIGKILL)`, so it is killed when
    /// the emulator stops, is dropped or dies (kill the whole group yourself for its
    /// descendants). `cmd` is spawned by the emulator's namespace thread.
    pub fn spawn_in_namespace(&self, cmd: &mut Command) -> io::Result<Child> {
        self.prepare(cmd, false);
        self.ns_thread.spawn(cmd)
    }

    /// Like [`spawn_in_namespace`](Emulator::spawn_in_namespace), and if this process is the
    /// foreground process group of the terminal on standard input, hands the terminal to the
    /// command's group (for interactive shells). Call [`sprout_os::child::reclaim_terminal`] after it exits.
    pub fn spawn_interactive(&self, cmd: &mut Command) -> io::Result<Child> {
        self.prepare(cmd, true);
        self.ns_thread.spawn(cmd)
    }

    fn prepare(&self, cmd: &mut Command, interactive: bool) {
        let outside = self.addressing.outside.to_string();
        cmd.env(ENV_MOBILE, self.addressing.mobile.to_string())
            .env(ENV_OUTSIDE, &outside)
            .env(ENV_MAHIMAHI_BASE, &outside);
        let take_terminal = interactive && sprout_os::child::owns_terminal();
        sprout_os::child::isolate_on_exec(cmd, std::process::id(), take_terminal);
    }

    /// Spawns a thread that enters the mobile namespace and runs `f` there (sockets it opens
    /// are inside, behind the emulated link). Returns once the thread is inside.
    pub fn run_on_namespace_thread<F, T>(&self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.namespace.spawn_thread("sprout-emu-mobile", f)
    }

    /// Stops the event loop (advancing both links to now first), flushes and closes the logs,
    /// removes the TUN devices and releases the namespace; commands spawned in it are killed
    /// (`SIGKILL`, through their parent-death signal). Returns what both directions did.
    pub fn stop(mut self) -> Result<EmulatorReport, EmuError> {
        let outcome = self.shut_down();
        let outcome = outcome
            .unwrap_or_else(|| Err(io::Error::other("event loop already stopped")))
            .map_err(io_err("event loop"))?;
        if let Some((direction, source)) = outcome.log_error {
            return Err(EmuError::Log {
                path: self.log_paths[direction].clone().unwrap_or_default(),
                source,
            });
        }
        Ok(EmulatorReport {
            uplink: outcome.uplink,
            downlink: outcome.downlink,
            duration_us: outcome.ended_us,
        })
    }

    /// Stops the emulator like [`stop`](Emulator::stop), after delivering what the uplink still
    /// holds (its queue and delay line, and packets waiting in its device), for at most `max`:
    /// what a command in the namespace sent just before it exited (a close, say) reaches the
    /// outside as it would over a real link. Nothing new is read meanwhile.
    pub fn drain_and_stop(self, max: Duration) -> Result<EmulatorReport, EmuError> {
        let max_us = u64::try_from(max.as_micros()).unwrap_or(u64::MAX).max(1);
        self.drain_us.store(max_us, Ordering::Release);
        self.stop()
    }

    fn shut_down(&mut self) -> Option<io::Result<LoopOutcome>> {
        let handle = self.event_loop.take()?;
        self.stop.notify();
        let outcome = handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("event loop panicked")));
        self.ns_thread.shut_down();
        Some(outcome)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}
