//! The real WebRTC video call (`PYTHON -m sprout.webrtc_call`, aiortc; issue 25) from Rust:
//! typed options rendered as its command line ([`CallOptions`]), its JSON summary parsed into
//! [`CallSummary`], and the preflight [`check_python`] that says how to install the program
//! when the Python found cannot run it.
//!
//! The program's interface (flags, summary, exit codes) is fixed by the contract shared with
//! `python/sprout/webrtc_call.py`: the `answer` end listens for signalling on a Unix-domain
//! socket and starts first (outside the emulator), the `offer` end connects (inside the mobile
//! namespace); each sends a synthetic video track and measures the capture-to-decode delay of
//! the frames it receives; one JSON line on stdout at the end.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sprout_files::{excerpt, read_capped_from, read_to_string_capped, ReadError};

/// The Python module that holds the call.
pub const MODULE: &str = "sprout.webrtc_call";
/// How to install the call's dependencies, quoted in every error that means they are missing.
pub const INSTALL_HINT: &str =
    "pip install './python[webrtc]' (from the repository) or pip install 'sprout[webrtc]'";
/// The Python the evaluation runs when none is given (and `SPROUT_PYTHON` is not set).
pub const DEFAULT_PYTHON: &str = "python3";
/// The environment variable naming the Python to run (before [`DEFAULT_PYTHON`]).
pub const PYTHON_ENV: &str = "SPROUT_PYTHON";
/// Most bytes of a call's stdout read (it holds one JSON line; its progress goes to stderr).
pub const OUTPUT_CAP: u64 = 1 << 20;
/// Longest summary line parsed, bytes.
pub const SUMMARY_LINE_CAP: usize = 64 << 10;
/// Time `--check` may take before it counts as failed (importing aiortc takes ~1-3 s).
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);
/// Exit status of the program when aiortc or av cannot be imported.
pub const EXIT_NO_AIORTC: i32 = 2;

/// Which end of the call a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The "server" end: listens for signalling, starts first (outside the emulator).
    Answer,
    /// The "client" end: connects to the signalling socket (inside the mobile namespace).
    Offer,
}

impl Role {
    /// The role's name on the command line and in the summary.
    pub fn key(self) -> &'static str {
        match self {
            Role::Answer => "answer",
            Role::Offer => "offer",
        }
    }
}

/// The Python to run: `explicit` if given, else `$SPROUT_PYTHON` if set and not empty, else
/// `python3`.
pub fn python_from(explicit: Option<PathBuf>, env: Option<std::ffi::OsString>) -> PathBuf {
    explicit
        .or_else(|| env.filter(|v| !v.is_empty()).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PYTHON))
}

/// One end of a call: everything its command line says.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOptions {
    /// The Python interpreter (with the `sprout` package and aiortc installed).
    pub python: PathBuf,
    /// Which end.
    pub role: Role,
    /// The signalling socket (a Unix-domain socket path; the answer end creates it).
    pub signal: PathBuf,
    /// The only local address offered as an ICE host candidate.
    pub bind: IpAddr,
    /// Media time, s, counted from the moment the connection is up.
    pub duration_s: f64,
    /// Seed of the synthetic moving video.
    pub seed: u64,
    /// Where to write one row per received frame (`frame,capture_us,decode_us,delay_ms`).
    pub frames_csv: Option<PathBuf>,
    /// How long the offer end retries connecting to the signalling socket, s (`None` = the
    /// program's default, 15 s).
    pub connect_timeout_s: Option<f64>,
}

impl CallOptions {
    /// An end of a call of `duration_s` seconds with seed 1, no frames file and the default
    /// connect timeout.
    pub fn new(
        python: PathBuf,
        role: Role,
        signal: PathBuf,
        bind: IpAddr,
        duration_s: f64,
    ) -> Self {
        CallOptions {
            python,
            role,
            signal,
            bind,
            duration_s,
            seed: 1,
            frames_csv: None,
            connect_timeout_s: None,
        }
    }

