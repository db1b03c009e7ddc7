//! Trace replay and fio job files: formats, timing, closed-loop depth, errors
//! with file:line, skip counters, detection, bounded memory, and the
//! repository's real job files.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use vsim::engine::{BlockConfig, RunConfig, Sim};
use vsim::params::Params;
use vsim::types::{BioSpec, Ns, Op, MS, US};
use vsim::workload::fiofile::{self, FioFile};
use vsim::workload::job::JobSpec;
use vsim::workload::trace::{self, formats::Format, TraceSource};
use vsim::workload::{Next, Source};

/// 1 GiB in sectors.
const DEV: u64 = 1 << 21;

fn data(name: &str) -> String {
    let mut p = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    p.push("tests/data");
    p.push(name);
    p.display().to_string()
}

fn params(path: &str, extra: &str) -> Params {
    let mut p = Params::parse_kv(extra).unwrap();
    p.set("path", path);
    p
}

fn open(file: &str, extra: &str) -> anyhow::Result<Box<dyn Source>> {
    trace::open(&params(&data(file), extra), "t", 0, DEV, 1)
}

/// Replay with an ideal device (instant completion), following the source's
/// wake-ups; returns (submit time, bio).
fn replay(s: &mut dyn Source, start: Ns) -> anyhow::Result<Vec<(Ns, BioSpec)>> {
    let mut now = start;
    let mut out = Vec::new();
    let mut got = Vec::new();
    for _ in 0..1_000_000 {
        out.clear();
        let next = s.poll(now, &mut out)?;
        for b in &out {
            got.push((now, *b));
            s.complete(b, now);
        }
        match next {
            Next::At(t) => {
                assert!(t >= now, "wake-up in the past");
                now = t;
            }
            Next::Wait => {}
            Next::Done => return Ok(got),
        }
    }
    panic!("source never finished");
}

fn stats(s: &dyn Source) -> serde_json::Value {
    s.input_stats()
}

#[test]
fn blkparse_q_records_with_pids_sync_and_times() {
    let mut s = open("blkparse.txt", "").unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    // kjournald's two writes were plugged (P ... U at 260 us): they go together then.
    let want: Vec<(Ns, Op, bool, u64, u32, u32, u64)> = vec![
        (260 * US, Op::Write, false, 223490, 8, 697, 1),
        (260 * US, Op::Write, false, 223498, 8, 697, 5),
        (MS, Op::Write, true, 274432, 8, 5529, 9),
        (1500 * US, Op::Read, false, 1000, 32, 5530, 12),
        (3 * MS, Op::Read, false, 9999, 8, 5529, 15),
        (10 * MS, Op::Write, false, 500, 8, 697, 17),
    ];
    let have: Vec<_> = got
        .iter()
        .map(|(t, b)| (*t, b.op, b.sync, b.sector, b.sectors, b.pid, b.tag))
        .collect();
    assert_eq!(have, want);
    let st = stats(s.as_ref());
    assert_eq!(st["format"], "blkparse");
    assert_eq!(st["arrival_action"], "Q");
    assert_eq!(st["records"], 6);
    // Q FWS (flush, no data) and Q D (discard).
    assert_eq!(st["skipped_non_data"], 2);
    assert_eq!(st["skipped_bad"], 0);
    let lines = std::fs::read_to_string(data("blkparse.txt"))
        .unwrap()
        .lines()
        .count() as u64;
    assert_eq!(st["lines"], lines);
}

#[test]
fn blkparse_without_q_uses_d_and_action_option_wins() {
    let mut s = open("blkparse_donly.txt", "").unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    assert_eq!(stats(s.as_ref())["arrival_action"], "D");
    let have: Vec<_> = got.iter().map(|(t, b)| (*t, b.sector, b.tag)).collect();
    assert_eq!(have, vec![(0, 800, 1), (200 * US, 808, 3)]);
    let mut s = open("blkparse_donly.txt", "action=Q").unwrap();
    assert!(replay(s.as_mut(), 0).unwrap().is_empty());
    // D as arrivals on a trace with Q: the D line (merged 16 sectors) is the one record of that I/O.
    let mut s = open("blkparse.txt", "action=D,max_records=1").unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].1.sector, got[0].1.sectors, got[0].1.tag),
        (223490, 16, 8)
    );
}

