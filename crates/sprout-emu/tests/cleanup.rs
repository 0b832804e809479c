//! Nothing the emulator creates outlives it: not when it is stopped, not when it is dropped,
//! not when its process is SIGKILLed (the kernel cleans up because nothing is persistent), and
//! the commands it spawned die with it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use sprout_emu::leftovers::{interface_names, process_gone, remains, wait_until};
use sprout_emu::{Emulator, EmulatorConfig};
use sprout_link::constant_rate_trace;
use sprout_os::caps::has_network_privileges;

fn config() -> EmulatorConfig {
    let trace = Arc::new(constant_rate_trace("12mbit", 12.0, 1.0).unwrap());
    EmulatorConfig::new(trace.clone(), trace)
}

fn assert_no_trace_of(iface: &str, addrs: &[String]) {
    let mut left = Vec::new();
    assert!(
        wait_until(Duration::from_secs(3), || {
            left = remains(iface, addrs);
            left.is_empty()
        }),
        "left behind: {left:?}"
    );
}

#[test]
fn stop_and_drop_remove_everything_and_kill_commands() {
    if !has_network_privileges() || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("skipped: not root, or no /dev/net/tun");
        return;
    }
    for stop in [true, false] {
        let emu = Emulator::start(config()).unwrap();
        let iface = emu.outside_interface().to_string();
        let addrs = [
            emu.mobile_addr().to_string(),
            emu.outside_addr().to_string(),
        ];
        assert!(interface_names().contains(&iface));
        let present = remains(&iface, &addrs);
        assert!(
            present.contains(&format!("route to {}", addrs[0])),
            "{present:?}"
        );
        let mut child = emu
            .spawn_in_namespace(Command::new("sleep").arg("30"))
            .unwrap();
        let pid = child.id();
        if stop {
            emu.stop().unwrap();
        } else {
            drop(emu);
        }
        // Killed through its parent-death signal.
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(process_gone(pid));
        assert_no_trace_of(&iface, &addrs);
    }
}

/// Not a test on its own: the body of the child process of `sigkill_leaves_nothing_behind`.
#[test]
#[ignore = "helper process for sigkill_leaves_nothing_behind"]
#[allow(clippy::zombie_processes)] // killed with this process, on purpose
fn helper_emulator_until_killed() {
    if std::env::var_os("SPROUT_EMU_HELPER").is_none() {
        return;
    }
    let emu = Emulator::start(config()).unwrap();
    let child = emu
        .spawn_in_namespace(Command::new("sleep").arg("30"))
        .unwrap();
    println!(
        "READY {} {} {} {}",
        emu.outside_interface(),
        emu.mobile_addr(),
        emu.outside_addr(),
        child.id()
    );
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn sigkill_leaves_nothing_behind() {
    if !has_network_privileges() || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("skipped: not root, or no /dev/net/tun");
        return;
    }
    // The helper's name as the harness knows it: its module's path within the test binary.
    let (_, module) = module_path!().split_once("::").unwrap();
    let helper_name = format!("{module}::helper_emulator_until_killed");
    let mut helper = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &helper_name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SPROUT_EMU_HELPER", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = None;
    for line in BufReader::new(helper.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // libtest prints "test NAME ... " before the helper's own output on the same line.
        if let Some(i) = line.find("READY ") {
            ready = Some(line[i + 6..].to_string());
            break;
        }
    }
    let ready = ready.expect("helper did not start the emulator");
    let fields: Vec<&str> = ready.split_whitespace().collect();
    let (iface, addrs, child) = (
        fields[0],
        [fields[1].to_string(), fields[2].to_string()],
        fields[3].parse::<u32>().unwrap(),
    );
    assert!(interface_names().iter().any(|l| l == iface));
    assert!(!process_gone(child));
    helper.kill().unwrap(); // SIGKILL
    helper.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(3), || process_gone(child)),
        "the command survived the emulator"
    );
    assert_no_trace_of(iface, &addrs);
}