    /// The arguments after the interpreter: `-m sprout.webrtc_call --role … --signal …`.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "-m".to_string(),
            MODULE.to_string(),
            "--role".into(),
            self.role.key().into(),
            "--signal".into(),
            self.signal.display().to_string(),
            "--bind".into(),
            self.bind.to_string(),
            "--duration".into(),
            self.duration_s.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ];
        if let Some(csv) = &self.frames_csv {
            args.push("--frames-csv".into());
            args.push(csv.display().to_string());
        }
        if let Some(t) = self.connect_timeout_s {
            args.push("--connect-timeout".into());
            args.push(t.to_string());
        }
        args
    }

    /// The command that runs this end (stdin, stdout and stderr left to the caller).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.python);
        cmd.args(self.to_args());
        cmd
    }
}

/// Capture-to-decode delay of the frames received, ms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameDelay {
    /// Median, ms.
    pub p50: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
    /// Mean, ms.
    pub mean: f64,
}

/// The encoder's target bitrate over the call, kbit/s (each `None` if unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetBitrate {
    /// At the start, kbit/s.
    #[serde(default)]
    pub first: Option<f64>,
    /// At the end, kbit/s.
    #[serde(default)]
    pub last: Option<f64>,
    /// The lowest, kbit/s.
    #[serde(default)]
    pub min: Option<f64>,
}

/// One end's JSON summary of a call (the contract's fields; `null` = `None`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallSummary {
    /// Which end wrote it (its received frames are the other end's video).
    pub role: Role,
    /// Media time, s.
    pub duration_s: f64,
    /// Frames this end sent.
    pub frames_sent: u64,
    /// Frames this end received and decoded.
    pub frames_received: u64,
    /// Received frames whose time barcode did not check (not counted in the delays).
    pub frames_unreadable: u64,
    /// RTP payload received over the media time, kbit/s.
    pub received_kbps: f64,
    /// RTP payload sent over the media time, kbit/s.
    pub sent_kbps: f64,
    /// Delay of the received frames, ms; `None` if no frame was read.
    #[serde(default)]
    pub frame_delay_ms: Option<FrameDelay>,
    /// Share of the received frames within each bound (keys: bounds in ms, as text); `None` if
    /// no frame was read.
    #[serde(default)]
    pub frames_within_ms: Option<BTreeMap<String, f64>>,
    /// The encoder's target bitrate; `None` if unknown.
    #[serde(default)]
    pub target_bitrate_kbps: Option<TargetBitrate>,
}

impl CallSummary {
    /// The share of received frames within `ms` milliseconds, if the summary has that bound.
    pub fn within(&self, ms: u32) -> Option<f64> {
        self.frames_within_ms
            .as_ref()?
            .get(&ms.to_string())
            .copied()
    }
}

/// What `--check` printed: the versions of the call's Python dependencies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckVersions {
    /// aiortc's version.
    pub aiortc: String,
    /// PyAV's version.
    pub av: String,
}

/// Why the call could not be checked, run or read.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The interpreter could not be started.
    #[error("cannot run {} ({source}): the WebRTC call needs Python 3 with the sprout package and aiortc; install them with {INSTALL_HINT}, and name the Python with --python or SPROUT_PYTHON", python.display())]
    NoPython {
        /// The interpreter.
        python: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The interpreter runs but has no `sprout.webrtc_call` module.
    #[error("{} has no module {MODULE} (the sprout package is not installed for it): install it with {INSTALL_HINT}", python.display())]
    NoPackage {
        /// The interpreter.
        python: PathBuf,
        /// The last line of its stderr, cut.
        stderr: String,
    },
    /// The module runs but cannot import aiortc or av (exit 2).
    #[error("{} cannot import aiortc or av ({stderr}): install them with {INSTALL_HINT}", python.display())]
    NoAiortc {
        /// The interpreter.
        python: PathBuf,
        /// The last line of its stderr, cut.
        stderr: String,
    },
    /// `--check` failed in another way, or did not end in time.
    #[error("{} -m {MODULE} --check failed ({status}): {stderr}", python.display())]
    CheckFailed {
        /// The interpreter.
        python: PathBuf,
        /// How it ended ("exit status: 1", "no answer within 60 s").
        status: String,
        /// The last line of its stderr, cut.
        stderr: String,
    },
    /// `--check` succeeded but did not print its versions.
    #[error("{} -m {MODULE} --check printed no versions: {got}", python.display())]
    BadCheck {
        /// The interpreter.
        python: PathBuf,
        /// What it printed instead, cut.
        got: String,
    },
    /// The call's output could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The output holds no JSON line.
    #[error("no JSON summary in the call's output{}", match .0 { Some(p) => format!(" ({})", p.display()), None => String::new() })]
    NoSummary(Option<PathBuf>),
    /// The summary line is longer than [`SUMMARY_LINE_CAP`].
    #[error("the call's summary line has {0} bytes (at most {SUMMARY_LINE_CAP} read)")]
    SummaryTooLong(usize),
    /// The summary line is not the contract's JSON.
    #[error("bad summary from the call ({source}): {line}")]
    BadSummary {
        /// The line, cut.
        line: String,
        /// Why.
        source: serde_json::Error,
    },
}