#[test]
fn iolog_v2_closed_by_default_and_waits_in_open_mode() {
    let mut s = open("iolog_v2.log", "").unwrap();
    let st = stats(s.as_ref());
    assert_eq!(st["format"], "iolog2");
    assert_eq!(st["mode"], "closed(depth=1)");
    let got = replay(s.as_mut(), 0).unwrap();
    let have: Vec<_> = got
        .iter()
        .map(|(_, b)| (b.op, b.sector, b.sectors, b.pid, b.sync))
        .collect();
    assert_eq!(
        have,
        vec![
            (Op::Write, 0, 8, 1000, false),
            (Op::Read, 16, 16, 1000, false),
            (Op::Read, 2048, 8, 1000, false),
            (Op::Write, 8, 8, 1000, false),
        ]
    );
    assert_eq!(stats(s.as_ref())["skipped_non_data"], 2); // trim, sync

    // Open loop: records after `wait 5` (ms since start) are due at 5 ms.
    let mut s = open("iolog_v2.log", "mode=open,sync_writes=1,pid=77").unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    let have: Vec<_> = got.iter().map(|(t, b)| (*t, b.pid, b.sync)).collect();
    assert_eq!(
        have,
        vec![
            (0, 77, true),
            (0, 77, false),
            (5 * MS, 77, false),
            (5 * MS, 77, true)
        ]
    );
}

#[test]
fn iolog_v3_times_relative_to_first_record() {
    let mut s = open("iolog_v3.log", "").unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    let have: Vec<_> = got
        .iter()
        .map(|(t, b)| (*t, b.op, b.sector, b.sectors, b.tag))
        .collect();
    assert_eq!(
        have,
        vec![
            (0, Op::Write, 0, 32, 4),
            (22 * US, Op::Read, 2048, 8, 5),
            (2000 * US, Op::Write, 32, 32, 7)
        ]
    );
    let st = stats(s.as_ref());
    assert_eq!(st["format"], "iolog3");
    assert_eq!(st["skipped_non_data"], 1);
}

#[test]
fn msr_filetime_ticks_and_byte_offsets() {
    let mut s = trace::open(&params(&data("msr.csv"), ""), "t", 0, 1 << 30, 1).unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    let have: Vec<_> = got
        .iter()
        .map(|(t, b)| (*t, b.op, b.sector, b.sectors))
        .collect();
    assert_eq!(
        have,
        vec![
            (0, Op::Write, 3154152448 / 512, 8),
            (2 * MS, Op::Read, 2048, 128),
            (2 * MS, Op::Write, 3154156544 / 512, 8),
            (1000 * MS, Op::Read, 0, 1),
        ]
    );
    assert_eq!(stats(s.as_ref())["format"], "msr");
}

#[test]
fn spc_sectors_case_extra_fields_and_asu_pid() {
    let mut s = open("spc.csv", "asu_pid=1,pid=100").unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    let have: Vec<_> = got
        .iter()
        .map(|(t, b)| (*t, b.op, b.sector, b.sectors, b.pid))
        .collect();
    assert_eq!(
        have,
        vec![
            (0, Op::Write, 303567, 7, 100),
            (2138 * US, Op::Read, 20941, 8, 101),
            (4022 * US, Op::Write, 303574, 6, 100),
            (500 * MS, Op::Read, 55, 1, 100),
        ]
    );
    let st = stats(s.as_ref());
    assert_eq!(st["format"], "spc");
    assert_eq!(st["skipped_non_data"], 1);
    // Without asu_pid every record has the constant default pid 1000 + job index.
    let mut s = trace::open(&params(&data("spc.csv"), ""), "t", 3, DEV, 1).unwrap();
    assert!(replay(s.as_mut(), 0)
        .unwrap()
        .iter()
        .all(|(_, b)| b.pid == 1003));
}

#[test]
fn open_loop_time_scale_and_start_offset() {
    let mut s = open("spc.csv", "time_scale=2").unwrap();
    let got = replay(s.as_mut(), 7 * MS).unwrap();
    let times: Vec<Ns> = got.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        times,
        vec![
            7 * MS,
            7 * MS + 4276 * US,
            7 * MS + 8044 * US,
            7 * MS + 1000 * MS
        ]
    );
    // The source asks to be woken exactly at the next record, not before.
    let mut s = open("spc.csv", "").unwrap();
    let mut out = Vec::new();
    assert_eq!(s.poll(0, &mut out).unwrap(), Next::At(2138 * US));
    assert_eq!(out.len(), 1);
    assert_eq!(s.poll(2137 * US, &mut out).unwrap(), Next::At(2138 * US));
    assert_eq!(out.len(), 1);
    // Late poll: everything due is submitted at once.
    assert_eq!(s.poll(600 * MS, &mut out).unwrap(), Next::Done);
    assert_eq!(out.len(), 4);
}

