//! What we know of why our figures depart from the paper's, for report.md: per scheme (the
//! introduction's table) and per link (Figure 7).

use std::fmt::Write as _;

use super::format::ratio;
use super::tables::SummaryRow;

/// Why a scheme's average departs from the paper's introduction table, where we know.
const PEER_NOTES: [(&str, &str); 5] = [
    (
        "cubic",
        "Over the unlimited queues nothing is ever dropped: the only congestion signals are \
         timeouts of ACKs queued behind the other direction's data, which are spurious and \
         undone from timestamps (as Linux does). So Cubic never leaves slow start, its flight is \
         held at the 4 MiB send buffer, and its delay is the time the link takes to drain that \
         buffer: tens of seconds on the 3G links. The kernel's own Cubic through our emulator \
         does the same on Verizon LTE (8.5-11.6 s, see the README's emulated evaluation). The \
         paper does not publish the buffers of its 2012 kernel.",
    ),
    (
        "compound",
        "Compound, Reno and Cubic give the same figures on most link directions: with no loss \
         over the unlimited queues (see Cubic) none of them leaves slow start, their slow \
         starts are the same (RFC 5681 with RFC 3465's byte counting, no HyStart), and \
         Compound's delay window only acts after slow start. Where a real loss ends slow start \
         (the EV-DO uplink) Compound's queue estimate (about 175 packets) is far above its \
         gamma of 30, so its delay window stays 0: over a deep buffer Compound is Reno by \
         design. The paper's Compound ran on Windows 7, whose buffer sizes for the test are not \
         published; its 1.53 s is what a flow held to a window of a few hundred kilobytes \
         would queue on these links (our reading, not a measurement).",
    ),
    (
        "ledbat",
        "RFC 6817 limits LEDBAT's growth to one packet per round trip (GAIN 1, \
         ALLOWED_INCREASE 1), too slow to follow LTE's capacity swings after each back-off, so \
         it leaves most of the LTE links' capacity unused; the paper's LEDBAT (a 2012 uTP \
         implementation) is not specified.",
    ),
    (
        "cubic-codel",
        "Most of the average comes from the 3G links (EV-DO 1.2-1.7 s, UMTS 0.7-0.8 s; LTE \
         0.3-0.7 s): CoDel drops only as packets leave the queue, so through an outage nothing \
         is dropped, and afterwards it drops one packet per interval (shortening with \
         interval/sqrt(count)), too slowly to empty at once a queue built at the rate before \
         the outage. The paper publishes only the average.",
    ),
    (
        "sprout-ewma",
        "Our Sprout-EWMA's gain is not published (we use 1/8 per 20 ms tick); a gain that \
         reacts faster or slower moves its throughput against Sprout's.",
    ),
];

/// The schemes whose Sprout-relative throughput or self-inflicted delay departs from the
/// paper's introduction table by more than a third, each with what we know of why.
pub(super) fn peer_departures(rows: &[SummaryRow]) -> String {
    let mut s = String::from("### Where a scheme departs from the paper by more than a third\n\n");
    let mut any = false;
    for r in rows {
        let mut what = Vec::new();
        if let Some(p) = r.paper_sprout_speedup {
            let (text, far) = ratio(r.sprout_speedup, Some(p));
            if far {
                what.push(format!(
                    "Sprout's speedup over it {:.2}x against the paper's {p:.2}x (ratio {text})",
                    r.sprout_speedup
                ));
            }
        }
        if let Some(p) = r.paper_self_inflicted_s {
            let (text, far) = ratio(r.self_inflicted_s, Some(p));
            if far {
                what.push(format!(
                    "self-inflicted delay {:.2} s against the paper's {p:.2} s (ratio {text})",
                    r.self_inflicted_s
                ));
            }
        }
        if what.is_empty() {
            continue;
        }
        any = true;
        let why = PEER_NOTES
            .iter()
            .find(|(k, _)| *k == r.scheme)
            .map_or("We do not know why yet.", |(_, n)| n);
        let _ = writeln!(s, "- **{}**: {}. {why}", r.scheme, what.join("; "));
    }
    if !any {
        s.push_str("None: every scheme is within a third of the paper's figures.\n");
    }
    s
}

/// The reasons, known to us, why single links depart from the paper's published points.
pub(super) const DEPARTURE_NOTES: &str = "\
- The paper's Verizon LTE points come from the full drive trace; `Verizon-LTE-short` is a 140 s \
excerpt of it, so only 80 s are measured after the 60 s skip.
- A run ends when the shorter of its two traces does, as the paper's Cellsim, which did not \
loop traces, ended. On AT&T this measures 786 s of the 1012 s uplink and leaves out its 78 s gap \
(787-865 s), which begins as the downlink recording ends and looks like an artefact of the capture.
- Outages dominate the 95th percentile on some links (EV-DO has gaps of 11 s): a few seconds of \
difference in how a scheme drains its queue after an outage move the self-inflicted delay by \
hundreds of milliseconds. A Sprout sender's 50 ms heartbeats pile up in the queue during an \
outage, and on the EV-DO downlink after its 11.6 s gap the link delivers one or two packets a \
second, less than the heartbeats themselves.
- The receiver's model is the authors' arithmetic (their 257-value grid with an outage at \
exactly 0, their tabulated Gaussian, kernel span and forecast tables): it reproduces every \
forecast their code computes on 326 test sequences. The grid as the paper's text reads \
(`model.grid=ZeroOutage`: 256 values, value 0 a sticky outage) forecasts more from a trickle of \
packets and sends more; the `model` experiment (`--experiments model`) shows each variant's \
figures. The window skips the forecast tick spent in transit, as the authors' code does \
(`counts(i + 5) - counts(i)`), which the paper's text does not say.
- Simulated Sprout hosts wake for their timers up to 1 ms late (uniform, from the seed), as real \
event loops that sleep in whole milliseconds do; the TCP peers stand for kernel stacks and keep \
exact time. With one direction loaded, feedback rides only on the \
idle side's 50 ms heartbeats, and throughput depends on how they fall against the 20 ms ticks: \
seeds of the same run differ by up to 20 points (Verizon LTE, 120 s: 35-52% down, 35-58% up).
- Loss-based peers (Cubic, Reno, Compound) see no loss over unlimited queues and stay in slow \
start with their flight held at Linux's 4 MiB send buffer, so their delay is tens of seconds; \
with both directions saturated, each direction's ACKs wait behind the other's data. The spurious \
timeouts those late ACKs cause are undone with timestamps, as Linux does (Eifel, RFC 3522/4015). \
The paper's peers show lower delays; its buffer sizes and how its runs shared the reverse path \
are not published.
- LEDBAT stays well below the paper's throughput on the LTE links, most likely because RFC 6817 \
limits its growth to one packet per round trip (GAIN 1, ALLOWED_INCREASE 1), too slow to follow LTE's capacity \
swings after each back-off; the paper's LEDBAT (a 2012 uTP implementation) is not specified.
- Sprout-EWMA's gain is not published; we use 1/8 per 20 ms tick.
- Throughput here includes our header bytes (about 3% of a full packet), as the paper's did.
- The TCP peers are our own sans-IO implementations from their specifications (see the \
`sprout-tcp` crate), not the 2012 Linux kernel's: they open with Linux's handshake and timers \
and grow their windows only while the window limits the flow, but have no HyStart, SACK or TSO.
";