/// Parses a call's stdout: its last non-empty line is the JSON summary.
pub fn parse_summary(stdout: &str) -> Result<CallSummary, CallError> {
    let line = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .ok_or(CallError::NoSummary(None))?;
    if line.len() > SUMMARY_LINE_CAP {
        return Err(CallError::SummaryTooLong(line.len()));
    }
    if !line.starts_with('{') {
        return Err(CallError::NoSummary(None));
    }
    serde_json::from_str(line).map_err(|source| CallError::BadSummary {
        line: excerpt(line),
        source,
    })
}

/// Reads the summary from a file holding a call's stdout (at most [`OUTPUT_CAP`] bytes).
pub fn read_summary(path: &Path) -> Result<CallSummary, CallError> {
    let text = read_to_string_capped(path, OUTPUT_CAP)?;
    parse_summary(&text).map_err(|e| match e {
        CallError::NoSummary(None) => CallError::NoSummary(Some(path.to_path_buf())),
        e => e,
    })
}

/// The last non-empty line of `text`, cut for an error message.
fn last_line(text: &str) -> String {
    excerpt(
        text.lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or(""),
    )
}

/// A child's pipe read on a thread, at most [`OUTPUT_CAP`] bytes (the rest discarded so the
/// child never blocks on a full pipe).
fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let Some(mut pipe) = pipe else {
            return String::new();
        };
        let kept = read_capped_from(pipe.by_ref(), Path::new("pipe"), OUTPUT_CAP);
        let _ = io::copy(&mut pipe, &mut io::sink());
        match kept {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(_) => String::new(),
        }
    })
}