/// A reader producing `n` lines from `f(i)` on demand: a long trace without a file.
struct GenReader<F: FnMut(u64) -> String> {
    f: F,
    i: u64,
    n: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl<F: FnMut(u64) -> String> Read for GenReader<F> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.i == self.n {
                return Ok(0);
            }
            self.buf = (self.f)(self.i).into_bytes();
            self.pos = 0;
            self.i += 1;
        }
        let k = out.len().min(self.buf.len() - self.pos);
        out[..k].copy_from_slice(&self.buf[self.pos..self.pos + k]);
        self.pos += k;
        Ok(k)
    }
}

fn gen<F: FnMut(u64) -> String + Send + 'static>(n: u64, f: F) -> Box<dyn BufRead + Send> {
    Box::new(BufReader::new(GenReader {
        f,
        i: 0,
        n,
        buf: Vec::new(),
        pos: 0,
    }))
}

fn spc_line(i: u64) -> String {
    format!(
        "0,{},4096,{},{}.{:06}\n",
        (i * 7919) % 200_000 * 8,
        if i.is_multiple_of(3) { "w" } else { "r" },
        i / 1000,
        i % 1000
    )
}

#[test]
fn closed_loop_keeps_depth_outstanding() {
    let p = Params::parse_kv("depth=4").unwrap();
    let mut s =
        TraceSource::from_reader(&p, "c", 0, "gen.csv", gen(1000, spc_line), DEV, 1).unwrap();
    let mut out: Vec<BioSpec> = Vec::new();
    let mut outstanding: std::collections::VecDeque<BioSpec> = Default::default();
    let mut now = 0;
    let mut done = 0;
    let mut finished = false;
    while !finished || !outstanding.is_empty() {
        if !finished {
            out.clear();
            let next = s.poll(now, &mut out).unwrap();
            outstanding.extend(out.iter().copied());
            match next {
                Next::Wait => assert_eq!(
                    outstanding.len(),
                    4,
                    "Wait with fewer than depth outstanding"
                ),
                Next::Done => finished = true,
                Next::At(t) => assert_eq!(t, now, "closed loop must ignore timestamps"),
            }
            assert!(outstanding.len() <= 4);
            assert_eq!(s.inflight() as usize, outstanding.len());
        }
        if let Some(b) = outstanding.pop_front() {
            now += 100 * US;
            s.complete(&b, now);
            done += 1;
        }
    }
    assert_eq!(done, 1000);
    assert_eq!(s.stats().max_inflight, 4);
    // 1000 completions spaced 100 µs apart: the trace's 1 s of timestamps was ignored.
    assert_eq!(now, 100 * MS);
}

#[test]
fn bad_line_names_file_line_and_field() {
    let mut s = open("msr_bad.csv", "").unwrap();
    let e = replay(s.as_mut(), 0).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.ends_with("msr_bad.csv:3: field 6 (Size) 'abc' is not an integer"),
        "{msg}"
    );

    let mut s = open("msr_bad.csv", "skip_bad=1").unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    assert_eq!(
        got.iter().map(|(_, b)| b.tag).collect::<Vec<_>>(),
        vec![1, 2, 4]
    );
    let st = stats(s.as_ref());
    assert_eq!(st["skipped_bad"], 1);
    assert_eq!(st["records"], 3);
    assert!(st["first_bad"]
        .as_str()
        .unwrap()
        .contains("msr_bad.csv:3: field 6 (Size)"));
}

#[test]
fn bad_lines_in_each_format() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "blkparse",
            "8,0 1 1 0.0 10 Q W 100 + 8 [a]\n8,0 1 2 0.1 10 Q W 100 - 8 [a]\n",
            "x:2: field 9 ('+') '-' is not '+'",
        ),
        (
            "blkparse",
            "8,0 1 1 0.0 10 Q W 100 + 8 [a]\nhello\n",
            "x:2: field 1 (device) 'hello' is not maj,min",
        ),
        (
            "spc",
            "0,1,512,r,0.0\n0,1,512,x,0.1\n",
            "x:2: field 4 (Opcode) 'x' is not r or w",
        ),
        (
            "spc",
            "0,1,512,r,0.0\n0,1,512,r\n",
            "x:2: missing field 5 (Timestamp)",
        ),
        (
            "iolog",
            "fio version 3 iolog\n5 f wait 10 0\n",
            "x:2: 'wait' is not allowed in a version 3 iolog",
        ),
        (
            "iolog",
            "fio version 2 iolog\nf write 0\n",
            "x:2: action 'write' needs an offset and a length",
        ),
        ("iolog", "f write 0 4096\n", "x:1: expected the header"),
        (
            "msr",
            "1,h,0,Write,0,4096\n",
            "x:1: missing field 7 (ResponseTime)",
        ),
    ];
    for (fmt, text, want) in cases {
        let p = Params::parse_kv(&format!("format={fmt}")).unwrap();
        let r = TraceSource::from_reader(
            &p,
            "b",
            0,
            "x",
            trace::reader_from_bytes(text.as_bytes().to_vec()),
            DEV,
            1,
        )
        .and_then(|mut s| replay(&mut s, 0));
        let e = format!("{:#}", r.unwrap_err());
        assert!(e.contains(want), "{fmt}: got '{e}', want '{want}'");
    }
}

