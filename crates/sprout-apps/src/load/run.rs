//! `sprout bench load` from start to verdict: the server process, the clients, the
//! measurements, the report.

use std::path::Path;
use std::time::Instant;

use crate::load::control::{run_clients, ClientEnd, Phase, Target};
use crate::load::error::LoadError;
use crate::load::options::LoadOptions;
use crate::load::procfs::{cpu_seconds, status_field, udp_drops};
use crate::load::report::{build, print_report, LoadReport, Measured};
use crate::load::server::ServerProcess;

/// Checks the options; returns the ramp, s.
fn check(o: &LoadOptions) -> Result<f64, LoadError> {
    let invalid = |m: String| Err(LoadError::InvalidOption(m));
    if o.sessions == 0 || !(o.duration > 0.0 && o.duration * 1000.0 <= u32::MAX as f64) {
        return invalid("--sessions and --duration must be positive".into());
    }
    if !(o.rate >= 1.0 && o.rate <= u32::MAX as f64) {
        return invalid(format!("--rate must be at least 1 kbit/s, got {}", o.rate));
    }
    if !(o.tolerance >= 0.0 && o.tolerance <= 1.0) {
        return invalid(format!(
            "--tolerance must be between 0 and 1, got {}",
            o.tolerance
        ));
    }
    let ramp = o.ramp.unwrap_or((o.sessions as f64 * 0.05).min(10.0));
    if !(ramp.is_finite() && ramp >= 0.0) {
        return invalid(format!(
            "--ramp must be a number of seconds, 0 or more, got {ramp}"
        ));
    }
    Ok(ramp)
}

/// Runs `sprout bench load` with `sprout_exe` (the `sprout` binary) as the server under test:
/// prints the report (stdout; progress on stderr) and returns it, or
/// [`LoadError::SessionsLost`] when a session was lost or delivered less than the tolerance.
pub fn run(o: &LoadOptions, sprout_exe: &Path) -> Result<LoadReport, LoadError> {
    let ramp = check(o)?;
    let started = Instant::now();
    let server = ServerProcess::start(sprout_exe, o.sessions)?;
    let pid = server.pid.to_string();
    let rss_idle_kib = status_field(server.pid, "VmRSS:").unwrap_or(0);
    let cpu_before = cpu_seconds(&pid).unwrap_or(0.0);
    let bench_cpu_before = cpu_seconds("self").unwrap_or(0.0);
    let target = Target {
        port: server.port,
        key: server.key,
        pid: server.pid,
    };
    // On an error the server ends as it is dropped.
    let outcome = run_clients(o, ramp, &target);
    let measured = Measured {
        server_cpu_s: cpu_seconds(&pid).unwrap_or(cpu_before) - cpu_before,
        rss_idle_kib,
        rss_peak_kib: status_field(server.pid, "VmHWM:").unwrap_or(0),
        server_socket_drops: udp_drops().get(&server.port).copied().unwrap_or(0),
        bench_cpu_s: cpu_seconds("self").unwrap_or(bench_cpu_before) - bench_cpu_before,
    };
    let outcome = outcome?;
    // Wait for the server's summaries of the sessions that just ended, then stop it.
    let accepted: Vec<String> = outcome
        .clients
        .iter()
        .filter(|(_, p)| {
            !matches!(
                p,
                Phase::Done {
                    end: ClientEnd::Failed
                }
            )
        })
        .filter_map(|(c, _)| Some(c.as_ref()?.ep.local_addr().to_string()))
        .collect();
    let summaries = server.stop(&accepted)?;
    let report = build(
        o,
        ramp,
        outcome,
        &summaries,
        &measured,
        started.elapsed().as_secs_f64(),
    );
    print_report(&report, o.json)?;
    if report.lost > 0 {
        return Err(LoadError::SessionsLost {
            lost: report.lost,
            sessions: report.sessions,
            tolerance: o.tolerance,
        });
    }
    Ok(report)
}