/// Waits for `child` up to `limit`; kills it after that. `None` = it did not end in time.
fn wait_limited(child: &mut Child, limit: Duration) -> io::Result<Option<ExitStatus>> {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Checks that `python` can hold the call: runs `PYTHON -m sprout.webrtc_call --check` and
/// returns the versions it printed. A missing interpreter, a missing `sprout` package and a
/// missing aiortc (exit 2) each give an error that says how to install them.
pub fn check_python(python: &Path) -> Result<CheckVersions, CallError> {
    check_python_within(python, CHECK_TIMEOUT)
}

/// [`check_python`] with a time limit.
pub fn check_python_within(python: &Path, limit: Duration) -> Result<CheckVersions, CallError> {
    let mut child = Command::new(python)
        .args(["-m", MODULE, "--check"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| CallError::NoPython {
            python: python.to_path_buf(),
            source,
        })?;
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let status = wait_limited(&mut child, limit).map_err(|source| CallError::NoPython {
        python: python.to_path_buf(),
        source,
    })?;
    // A check that hung may have left a grandchild holding the pipes: its readers are left.
    let (stdout, stderr) = match status {
        Some(_) => (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        ),
        None => (String::new(), String::new()),
    };
    judge_check(python, status, &stdout, &stderr, limit)
}

/// The outcome of `--check` from how it ended and what it printed.
fn judge_check(
    python: &Path,
    status: Option<ExitStatus>,
    stdout: &str,
    stderr: &str,
    limit: Duration,
) -> Result<CheckVersions, CallError> {
    let python = python.to_path_buf();
    let tail = last_line(stderr);
    let Some(status) = status else {
        return Err(CallError::CheckFailed {
            python,
            status: format!("no answer within {} s", limit.as_secs()),
            stderr: tail,
        });
    };
    if !status.success() {
        let missing_module = stderr.contains("No module named")
            && (stderr.contains("'sprout'") || stderr.contains(MODULE));
        return Err(if missing_module {
            CallError::NoPackage {
                python,
                stderr: tail,
            }
        } else if status.code() == Some(EXIT_NO_AIORTC) {
            CallError::NoAiortc {
                python,
                stderr: tail,
            }
        } else {
            CallError::CheckFailed {
                python,
                status: status.to_string(),
                stderr: tail,
            }
        });
    }
    let line = stdout.lines().map(str::trim).rfind(|l| l.starts_with('{'));
    line.and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| CallError::BadCheck {
            python,
            got: last_line(stdout),
        })
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const FULL: &str = r#"{"role": "offer", "duration_s": 30.0, "frames_sent": 900, "frames_received": 880, "frames_unreadable": 2, "received_kbps": 612.3, "sent_kbps": 640.1, "frame_delay_ms": {"p50": 41.0, "p95": 120.0, "p99": 300.0, "mean": 55.0}, "frames_within_ms": {"100": 0.81, "150": 0.9, "300": 0.98}, "target_bitrate_kbps": {"first": 500, "last": 280, "min": 250}}"#;

    fn options() -> CallOptions {
        CallOptions::new(
            PathBuf::from("/venv/bin/python"),
            Role::Offer,
            PathBuf::from("/out/call.sock"),
            "100.64.0.2".parse().unwrap(),
            20.5,
        )
    }

    #[test]
    fn renders_the_contract_flags() {
        let args = options().to_args();
        assert_eq!(
            args.join(" "),
            "-m sprout.webrtc_call --role offer --signal /out/call.sock --bind 100.64.0.2 \
             --duration 20.5 --seed 1"
        );
        let opts = CallOptions {
            role: Role::Answer,
            seed: 7,
            frames_csv: Some(PathBuf::from("/out/frames up.csv")),
            connect_timeout_s: Some(30.0),
            ..options()
        };
        let args = opts.to_args();
        let at = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
        assert_eq!(at("--role"), "answer");
        assert_eq!(at("--seed"), "7");
        // A path with a space stays one argument.
        assert_eq!(at("--frames-csv"), "/out/frames up.csv");
        assert_eq!(at("--connect-timeout"), "30");
        let cmd = opts.command();
        assert_eq!(cmd.get_program(), "/venv/bin/python");
        assert_eq!(cmd.get_args().count(), args.len());
    }

    #[test]
    fn python_comes_from_the_flag_then_the_environment() {
        let flag = Some(PathBuf::from("/a/python"));
        let env = Some("/b/python".into());
        assert_eq!(python_from(flag, env.clone()), PathBuf::from("/a/python"));
        assert_eq!(python_from(None, env), PathBuf::from("/b/python"));
        assert_eq!(python_from(None, Some("".into())), PathBuf::from("python3"));
        assert_eq!(python_from(None, None), PathBuf::from("python3"));
    }

    #[test]
    fn parses_a_full_summary_after_other_lines() {
        let s = parse_summary(&format!("starting\n{FULL}\n\n")).unwrap();
        assert_eq!(s.role, Role::Offer);
        assert_eq!((s.frames_sent, s.frames_received), (900, 880));
        assert_eq!(s.frames_unreadable, 2);
        assert_eq!(s.received_kbps, 612.3);
        let d = s.frame_delay_ms.unwrap();
        assert_eq!((d.p50, d.p95, d.p99, d.mean), (41.0, 120.0, 300.0, 55.0));
        assert_eq!(s.within(100), Some(0.81));
        assert_eq!(s.within(200), None);
        let t = s.target_bitrate_kbps.unwrap();
        assert_eq!(
            (t.first, t.last, t.min),
            (Some(500.0), Some(280.0), Some(250.0))
        );
    }

    #[test]
    fn nulls_are_none() {
        let text = FULL
            .replace(
                r#"{"p50": 41.0, "p95": 120.0, "p99": 300.0, "mean": 55.0}"#,
                "null",
            )
            .replace(r#"{"100": 0.81, "150": 0.9, "300": 0.98}"#, "null")
            .replace(r#"{"first": 500, "last": 280, "min": 250}"#, "null");
        let s = parse_summary(&text).unwrap();
        assert_eq!(s.frame_delay_ms, None);
        assert_eq!(s.within(100), None);
        assert_eq!(s.target_bitrate_kbps, None);
        let partly = FULL.replace(r#""first": 500"#, r#""first": null"#);
        let t = parse_summary(&partly).unwrap().target_bitrate_kbps.unwrap();
        assert_eq!((t.first, t.last), (None, Some(280.0)));
    }

    #[test]
    fn garbage_is_refused() {
        assert!(matches!(parse_summary(""), Err(CallError::NoSummary(None))));
        assert!(matches!(
            parse_summary("error: no frames\n"),
            Err(CallError::NoSummary(None))
        ));
        let missing = FULL.replace(r#""frames_sent": 900, "#, "");
        let e = parse_summary(&missing).unwrap_err();
        assert!(e.to_string().contains("frames_sent"), "{e}");
        let bad_role = FULL.replace(r#""offer""#, r#""caller""#);
        assert!(matches!(
            parse_summary(&bad_role),
            Err(CallError::BadSummary { .. })
        ));
        let e = parse_summary("{\"role\": \"offer\", \u{1b}[31m").unwrap_err();
        // The quoted line is cut and has no control characters.
        assert!(!e.to_string().contains('\u{1b}'), "{e}");
    }

    #[test]
    fn huge_output_is_capped() {
        let huge = format!(
            "{{\"role\": \"offer\", \"pad\": \"{}\"}}",
            "x".repeat(1 << 20)
        );
        assert!(matches!(
            parse_summary(&huge),
            Err(CallError::SummaryTooLong(n)) if n > SUMMARY_LINE_CAP
        ));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("offer.out");
        fs::write(&path, format!("{huge}\n{huge}\n")).unwrap();
        assert!(matches!(
            read_summary(&path),
            Err(CallError::Read(ReadError::TooLarge { .. }))
        ));
        fs::write(&path, format!("{FULL}\n")).unwrap();
        assert_eq!(read_summary(&path).unwrap().frames_sent, 900);
        fs::write(&path, "").unwrap();
        let e = read_summary(&path).unwrap_err();
        assert!(e.to_string().contains("offer.out"), "{e}");
    }

    /// A fake interpreter: a shell script printing `out`, `err` and exiting with `code`.
    fn fake_python(dir: &Path, out: &str, err: &str, code: i32) -> PathBuf {
        let path = dir.join(format!("python-{code}"));
        let script =
            format!("#!/bin/sh\nprintf '%s' '{out}'\nprintf '%s\\n' '{err}' >&2\nexit {code}\n");
        fs::write(&path, script).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn check_reads_the_versions() {
        let dir = tempfile::tempdir().unwrap();
        let py = fake_python(dir.path(), r#"{"aiortc": "1.16.0", "av": "18.1.0"}"#, "", 0);
        let v = check_python(&py).unwrap();
        assert_eq!((v.aiortc.as_str(), v.av.as_str()), ("1.16.0", "18.1.0"));
        let py = fake_python(dir.path(), "ok", "", 0);
        assert!(matches!(check_python(&py), Err(CallError::BadCheck { .. })));
    }

    #[test]
    fn check_failures_say_how_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let hint = "pip install './python[webrtc]'";
        let no_python = dir.path().join("no-such-python");
        let e = check_python(&no_python).unwrap_err();
        assert!(matches!(e, CallError::NoPython { .. }));
        assert!(e.to_string().contains(hint), "{e}");
        assert!(e.to_string().contains("--python"), "{e}");
        let err = "/usr/bin/python3: Error while finding module specification for 'sprout.webrtc_call' (ModuleNotFoundError: No module named 'sprout')";
        let py = fake_python(dir.path(), "", err, 1);
        let e = check_python(&py).unwrap_err();
        assert!(matches!(e, CallError::NoPackage { .. }), "{e:?}");
        assert!(e.to_string().contains(hint), "{e}");
        let err = "error: the WebRTC call needs aiortc: pip install './python[webrtc]'";
        let py = fake_python(dir.path(), "", err, 2);
        let e = check_python(&py).unwrap_err();
        assert!(matches!(e, CallError::NoAiortc { .. }), "{e:?}");
        assert!(e.to_string().contains(hint), "{e}");
        let py = fake_python(dir.path(), "", "Segmentation fault", 3);
        let e = check_python(&py).unwrap_err();
        assert!(matches!(e, CallError::CheckFailed { .. }), "{e:?}");
        assert!(e.to_string().contains("Segmentation fault"), "{e}");
    }

    #[test]
    fn a_hanging_check_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("python-hang");
        fs::write(&path, "#!/bin/sh\nexec sleep 30\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        let started = Instant::now();
        let e = check_python_within(&path, Duration::from_millis(300)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(e.to_string().contains("no answer within"), "{e}");
    }
}