#[test]
fn invalid_utf8_and_beyond_device_lines_are_skippable() {
    let text = b"0,8,4096,r,0.0\n0,\xff\xfe,4096,r,0.1\n0,999999999,4096,w,0.2\n0,16,4096,w,0.3\n"
        .to_vec();
    let p = Params::parse_kv("format=spc").unwrap();
    let mut s = TraceSource::from_reader(
        &p,
        "u",
        0,
        "u.csv",
        trace::reader_from_bytes(text.clone()),
        DEV,
        1,
    )
    .unwrap();
    let e = format!("{:#}", replay(&mut s, 0).unwrap_err());
    assert!(e.contains("u.csv:2: line is not UTF-8"), "{e}");
    let p = Params::parse_kv("format=spc,skip_bad=1").unwrap();
    let mut s =
        TraceSource::from_reader(&p, "u", 0, "u.csv", trace::reader_from_bytes(text), DEV, 1)
            .unwrap();
    let got = replay(&mut s, 0).unwrap();
    assert_eq!(
        got.iter().map(|(_, b)| b.tag).collect::<Vec<_>>(),
        vec![1, 4]
    );
    assert_eq!(s.stats().skipped_bad, 2);
    assert!(s
        .stats()
        .first_bad
        .as_deref()
        .unwrap()
        .starts_with("u.csv:2: "));
}

#[test]
fn auto_detection_and_explicit_format_wins() {
    for (f, want) in [
        ("blkparse.txt", Format::Blkparse),
        ("iolog_v2.log", Format::IologV2),
        ("iolog_v3.log", Format::IologV3),
        ("msr.csv", Format::Msr),
        ("spc.csv", Format::Spc),
    ] {
        let s = TraceSource::from_reader(
            &Params::new(),
            "d",
            0,
            f,
            Box::new(BufReader::new(std::fs::File::open(data(f)).unwrap())),
            DEV,
            1,
        )
        .unwrap();
        assert_eq!(s.format(), want, "{f}");
    }
    // Explicit format wins over detection: an MSR file read as SPC fails on line 1.
    let mut s = open("msr.csv", "format=spc").unwrap();
    let e = format!("{:#}", replay(s.as_mut(), 0).unwrap_err());
    assert!(
        e.contains("msr.csv:1: field 1 (ASU) '128166372003061629' is not an integer"),
        "{e}"
    );
    // Undetectable.
    let r = TraceSource::from_reader(
        &Params::new(),
        "d",
        0,
        "junk.txt",
        trace::reader_from_bytes(b"\nsome words here\n".to_vec()),
        DEV,
        1,
    );
    let e = format!("{:#}", r.err().unwrap());
    assert!(
        e.contains("junk.txt:2: not a trace of any known format")
            && e.contains("cannot detect")
            && e.contains("format="),
        "{e}"
    );
}

#[test]
fn offsets_beyond_device_error_or_wrap() {
    // MSR record 1 ends at byte 3154156544: beyond a 1 GiB device.
    let mut s = open("msr.csv", "").unwrap();
    let e = format!("{:#}", replay(s.as_mut(), 0).unwrap_err());
    assert!(
        e.contains("msr.csv:1: sector 6160454 + 8 is beyond the device (2097152 sectors)"),
        "{e}"
    );
    let mut s = open("msr.csv", "wrap=1").unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    assert_eq!(got[0].1.sector, 6160454 % DEV);
    assert_eq!(got[1].1.sector, 2048);
    assert_eq!(stats(s.as_ref())["wrapped"], 2);
    // offset_sectors shifts every record; a wrapped record that would cross the end is
    // placed at the last sectors.
    let cap = 303567 + 1000 + 3;
    let p = params(&data("spc.csv"), "offset_sectors=1000");
    let mut s = trace::open(&p, "t", 0, cap, 1);
    let got = replay(s.as_mut().unwrap().as_mut(), 0);
    let e = format!("{:#}", got.unwrap_err());
    assert!(e.contains("spc.csv:1: sector 304567 + 7 is beyond"), "{e}");
    let p = params(&data("spc.csv"), "offset_sectors=1000,wrap=1");
    let mut s = trace::open(&p, "t", 0, cap, 1).unwrap();
    let got = replay(s.as_mut(), 0).unwrap();
    assert_eq!(got[0].1.sector, cap - 7);
    assert_eq!(got[1].1.sector, 20941 + 1000);
    assert_eq!(got[2].1.sector, (303574 + 1000) % cap);
}

#[test]
fn option_errors() {
    let e = format!("{:#}", open("spc.csv", "verify=1").err().unwrap());
    assert!(e.contains("unsupported option 'verify'"), "{e}");
    let e = format!("{:#}", open("spc.csv", "mode=open,depth=4").err().unwrap());
    assert!(e.contains("depth applies to mode=closed"), "{e}");
    let e = format!("{:#}", open("spc.csv", "time_scale=0").err().unwrap());
    assert!(e.contains("time_scale"), "{e}");
    let e = format!("{:#}", open("spc.csv", "action=D").err().unwrap());
    assert!(e.contains("applies to blkparse"), "{e}");
    let e = format!(
        "{:#}",
        trace::open(&Params::new(), "t", 0, DEV, 1).err().unwrap()
    );
    assert!(e.contains("'path' is required"), "{e}");
}

fn blk_line(i: u64) -> String {
    let t = i * 1000; // one record per µs
    let act = ["Q", "G", "I", "D", "C"][(i % 5) as usize];
    format!(
        "  8,0    1 {:8} {:5}.{:09} {:5}  {act}  {} {} + 8 [gen]\n",
        i + 1,
        t / 1_000_000_000,
        t % 1_000_000_000,
        100 + i % 7,
        if i.is_multiple_of(2) { "R" } else { "WS" },
        (i * 7919 * 8) % (DEV - 8)
    )
}

#[test]
fn million_line_trace_replays_in_constant_memory() {
    const N: u64 = 1_000_000;
    for mode in ["mode=open", "depth=32"] {
        let p = Params::parse_kv(mode).unwrap();
        let mut s =
            TraceSource::from_reader(&p, "m", 0, "gen.blk", gen(N, blk_line), DEV, 1).unwrap();
        let mut out = Vec::new();
        let mut inflight: std::collections::VecDeque<BioSpec> = Default::default();
        let mut now: Ns = 0;
        let mut polls = 0u64;
        let mut early = 0usize;
        let mut max_out = 0usize;
        loop {
            out.clear();
            let next = s.poll(now, &mut out).unwrap();
            max_out = max_out.max(out.len());
            inflight.extend(out.iter().copied());
            // Fake device: completes everything older than 2 µs, or the oldest when the source waits.
            while inflight.len() > 2 || (next == Next::Wait && !inflight.is_empty()) {
                let b = inflight.pop_front().unwrap();
                s.complete(&b, now);
                if next == Next::Wait {
                    break;
                }
            }
            polls += 1;
            if polls == 1000 {
                early = s.footprint();
            }
            match next {
                Next::At(t) => now = t,
                Next::Wait => now += US,
                Next::Done => break,
            }
        }
        let st = s.stats();
        assert_eq!(st.lines, N);
        assert_eq!(st.records, N / 5, "{mode}");
        assert!(max_out <= 32, "{mode}: a poll returned {max_out} bios");
        let late = s.footprint();
        assert!(
            early > 0 && late <= early + 1024,
            "{mode}: footprint grew from {early} to {late} bytes"
        );
        assert!(late < 64 * 1024, "{mode}: footprint {late} bytes");
        if mode == "mode=open" {
            // The last Q is at line 999996 (0-based 999995): 999.995 ms.
            assert_eq!(now, 999_995 * US);
        }
    }
}

#[test]
fn engine_replays_trace_at_trace_times() {
    let dev = vsim::device::make(
        "fixed",
        &Params::parse_kv("service_us=10,servers=64,size=8g").unwrap(),
        1,
    )
    .unwrap();
    let info = dev.info();
    let sched = vsim::sched::make("noop", &Params::new(), &info).unwrap();
    let run = RunConfig {
        runtime: 0,
        interval: 0,
        log_issues: true,
    };
    let mut sim = Sim::new(BlockConfig::default(), run, sched, dev);
    let src = trace::open(
        &params(&data("blkparse.txt"), ""),
        "blk",
        0,
        info.capacity_sectors,
        1,
    )
    .unwrap();
    sim.add_source(src, 0);
    let o = sim.run().unwrap();
    let issues: Vec<(Ns, u64, u32, Vec<u64>)> = o
        .issues
        .iter()
        .map(|i| (i.time_ns, i.sector, i.pid, i.tags.clone()))
        .collect();
    assert_eq!(
        issues,
        vec![
            // Plugged together, merged as the trace's D (223490 + 16) says.
            (260 * US, 223490, 697, vec![1, 5]),
            (MS, 274432, 5529, vec![9]),
            (1500 * US, 1000, 5530, vec![12]),
            (3 * MS, 9999, 5529, vec![15]),
            (10 * MS, 500, 697, vec![17]),
        ]
    );
    assert_eq!(o.elapsed, 10 * MS + 10 * US);
    assert_eq!(o.source_stats[0]["records"], 6);
}

#[test]
fn engine_closed_loop_depth() {
    let dev = vsim::device::make(
        "fixed",
        &Params::parse_kv("service_us=100,servers=64").unwrap(),
        1,
    )
    .unwrap();
    let info = dev.info();
    let sched = vsim::sched::make("noop", &Params::new(), &info).unwrap();
    let mut sim = Sim::new(
        BlockConfig::default(),
        RunConfig {
            runtime: 0,
            interval: 0,
            log_issues: true,
        },
        sched,
        dev,
    );
    let p = Params::parse_kv("depth=4").unwrap();
    let src = TraceSource::from_reader(
        &p,
        "c",
        0,
        "gen.csv",
        gen(1000, spc_line),
        info.capacity_sectors,
        1,
    )
    .unwrap();
    sim.add_source(Box::new(src), 0);
    let o = sim.run().unwrap();
    assert_eq!(o.issues.len(), 1000);
    // Depth 4 on 64 servers of 100 µs: 250 rounds.
    assert_eq!(o.elapsed, 250 * 100 * US);
    let max_overlap = o
        .issues
        .iter()
        .map(|i| {
            o.issues
                .iter()
                .filter(|j| j.time_ns <= i.time_ns && j.complete_ns > i.time_ns)
                .count()
        })
        .max()
        .unwrap();
    assert_eq!(max_overlap, 4);
}

// ---------------------------------------------------------------- fio files

fn repo_job(name: &str) -> PathBuf {
    let mut p = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    p.push("../lab/jobs");
    p.push(name);
    p
}

#[test]
fn fio_repo_job_files_parse_and_build_jobs() {
    let f = fiofile::parse_file(&repo_job("mixed-randrw.fio")).unwrap();
    assert_eq!(f.jobs.len(), 1);
    assert_eq!(f.jobs[0].0, "mixed");
    assert_eq!(f.runtime_ns, Some(5_000_000_000));
    assert_eq!(f.ramp_ns, Some(1_000_000_000));
    assert!(f.time_based);
    assert_eq!(f.ignored, vec!["randrepeat"]);
    assert_eq!(f.jobs[0].1.raw("ioengine"), Some("libaio"));
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    let j = JobSpec::from_params(&f.jobs[0].1, &f.jobs[0].0, 8 << 30, f.time_based).unwrap();
    assert_eq!(
        (j.random, j.read_pct, j.bs, j.iodepth, j.size, j.sync_writes),
        (true, 70, 4096, 32, 1 << 30, true)
    );

    let f = fiofile::parse_file(&repo_job("randread-qd32.fio")).unwrap();
    assert_eq!(f.jobs.len(), 1);
    assert_eq!(f.ignored, vec!["group_reporting"]);
    let j = JobSpec::from_params(&f.jobs[0].1, &f.jobs[0].0, 8 << 30, f.time_based).unwrap();
    assert_eq!(
        (
            j.name.as_str(),
            j.random,
            j.read_pct,
            j.numjobs,
            j.iodepth,
            j.size
        ),
        ("randread", true, 100, 2, 32, 512 << 20)
    );
}

#[test]
fn fio_globals_flags_comments_and_synonyms() {
    let text = "\
# header comment
[global]
bs = 8k ; trailing comment
direct
runtime=2m
time_based

[reader]
rw=randread
iodepth=4

[writer]
rw=write
bs=64k
buffered=1
io_limit=1g
sync=dsync
";
    let f: FioFile = fiofile::parse_str(text, "t.fio").unwrap();
    assert_eq!(f.runtime_ns, Some(120_000_000_000));
    assert!(f.time_based);
    let names: Vec<&str> = f.jobs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["reader", "writer"]);
    let r = &f.jobs[0].1;
    assert_eq!(
        (r.raw("bs"), r.raw("direct"), r.raw("iodepth")),
        (Some("8k"), Some("1"), Some("4"))
    );
    let w = &f.jobs[1].1;
    assert_eq!(
        (
            w.raw("bs"),
            w.raw("direct"),
            w.raw("io_size"),
            w.raw("sync")
        ),
        (Some("64k"), Some("0"), Some("1g"), Some("1"))
    );
    for (n, p) in &f.jobs {
        JobSpec::from_params(p, n, 8 << 30, f.time_based).unwrap();
    }
}

#[test]
fn fio_file_errors_name_file_line() {
    let cases: &[(&str, &str)] = &[
        (
            "[global]\nbs=4k\n[mix]\nrw=randrw\nverify=md5\n",
            "job.fio:5: unsupported option 'verify' in [mix]",
        ),
        (
            "[global]\ninclude other.fio\n[a]\n",
            "job.fio:2: 'include' is not supported",
        ),
        (
            "bs=4k\n[a]\n",
            "job.fio:1: option 'bs' before the first section",
        ),
        ("[a]\nbs\n", "job.fio:2: option 'bs' in [a] needs a value"),
        (
            "[a]\nfsync\n",
            "job.fio:2: unsupported option 'fsync' in [a]",
        ),
        (
            "[a\nbs=4k\n",
            "job.fio:1: section header '[a' has no closing ']'",
        ),
        ("[global]\nbs=4k\n", "job.fio: no job sections"),
        ("[a]\nruntime=soon\n", "job.fio:2: option 'runtime' in [a]"),
        (
            "[a]\nfilename=/dev/$DEV\n",
            "job.fio:2: variable substitution",
        ),
        (
            "[a]\nruntime=5\n[b]\nruntime=6\n",
            "job.fio:4: runtime 6000000000 in [b] differs",
        ),
    ];
    for (text, want) in cases {
        let e = format!("{:#}", fiofile::parse_str(text, "job.fio").unwrap_err());
        assert!(e.contains(want), "got '{e}', want '{want}'");
    }
}

/// A blkparse trace with plugging: process 100 plugs three sequential
/// writes (Q G P, Q M, Q M ... U), process 200 reads alone between them.
const PLUGGED: &str = "\
8,0 0 1 0.000000000 100 Q W 1000 + 8 [a]
8,0 0 2 0.000000100 100 G W 1000 + 8 [a]
8,0 0 3 0.000000200 100 P N [a]
8,0 0 4 0.000000300 100 Q W 1008 + 8 [a]
8,0 0 5 0.000000400 100 M W 1008 + 8 [a]
8,0 1 1 0.000000500 200 Q R 5000 + 8 [b]
8,0 1 2 0.000000600 200 G R 5000 + 8 [b]
8,0 1 3 0.000000700 200 I R 5000 + 8 [b]
8,0 1 4 0.000000800 200 D R 5000 + 8 [b]
8,0 0 6 0.000050000 100 Q W 1016 + 8 [a]
8,0 0 7 0.000050100 100 M W 1016 + 8 [a]
8,0 0 8 0.000060000 100 U N [a] 1
8,0 0 9 0.000060100 100 I W 1000 + 24 [a]
8,0 0 10 0.000060200 100 D W 1000 + 24 [a]
8,0 1 5 0.002000000 200 Q R 6000 + 8 [b]
8,0 1 6 0.002000100 200 G R 6000 + 8 [b]
8,0 1 7 0.002000200 200 D R 6000 + 8 [b]
";

/// A blkparse text replayed with trace options `opts` on `fixed:DEV` under
/// `sched`, requests split at `max_sectors` (0: the default), issues logged.
fn replay_text(
    text: &str,
    opts: &str,
    dev: &str,
    sched: &str,
    max_sectors: u32,
) -> vsim::engine::Outcome {
    let dev = vsim::device::make("fixed", &Params::parse_kv(dev).unwrap(), 1).unwrap();
    let info = dev.info();
    let sched = vsim::sched::make(sched, &Params::new(), &info).unwrap();
    let block = BlockConfig {
        max_sectors,
        ..BlockConfig::default()
    };
    let rc = RunConfig {
        runtime: 0,
        interval: 0,
        log_issues: true,
    };
    let mut sim = Sim::new(block, rc, sched, dev);
    let src = TraceSource::from_reader(
        &Params::parse_kv(opts).unwrap(),
        "t",
        0,
        "trace.blkparse",
        trace::reader_from_bytes(text.as_bytes().to_vec()),
        info.capacity_sectors,
        1,
    )
    .unwrap();
    sim.add_source(Box::new(src), 0);
    sim.run().unwrap()
}

/// Replay plugs where the trace's process did (issue 38: the kernel issued
/// 9,540 requests for a dbench trace, the replay made 43,946): the three
/// writes of the plug are submitted together at its U and merge into one
/// request, the reads go alone at their own Q times, and the replay's
/// requests equal the trace's D events.
#[test]
fn replay_plugs_where_the_trace_did() {
    let src = |text: &str| {
        TraceSource::from_reader(
            &Params::new(),
            "t",
            0,
            "plugged.blkparse",
            trace::reader_from_bytes(text.as_bytes().to_vec()),
            DEV,
            1,
        )
        .unwrap()
    };
    let mut s = src(PLUGGED);
    let got = replay(&mut s, 0).unwrap();
    let have: Vec<(Ns, u64)> = got.iter().map(|(t, b)| (*t, b.sector)).collect();
    assert_eq!(
        have,
        vec![
            (500, 5000),
            (60_000, 1000),
            (60_000, 1008),
            (60_000, 1016),
            (2 * MS, 6000)
        ]
    );
    let st = s.input_stats();
    assert_eq!(
        (st["plugs"].as_u64(), st["kernel_requests"].as_u64()),
        (Some(1), Some(3))
    );

    let run = |text: &str| replay_text(text, "", "service_us=10,size=1g", "noop", 0);
    let o = run(PLUGGED);
    let issues: Vec<(u64, u32, Vec<u64>)> = o
        .issues
        .iter()
        .map(|i| (i.sector, i.sectors, i.tags.clone()))
        .collect();
    assert_eq!(
        issues,
        vec![
            (5000, 8, vec![6]),
            (1000, 24, vec![1, 4, 10]),
            (6000, 8, vec![15])
        ]
    );
    assert_eq!((o.requests, o.merged_bios), (3, 2));

    // Without its P and U lines the same bios do not merge: nothing plugged them.
    let unplugged: String = PLUGGED
        .lines()
        .filter(|l| !l.contains(" P ") && !l.contains(" U "))
        .map(|l| format!("{l}\n"))
        .collect();
    let o = run(&unplugged);
    assert_eq!((o.requests, o.merged_bios), (5, 0));
}

/// A real trace (ext4 on null_blk under 6.1: dd, three files, jbd2), whose
/// requests were split at 255 sectors: the replay at max_sectors_kb=127 makes
/// the trace's 104 requests (D events) from its 42 bios, with its 18 merges
/// (M events), all inside plugs.
#[test]
fn a_real_traces_replay_makes_the_kernels_requests() {
    let text = std::fs::read_to_string(data("etrace-three-files.blkparse")).unwrap();
    let o = replay_text(&text, "", "service_us=20,size=1g", "noop", 254);
    assert_eq!(o.source_stats[0]["kernel_requests"], 104);
    assert_eq!((o.bios, o.merged_bios, o.requests), (42, 18, 104));
}

/// `vlab trace --blktrace` of dbench (8 clients, the first 4,000 lines) and
/// of a tree copy (tar of /usr/include/linux and asm-generic, sync) on ext4 on
/// null_blk (64 tags, 255-sector requests) under 6.1: replayed on a device
/// with those limits (and with one tag), open and closed loop, under noop and deadline, the
/// replay makes the kernel's requests (its D events) within 10 %; without
/// the P/U lines, 3x to 11x as many (issue 38 measured 4.6x on its dbench).
#[test]
fn replays_of_dbench_and_a_tree_copy_make_the_kernels_requests() {
    let run = |text: &str, sched: &str, extra: &str, depth: u32| {
        let dev = format!("service_us=20,queue_depth={depth},size=1g");
        let o = replay_text(text, extra, &dev, sched, 254);
        assert!(!o.balance.lost && o.balance.unfinished == 0);
        let k = o.source_stats[0]["kernel_requests"].as_u64().unwrap();
        o.requests as f64 / k as f64
    };
    for (file, d) in [
        ("dbench8-6.1.blkparse", 360),
        ("copy-tree-6.1.blkparse", 92),
    ] {
        let text = std::fs::read_to_string(data(file)).unwrap();
        let ds = text
            .lines()
            .filter(|l| l.split_whitespace().nth(5) == Some("D"))
            .count();
        assert_eq!(ds, d, "{file}");
        // The traced device's 64 tags, and one tag (a task asleep for its tag
        // keeps the rest of its plug, which then merges into its request).
        for depth in [64, 1] {
            for sched in ["noop", "deadline"] {
                for extra in ["", "mode=closed,depth=8"] {
                    let r = run(&text, sched, extra, depth);
                    assert!(
                        (0.9..=1.1).contains(&r),
                        "{file} {sched} {extra} queue depth {depth}: {r:.2}x the D events"
                    );
                }
            }
        }
        let unplugged: String = text
            .lines()
            .filter(|l| !matches!(l.split_whitespace().nth(5), Some("P" | "U" | "UT")))
            .map(|l| format!("{l}\n"))
            .collect();
        let r = run(&unplugged, "noop", "", 64);
        assert!(r > 3.0, "{file} without P/U: {r:.2}x");
    }
}
