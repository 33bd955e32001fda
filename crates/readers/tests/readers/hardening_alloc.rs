//! Bounded allocation: crafted files whose length fields claim 2^63, `u64::MAX`
//! or `u32::MAX` bytes (records, chunks, uncompressed sizes, strings, maps,
//! sections, blocks, packets), payloads with 2^32-element arrays, deeply nested
//! and self-referencing schemas. Each must end in a clear error (or a
//! documented cap), quickly, without allocating what the length field claims.
//!
//! # How allocation is measured
//!
//! A counting `#[global_allocator]` cannot be installed in this shared test
//! crate, and in-process memory figures are polluted by the tests running in
//! parallel. So every case runs **in its own child process**: the test re-runs
//! the test binary itself (`current_exe() <this test> --exact
//! --test-threads=1`) with `LOGSQL_ALLOC_CHILD=<test name>` set, and the child
//! runs the case alone. The child
//!
//! - reads its peak virtual memory (`VmPeak` in `/proc/self/status`) before
//!   and after the case and fails if it grew by more than [`BUDGET`] (64 MiB).
//!   Virtual size is the right measure: `vec![0; n]` of a huge `n` is a lazy
//!   `mmap` that would not show in the resident size, but it does show in
//!   `VmPeak`. Every crafted length is at least `u32::MAX` (4 GiB), so any
//!   allocation sized from it exceeds the budget 64 times over, while the
//!   crafted inputs themselves are a few KiB;
//! - runs under `ulimit -v` of [`ADDRESS_LIMIT`] (8 GiB), so a reader that
//!   did try to fill a huge buffer aborts ("memory allocation of N bytes
//!   failed") instead of taking the machine's memory; the parent reports that
//!   as a failure with the child's output;
//! - must finish within [`TIME_LIMIT`] (hangs, e.g. looping 2^32 times over
//!   zero-sized array elements, are failures too; the parent kills the child).
//!
//! Off Linux (no `/proc`, no `ulimit -v`) the cases run in-process and only
//! their behaviour (a clear error) is checked.
//!
//! What a case checks besides memory: the whole read path a query can reach
//! (format detection, summary, every chunk, every typed table, and each
//! channel's payload decoder on every message) reports at least one error,
//! and every error names the crafted file; decoder cases compile the schema
//! and decode the payload and expect an error naming the cause.
//!
//! Documented caps met along the way: [`logsql_readers::compression::MAX_CHUNK_SIZE`]
//! (4 GiB declared uncompressed size; below it the decompressor reserves at
//! most 1024× the compressed size + 1 MiB up front), ROS1
//! `ros1msg::plan::MAX_DEPTH` (32) and `parse::MAX_FIXED_LEN` (2^24), CDR,
//! protobuf and JSON depth limits (`MAX_DEPTH` in each decoder), JSON
//! `$ref` repetition (`MAX_REF_REPEAT`).

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use logsql_decode::{ColumnBuilder, append_message};
use logsql_readers::formats;
use logsql_readers::io::BytesReader;
use logsql_readers::model::{Channel, Flow, Message, Selection};
use logsql_readers::table::{RowReceiver, Value};

/// Most the child's peak virtual memory may grow while running one case.
const BUDGET: u64 = 64 << 20;
/// Address-space limit of the child process (`ulimit -v`), a safety net.
const ADDRESS_LIMIT: u64 = 8 << 30;
/// Longest a case may take (debug build).
const TIME_LIMIT: Duration = Duration::from_secs(60);
/// Environment variable that tells the re-run test binary which case to run.
const CHILD_ENV: &str = "LOGSQL_ALLOC_CHILD";

/// Peak virtual memory of this process, in bytes (Linux only).
fn vm_peak() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmPeak:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Runs `case` in a child process under the memory and time limits (see the
/// module doc). `name` is the test function's name.
fn isolated(name: &str, case: fn()) {
    if let Err(e) = run_isolated(name, case) {
        panic!("{e}");
    }
}

/// [`isolated`], returning the failure instead of panicking (`Ok` also when
/// not on Linux, where the case ran in-process).
fn run_isolated(name: &str, case: fn()) -> Result<(), String> {
    run_isolated_as(name, name, case)
}

/// Runs `case` (known as `name`) in a child process that re-runs test `test`.
fn run_isolated_as(test: &str, name: &str, case: fn()) -> Result<(), String> {
    if std::env::var(CHILD_ENV).as_deref() == Ok(name) {
        // Warm up this thread's malloc arena so its reservation is in the baseline.
        drop(std::hint::black_box(vec![1u8; 1 << 20]));
        let before = vm_peak().expect("VmPeak");
        let start = Instant::now();
        case();
        let grown = vm_peak().expect("VmPeak").saturating_sub(before);
        println!(
            "ALLOC-CASE {name}: VmPeak grew by {grown} bytes, {:?}",
            start.elapsed()
        );
        assert!(
            grown <= BUDGET,
            "{name}: peak virtual memory grew by {grown} bytes (budget {BUDGET})"
        );
        return Ok(());
    }
    if !cfg!(target_os = "linux") || vm_peak().is_none() {
        case();
        return Ok(());
    }
    let exe = std::env::current_exe().expect("test binary");
    // `readers::hardening_alloc` → `hardening_alloc::name`.
    let path = module_path!()
        .split_once("::")
        .map_or(module_path!(), |(_, rest)| rest);
    let test = format!("{path}::{test}");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {} && exec \"$0\" \"$@\"",
            ADDRESS_LIMIT / 1024
        ))
        .arg(&exe)
        .args([test.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the test binary");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if start.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = String::new();
    let mut err = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    match status {
        None => {
            return Err(format!(
                "{name}: no result within {TIME_LIMIT:?}\n{out}\n{err}"
            ));
        }
        Some(s) if !s.success() => {
            return Err(format!("{name}: child failed ({s})\n{out}\n{err}"));
        }
        Some(_) => {}
    }
    let Some(line) = out.lines().find(|l| l.starts_with("ALLOC-CASE")) else {
        return Err(format!(
            "{name}: the child did not run the case\n{out}\n{err}"
        ));
    };
    eprintln!("{line}");
    Ok(())
}

/// The harness itself: a case that maps 1 GiB (lazily, never touched) fails
/// the budget, and one that tries to fill 16 GiB is stopped by the address
/// limit; both are reported as failures, so passing cases mean something.
#[test]
fn harness_catches_large_allocations() {
    fn lazy_gib() {
        let v = std::hint::black_box(vec![0u8; 1 << 30]);
        assert_eq!(v.len(), 1 << 30);
    }
    fn filled_16_gib() {
        let v = std::hint::black_box(vec![7u8; 16 << 30]);
        assert_eq!(v.len(), 16 << 30);
    }
    if std::env::var_os(CHILD_ENV).is_none() && vm_peak().is_none() {
        return; // not on Linux: the child-process harness is not used
    }
    for (name, case) in [
        ("lazy_gib", lazy_gib as fn()),
        ("filled_16_gib", filled_16_gib),
    ] {
        if std::env::var(CHILD_ENV).as_deref() == Ok(name) {
            let _ = run_isolated(name, case);
            return;
        }
    }
    for (name, case, expect) in [
        ("lazy_gib", lazy_gib as fn(), "peak virtual memory grew"),
        ("filled_16_gib", filled_16_gib, "memory allocation of"),
    ] {
        let e = run_isolated_as("harness_catches_large_allocations", name, case).unwrap_err();
        assert!(e.contains(expect), "{name}: {e}");
    }
}

/// Declares a test that runs `$body` isolated.
macro_rules! alloc_case {
    ($(#[$m:meta])* $name:ident, $body:block) => {
        $(#[$m])*
        #[test]
        fn $name() {
            fn case() $body
            isolated(stringify!($name), case);
        }
    };
}

// ---------------------------------------------------------------------------
// Reading a whole file the way a query would, collecting every error.

/// A [`RowReceiver`] that touches every cell.
struct Rows(u64);

impl RowReceiver for Rows {
    fn row(&mut self, cells: &[Value<'_>]) -> Flow {
        std::hint::black_box(cells);
        self.0 += 1;
        Flow::Continue
    }
}

/// Every error of every read path over `bytes` (as `name`), as text.
fn read_everything(name: &str, bytes: Vec<u8>) -> Vec<String> {
    let file = BytesReader::new(name, bytes);
    let mut errors = Vec::new();
    let format = match formats::detect(&file) {
        Ok(f) => f,
        Err(e) => return vec![e.to_string()],
    };
    let summary = match format.summary(&file) {
        Ok(s) => s,
        Err(e) => return vec![e.to_string()],
    };
    if let Some(d) = &summary.damage {
        errors.push(d.to_string());
    }
    let mut decoders = std::collections::BTreeMap::new();
    // CARLA packets are decoded by the typed tables, not by payload decoders.
    let decode = format.name() != "carla";
    for chunk in &summary.chunks {
        let mut decode_errors = Vec::new();
        let mut receiver = |m: Message<'_>| {
            if !decode {
                return Flow::Continue;
            }
            let slot = decoders.entry(m.channel.id).or_insert_with(|| {
                match logsql_decode::decoder_of(m.channel, &format.schema_of(m.channel))
                    .and_then(|d| ColumnBuilder::new(d.data_type()).map(|b| (d, b)))
                {
                    Ok(pair) => Some(pair),
                    Err(e) => {
                        decode_errors.push(format!("{name}: {}: schema: {e}", m.channel.topic));
                        None
                    }
                }
            });
            if let Some((d, b)) = slot {
                if let Err(e) = append_message(d.as_ref(), m.data, b) {
                    decode_errors.push(format!("{name}: {}: payload: {e}", m.channel.topic));
                }
                if b.len() >= 1024 {
                    b.finish().expect("finish");
                }
            }
            Flow::Continue
        };
        if let Err(e) = format.read_chunk(&file, &summary, chunk, &Selection::all(), &mut receiver)
        {
            errors.push(e.to_string());
        }
        errors.extend(decode_errors);
    }
    for &table in format.tables() {
        let mut args = vec![None];
        args.extend(summary.channels.values().map(|c| Some(c.topic.clone())));
        for arg in args {
            let Ok(def) = table.def(&summary, arg.as_deref()) else {
                continue;
            };
            let mut receiver = Rows(0);
            let result = if def.per_chunk {
                summary.chunks.iter().try_for_each(|chunk| {
                    table
                        .read_chunk(
                            &file,
                            &summary,
                            chunk,
                            arg.as_deref(),
                            &Selection::all(),
                            &mut receiver,
                        )
                        .map(drop)
                })
            } else {
                table.read_file(&file, &summary, arg.as_deref(), &mut receiver)
            };
            if let Err(e) = result {
                errors.push(e.to_string());
            }
        }
    }
    if let Some(Err(e)) = format.verify(&file, &summary) {
        errors.push(e.to_string());
    }
    errors.dedup();
    errors
}

/// How many messages a full read of `bytes` delivers (errors ignored).
fn messages_read(bytes: Vec<u8>) -> usize {
    let file = BytesReader::new("crafted", bytes);
    let Ok(format) = formats::detect(&file) else {
        return 0;
    };
    let Ok(summary) = format.summary(&file) else {
        return 0;
    };
    let mut n = 0;
    for chunk in &summary.chunks {
        let mut receiver = |_: Message<'_>| {
            n += 1;
            Flow::Continue
        };
        let _ = format.read_chunk(&file, &summary, chunk, &Selection::all(), &mut receiver);
    }
    n
}

/// Reads `bytes` as file `name` and asserts that an error is reported and
/// that one of them contains `expect`; returns the errors.
fn expect_error(name: &str, bytes: Vec<u8>, expect: &str) -> Vec<String> {
    let errors = read_everything(name, bytes);
    println!("{name}: {errors:#?}");
    assert!(!errors.is_empty(), "{name}: no error reported");
    assert!(
        errors.iter().any(|e| e.contains(expect)),
        "{name}: no error mentions {expect:?}: {errors:#?}"
    );
    errors
}

// ---------------------------------------------------------------------------
// MCAP.

const MCAP_MAGIC: &[u8] = b"\x89MCAP0\r\n";

fn mstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn mrecord(out: &mut Vec<u8>, op: u8, body: &[u8]) {
    out.push(op);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
}

fn mcap_header() -> Vec<u8> {
    let mut out = MCAP_MAGIC.to_vec();
    let mut h = Vec::new();
    mstr(&mut h, "");
    mstr(&mut h, "crafted");
    mrecord(&mut out, 0x01, &h);
    out
}

fn mcap_schema(id: u16, name: &str, encoding: &str, data: &[u8]) -> Vec<u8> {
    let mut s = id.to_le_bytes().to_vec();
    mstr(&mut s, name);
    mstr(&mut s, encoding);
    s.extend_from_slice(&(data.len() as u32).to_le_bytes());
    s.extend_from_slice(data);
    let mut out = Vec::new();
    mrecord(&mut out, 0x03, &s);
    out
}

fn mcap_channel(id: u16, schema: u16, topic: &str, encoding: &str) -> Vec<u8> {
    let mut c = id.to_le_bytes().to_vec();
    c.extend_from_slice(&schema.to_le_bytes());
    mstr(&mut c, topic);
    mstr(&mut c, encoding);
    c.extend_from_slice(&0u32.to_le_bytes());
    let mut out = Vec::new();
    mrecord(&mut out, 0x04, &c);
    out
}

fn mcap_message(channel: u16, time: u64, data: &[u8]) -> Vec<u8> {
    let mut m = channel.to_le_bytes().to_vec();
    m.extend_from_slice(&1u32.to_le_bytes());
    m.extend_from_slice(&time.to_le_bytes());
    m.extend_from_slice(&time.to_le_bytes());
    m.extend_from_slice(data);
    let mut out = Vec::new();
    mrecord(&mut out, 0x05, &m);
    out
}

/// A chunk record whose uncompressed size and records length are as given
/// (`records` is stored as is).
fn mcap_chunk(
    uncompressed_size: u64,
    compression: &str,
    records_len: u64,
    records: &[u8],
) -> Vec<u8> {
    let mut c = Vec::new();
    c.extend_from_slice(&1u64.to_le_bytes());
    c.extend_from_slice(&2u64.to_le_bytes());
    c.extend_from_slice(&uncompressed_size.to_le_bytes());
    c.extend_from_slice(&0u32.to_le_bytes());
    mstr(&mut c, compression);
    c.extend_from_slice(&records_len.to_le_bytes());
    c.extend_from_slice(records);
    let mut out = Vec::new();
    mrecord(&mut out, 0x06, &c);
    out
}

/// Footer + closing magic.
fn mcap_end(out: &mut Vec<u8>, summary_start: u64) {
    let mut f = summary_start.to_le_bytes().to_vec();
    f.extend_from_slice(&0u64.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    mrecord(out, 0x02, &f);
    out.extend_from_slice(MCAP_MAGIC);
}

/// An MCAP file with one channel of `encoding`/`schema_encoding` and one
/// message `payload` (no chunks, no summary).
fn mcap_with_message(
    type_name: &str,
    schema_encoding: &str,
    schema: &[u8],
    encoding: &str,
    payload: &[u8],
) -> Vec<u8> {
    let mut out = mcap_header();
    out.extend(mcap_schema(1, type_name, schema_encoding, schema));
    out.extend(mcap_channel(1, 1, "/crafted", encoding));
    out.extend(mcap_message(1, 1, payload));
    mcap_end(&mut out, 0);
    out
}

alloc_case!(mcap_record_length_u64_max, {
    for len in [u64::MAX, 1 << 63, u64::from(u32::MAX)] {
        let mut out = mcap_header();
        out.push(0x03);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&[0; 64]);
        mcap_end(&mut out, 0);
        expect_error("crafted.mcap", out, "crafted.mcap");
    }
});

alloc_case!(mcap_string_and_bytes_lengths_u32_max, {
    // A schema whose name, then whose data, claims u32::MAX bytes inside a small record.
    let mut s = 1u16.to_le_bytes().to_vec();
    s.extend_from_slice(&u32::MAX.to_le_bytes());
    s.extend_from_slice(b"abc");
    let mut out = mcap_header();
    mrecord(&mut out, 0x03, &s);
    mcap_end(&mut out, 0);
    expect_error("crafted.mcap", out, "crafted.mcap");

    let mut s = 1u16.to_le_bytes().to_vec();
    mstr(&mut s, "t");
    mstr(&mut s, "ros1msg");
    s.extend_from_slice(&u32::MAX.to_le_bytes());
    s.extend_from_slice(b"int32 x\n");
    let mut out = mcap_header();
    mrecord(&mut out, 0x03, &s);
    mcap_end(&mut out, 0);
    expect_error("crafted.mcap", out, "crafted.mcap");

    // A channel whose metadata map claims u32::MAX bytes.
    let mut c = 1u16.to_le_bytes().to_vec();
    c.extend_from_slice(&0u16.to_le_bytes());
    mstr(&mut c, "/t");
    mstr(&mut c, "json");
    c.extend_from_slice(&u32::MAX.to_le_bytes());
    c.extend_from_slice(&[1, 0, 0, 0, b'k']);
    let mut out = mcap_header();
    mrecord(&mut out, 0x04, &c);
    out.extend(mcap_message(1, 1, b"{}"));
    mcap_end(&mut out, 0);
    expect_error("crafted.mcap", out, "crafted.mcap");
});

alloc_case!(mcap_chunk_sizes, {
    let payload = mcap_message(1, 1, b"{}");
    let mut records = mcap_channel(1, 0, "/t", "json");
    records.extend(&payload);
    let zstd = zstd::encode_all(&records[..], 3).unwrap();
    let lz4 = {
        let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
        std::io::Write::write_all(&mut enc, &records).unwrap();
        enc.finish().unwrap()
    };
    let cases: Vec<(u64, &str, u64, &[u8])> = vec![
        // Declared uncompressed sizes far past the cap.
        (1 << 63, "zstd", zstd.len() as u64, &zstd),
        (u64::MAX, "lz4", lz4.len() as u64, &lz4),
        (1 << 63, "", records.len() as u64, &records),
        // Just under the 4 GiB cap: must not be reserved up front.
        (u64::from(u32::MAX), "zstd", zstd.len() as u64, &zstd),
        (u64::from(u32::MAX), "lz4", lz4.len() as u64, &lz4),
        // Records lengths past the end of the file.
        (records.len() as u64, "", u64::MAX, &records),
        (records.len() as u64, "", 1 << 63, &records),
        (records.len() as u64, "zstd", u64::from(u32::MAX), &zstd),
    ];
    for (uncompressed, compression, records_len, data) in cases {
        let mut out = mcap_header();
        out.extend(mcap_chunk(uncompressed, compression, records_len, data));
        mcap_end(&mut out, 0);
        expect_error("crafted.mcap", out, "crafted.mcap");
    }
});

alloc_case!(mcap_footer_and_summary_offsets, {
    for start in [u64::MAX, 1 << 63, u64::from(u32::MAX)] {
        let mut out = mcap_header();
        out.extend(mcap_channel(1, 0, "/t", "json"));
        out.extend(mcap_message(1, 1, b"{}"));
        mcap_end(&mut out, start);
        // The footer is damaged; the messages are still found by walking the file.
        let errors = read_everything("crafted.mcap", out);
        println!("{errors:#?}");
        assert!(
            errors.iter().all(|e| e.contains("crafted.mcap")),
            "{errors:#?}"
        );
    }
});

/// A ChunkIndex record's fields.
struct ChunkIndex {
    start: u64,
    length: u64,
    offsets_len: u32,
    offsets: Vec<(u16, u64)>,
    index_length: u64,
    compressed: u64,
    uncompressed: u64,
}

/// An indexed MCAP file: one uncompressed chunk, a message index, and a
/// summary section whose ChunkIndex and Statistics records are built by `f`
/// from the real chunk's index (so each case damages one field).
fn mcap_indexed(f: impl Fn(&mut ChunkIndex, &mut Vec<u8>)) -> Vec<u8> {
    let mut out = mcap_header();
    let mut records = mcap_channel(1, 0, "/t", "json");
    let message_at = records.len() as u64;
    records.extend(mcap_message(1, 1, b"{}"));
    let start = out.len() as u64;
    out.extend(mcap_chunk(
        records.len() as u64,
        "",
        records.len() as u64,
        &records,
    ));
    let length = out.len() as u64 - start;
    // MessageIndex for channel 1: one (time, offset) entry.
    let index_at = out.len() as u64;
    let mut mi = 1u16.to_le_bytes().to_vec();
    mi.extend_from_slice(&16u32.to_le_bytes());
    mi.extend_from_slice(&1u64.to_le_bytes());
    mi.extend_from_slice(&message_at.to_le_bytes());
    mrecord(&mut out, 0x07, &mi);
    let index_length = out.len() as u64 - index_at;
    let mut ci = ChunkIndex {
        start,
        length,
        offsets_len: 10,
        offsets: vec![(1, index_at)],
        index_length,
        compressed: records.len() as u64,
        uncompressed: records.len() as u64,
    };
    // Statistics: 1 message, 1 channel, 1 chunk, counts map {1: 1}.
    let mut stats = 1u64.to_le_bytes().to_vec();
    stats.extend_from_slice(&0u16.to_le_bytes());
    for n in [1u32, 0, 0, 1] {
        stats.extend_from_slice(&n.to_le_bytes());
    }
    stats.extend_from_slice(&1u64.to_le_bytes());
    stats.extend_from_slice(&1u64.to_le_bytes());
    stats.extend_from_slice(&10u32.to_le_bytes());
    stats.extend_from_slice(&1u16.to_le_bytes());
    stats.extend_from_slice(&1u64.to_le_bytes());
    f(&mut ci, &mut stats);
    let summary_start = out.len() as u64;
    out.extend(mcap_channel(1, 0, "/t", "json"));
    let mut c = Vec::new();
    c.extend_from_slice(&1u64.to_le_bytes());
    c.extend_from_slice(&1u64.to_le_bytes());
    c.extend_from_slice(&ci.start.to_le_bytes());
    c.extend_from_slice(&ci.length.to_le_bytes());
    c.extend_from_slice(&ci.offsets_len.to_le_bytes());
    for (ch, off) in &ci.offsets {
        c.extend_from_slice(&ch.to_le_bytes());
        c.extend_from_slice(&off.to_le_bytes());
    }
    c.extend_from_slice(&ci.index_length.to_le_bytes());
    mstr(&mut c, "");
    c.extend_from_slice(&ci.compressed.to_le_bytes());
    c.extend_from_slice(&ci.uncompressed.to_le_bytes());
    mrecord(&mut out, 0x08, &c);
    mrecord(&mut out, 0x0b, &stats);
    mcap_end(&mut out, summary_start);
    out
}

alloc_case!(mcap_summary_lengths, {
    // The undamaged file reads its one message from the index.
    // (Its schemaless JSON channel is not decodable without sample inference.)
    let errors = read_everything("crafted.mcap", mcap_indexed(|_, _| {}));
    assert!(
        errors.iter().all(|e| e.contains("has no schema")),
        "{errors:#?}"
    );
    type Damage = fn(&mut ChunkIndex, &mut Vec<u8>);
    let cases: [(&str, Damage); 9] = [
        ("chunk start u64::MAX", |c, _| c.start = u64::MAX),
        ("chunk length 2^63", |c, _| c.length = 1 << 63),
        ("uncompressed size 2^63", |c, _| c.uncompressed = 1 << 63),
        ("compressed size u64::MAX", |c, _| c.compressed = u64::MAX),
        ("index offsets map u32::MAX", |c, _| {
            c.offsets_len = u32::MAX
        }),
        ("message index offset 2^63", |c, _| {
            c.offsets = vec![(1, 1 << 63)]
        }),
        ("message index length u64::MAX", |c, _| {
            c.index_length = u64::MAX
        }),
        ("statistics counts map u32::MAX", |_, s| {
            let n = s.len();
            s[n - 14..n - 10].copy_from_slice(&u32::MAX.to_le_bytes());
        }),
        ("statistics chunk/channel counts u32::MAX", |_, s| {
            s[10..14].copy_from_slice(&u32::MAX.to_le_bytes());
            s[22..26].copy_from_slice(&u32::MAX.to_le_bytes());
        }),
    ];
    for (what, damage) in cases {
        let errors = read_everything("crafted.mcap", mcap_indexed(damage));
        let n = messages_read(mcap_indexed(damage));
        println!("{what}: {n} messages, {errors:#?}");
        assert_eq!(n, 1, "{what}: the message is lost");
        assert!(
            errors.iter().all(|e| e.contains("crafted.mcap")),
            "{what}: {errors:#?}"
        );
    }
});

// ---------------------------------------------------------------------------
// ROS1 bag.

const BAG_MAGIC: &[u8] = b"#ROSBAG V2.0\n";

fn bfield(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(&((name.len() + 1 + value.len()) as u32).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(b'=');
    out.extend_from_slice(value);
}

fn brecord(out: &mut Vec<u8>, header: &[u8], data_len: u32, data: &[u8]) {
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(&data_len.to_le_bytes());
    out.extend_from_slice(data);
}

fn bag_header(index_pos: u64, conns: u32, chunks: u32) -> Vec<u8> {
    let mut h = Vec::new();
    bfield(&mut h, "op", &[3]);
    bfield(&mut h, "index_pos", &index_pos.to_le_bytes());
    bfield(&mut h, "conn_count", &conns.to_le_bytes());
    bfield(&mut h, "chunk_count", &chunks.to_le_bytes());
    let mut out = BAG_MAGIC.to_vec();
    let pad = vec![b' '; 4096 - h.len()];
    brecord(&mut out, &h, pad.len() as u32, &pad);
    out
}

fn bag_connection(id: u32, topic: &str, ty: &str, definition: &str) -> Vec<u8> {
    let mut h = Vec::new();
    bfield(&mut h, "op", &[7]);
    bfield(&mut h, "conn", &id.to_le_bytes());
    bfield(&mut h, "topic", topic.as_bytes());
    let mut d = Vec::new();
    bfield(&mut d, "topic", topic.as_bytes());
    bfield(&mut d, "type", ty.as_bytes());
    bfield(&mut d, "md5sum", b"0123456789abcdef0123456789abcdef");
    bfield(&mut d, "message_definition", definition.as_bytes());
    let mut out = Vec::new();
    brecord(&mut out, &h, d.len() as u32, &d);
    out
}

fn bag_message(conn: u32, data: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    bfield(&mut h, "op", &[2]);
    bfield(&mut h, "conn", &conn.to_le_bytes());
    bfield(&mut h, "time", &[1, 0, 0, 0, 0, 0, 0, 0]);
    let mut out = Vec::new();
    brecord(&mut out, &h, data.len() as u32, data);
    out
}

fn bag_chunk(compression: &str, size: u32, data_len: u32, data: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    bfield(&mut h, "op", &[5]);
    bfield(&mut h, "compression", compression.as_bytes());
    bfield(&mut h, "size", &size.to_le_bytes());
    let mut out = Vec::new();
    brecord(&mut out, &h, data_len, data);
    out
}

/// An unindexed bag with one connection and one message in an uncompressed chunk.
fn bag_with_message(ty: &str, definition: &str, payload: &[u8]) -> Vec<u8> {
    let mut inner = bag_connection(0, "/crafted", ty, definition);
    inner.extend(bag_message(0, payload));
    let mut out = bag_header(0, 0, 0);
    out.extend(bag_chunk(
        "none",
        inner.len() as u32,
        inner.len() as u32,
        &inner,
    ));
    out
}

alloc_case!(bag_record_lengths_u32_max, {
    // Header length, then data length, of the first record.
    let mut out = BAG_MAGIC.to_vec();
    out.extend_from_slice(&u32::MAX.to_le_bytes());
    out.extend_from_slice(&[0; 64]);
    expect_error("crafted.bag", out, "crafted.bag");

    let mut h = Vec::new();
    bfield(&mut h, "op", &[3]);
    bfield(&mut h, "index_pos", &0u64.to_le_bytes());
    let mut out = BAG_MAGIC.to_vec();
    brecord(&mut out, &h, u32::MAX, &[b' '; 64]);
    expect_error("crafted.bag", out, "crafted.bag");

    // A header field claiming u32::MAX bytes.
    let mut out = BAG_MAGIC.to_vec();
    let mut h = Vec::new();
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h.extend_from_slice(b"op=\x03");
    brecord(&mut out, &h, 0, &[]);
    expect_error("crafted.bag", out, "crafted.bag");

    // A message record inside a chunk whose data claims u32::MAX bytes.
    let mut inner = bag_connection(0, "/t", "std_msgs/String", "string data\n");
    let mut h = Vec::new();
    bfield(&mut h, "op", &[2]);
    bfield(&mut h, "conn", &0u32.to_le_bytes());
    bfield(&mut h, "time", &[0; 8]);
    brecord(&mut inner, &h, u32::MAX, &[0; 16]);
    let mut out = bag_header(0, 0, 0);
    out.extend(bag_chunk(
        "none",
        inner.len() as u32,
        inner.len() as u32,
        &inner,
    ));
    expect_error("crafted.bag", out, "crafted.bag");
});

alloc_case!(bag_chunk_sizes, {
    let mut inner = bag_connection(0, "/t", "std_msgs/String", "string data\n");
    inner.extend(bag_message(0, &[1, 0, 0, 0, b'x']));
    let bz2 = {
        let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
        std::io::Write::write_all(&mut enc, &inner).unwrap();
        enc.finish().unwrap()
    };
    let lz4 = {
        let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
        std::io::Write::write_all(&mut enc, &inner).unwrap();
        enc.finish().unwrap()
    };
    let n = inner.len() as u32;
    let cases: Vec<(&str, u32, u32, &[u8])> = vec![
        ("bz2", u32::MAX, bz2.len() as u32, &bz2),
        ("lz4", u32::MAX, lz4.len() as u32, &lz4),
        ("none", n, u32::MAX, &inner),
        ("bz2", n, u32::MAX, &bz2),
    ];
    for (compression, size, data_len, data) in cases {
        let mut out = bag_header(0, 0, 0);
        out.extend(bag_chunk(compression, size, data_len, data));
        expect_error("crafted.bag", out, "crafted.bag");
    }
    // An uncompressed chunk's declared size is not used (its data length
    // is): a size of u32::MAX reads the chunk as stored, allocating nothing.
    let mut out = bag_header(0, 0, 0);
    out.extend(bag_chunk("none", u32::MAX, n, &inner));
    let errors = read_everything("crafted.bag", out);
    assert!(
        errors.iter().all(|e| e.contains("crafted.bag")),
        "{errors:#?}"
    );
});

alloc_case!(bag_index_counts, {
    let mut inner = bag_connection(0, "/t", "std_msgs/String", "string data\n");
    inner.extend(bag_message(0, &[1, 0, 0, 0, b'x']));
    let chunk = bag_chunk("none", inner.len() as u32, inner.len() as u32, &inner);
    // index_pos far past the end, and connection / chunk counts of u32::MAX.
    for index_pos in [u64::MAX, 1 << 63] {
        let mut out = bag_header(index_pos, u32::MAX, u32::MAX);
        out.extend(&chunk);
        let errors = read_everything("crafted.bag", out);
        println!("{errors:#?}");
        assert!(
            errors.iter().all(|e| e.contains("crafted.bag")),
            "{errors:#?}"
        );
    }
    // A real index section whose index-data and chunk-info records claim
    // u32::MAX entries.
    let mut out = bag_header(0, 1, 1);
    let chunk_pos = out.len() as u64;
    out.extend(&chunk);
    let mut h = Vec::new();
    bfield(&mut h, "op", &[4]);
    bfield(&mut h, "ver", &1u32.to_le_bytes());
    bfield(&mut h, "conn", &0u32.to_le_bytes());
    bfield(&mut h, "count", &u32::MAX.to_le_bytes());
    brecord(&mut out, &h, 12, &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let index_pos = out.len() as u64;
    out.extend(bag_connection(0, "/t", "std_msgs/String", "string data\n"));
    let mut h = Vec::new();
    bfield(&mut h, "op", &[6]);
    bfield(&mut h, "ver", &1u32.to_le_bytes());
    bfield(&mut h, "chunk_pos", &chunk_pos.to_le_bytes());
    bfield(&mut h, "start_time", &[1, 0, 0, 0, 0, 0, 0, 0]);
    bfield(&mut h, "end_time", &[1, 0, 0, 0, 0, 0, 0, 0]);
    bfield(&mut h, "count", &u32::MAX.to_le_bytes());
    brecord(&mut out, &h, 8, &[0, 0, 0, 0, 1, 0, 0, 0]);
    out[BAG_MAGIC.len() + 4 + 4 + 3 + 4 + 10..][..8].copy_from_slice(&index_pos.to_le_bytes());
    let errors = read_everything("crafted.bag", out);
    println!("{errors:#?}");
    assert!(
        errors.iter().all(|e| e.contains("crafted.bag")),
        "{errors:#?}"
    );
});

// ---------------------------------------------------------------------------
// ROS1 message definitions and payloads (through a bag and an MCAP file).

/// `n` nested types: `pkg/T0` holds a `T1`, ..., `T{n-1}` holds an int32.
fn nested_ros1(n: usize) -> String {
    let mut s = String::from("T1 inner\n");
    for i in 1..n {
        s.push_str(&format!("================\nMSG: pkg/T{i}\n"));
        if i + 1 < n {
            s.push_str(&format!("T{} inner\n", i + 1));
        } else {
            s.push_str("int32 x\n");
        }
    }
    s
}

alloc_case!(ros1_arrays_of_2_pow_32_elements, {
    let count = u32::MAX.to_le_bytes();
    let mut payload = count.to_vec();
    payload.extend_from_slice(&[0; 64]);
    for def in [
        "float64[] values\n",
        "uint8[] data\n",
        "string[] names\n",
        "Empty[] nothing\n================\nMSG: pkg/Empty\n",
        "Empty[] nothing\n================\nMSG: pkg/Empty\nint8[0] none\n",
        "string s\n",
    ] {
        let errors = expect_error(
            "crafted.bag",
            bag_with_message("pkg/Arrays", def, &payload),
            "/crafted",
        );
        assert!(
            errors.iter().any(|e| e.contains("payload")),
            "{def}: {errors:#?}"
        );
        expect_error(
            "crafted.mcap",
            mcap_with_message("pkg/Arrays", "ros1msg", def.as_bytes(), "ros1", &payload),
            "/crafted",
        );
    }
    // Fixed-length arrays of 2^32 elements in the definition itself.
    for def in [
        "float64[4294967296] values\n",
        "uint8[4294967295] data\n",
        "float64[18446744073709551615] v\n",
    ] {
        expect_error(
            "crafted.bag",
            bag_with_message("pkg/Fixed", def, &[0; 64]),
            "schema",
        );
    }
});

alloc_case!(ros1_deep_and_self_referencing_definitions, {
    for def in [
        nested_ros1(10_000),
        "Self next\n================\nMSG: pkg/Self\nSelf next\n".to_string(),
        "pkg/Loop a\n================\nMSG: pkg/Loop\npkg/Loop[] again\n".to_string(),
        "A a\n================\nMSG: pkg/A\nB b\n================\nMSG: pkg/B\nA a\n".to_string(),
    ] {
        expect_error(
            "crafted.bag",
            bag_with_message("pkg/Deep", &def, &[0; 64]),
            "schema",
        );
        expect_error(
            "crafted.mcap",
            mcap_with_message("pkg/Deep", "ros1msg", def.as_bytes(), "ros1", &[0; 64]),
            "schema",
        );
    }
});

// ---------------------------------------------------------------------------
// ROS 2 definitions and CDR payloads.

fn cdr_channel(type_name: &str, schema: &str) -> Channel {
    Channel {
        id: 1,
        topic: "/crafted".into(),
        message_type: Some(type_name.into()),
        message_encoding: "cdr".into(),
        schema_encoding: Some("ros2msg".into()),
        schema: Some(Arc::from(schema.as_bytes())),
        metadata: Default::default(),
    }
}

/// Compiles `channel`'s decoder and decodes `payload`: the error, compile or decode.
fn decode_error(channel: &Channel, payload: &[u8]) -> Option<String> {
    let d = match logsql_decode::decoder_for(channel) {
        Ok(d) => d,
        Err(e) => return Some(format!("schema: {e}")),
    };
    let mut b = ColumnBuilder::new(d.data_type()).expect("builder");
    let result = append_message(d.as_ref(), payload, &mut b)
        .err()
        .map(|e| format!("payload: {e}"));
    b.finish().expect("finish");
    result
}

alloc_case!(cdr_sequences_of_2_pow_32_elements, {
    // CDR little-endian encapsulation header, then the u32 element count.
    let mut payload = vec![0, 1, 0, 0];
    payload.extend_from_slice(&u32::MAX.to_le_bytes());
    payload.extend_from_slice(&[0; 64]);
    for def in [
        "float64[] values\n",
        "uint8[] data\n",
        "string[] names\n",
        "string s\n",
        "Empty[] nothing\n================\nMSG: pkg/Empty\n",
        "float64[<=4294967295] bounded\n",
    ] {
        let e = decode_error(&cdr_channel("pkg/Arrays", def), &payload);
        println!("{def:?}: {e:?}");
        assert!(e.is_some(), "{def}: no error");
        let errors = expect_error(
            "crafted.mcap",
            mcap_with_message("pkg/Arrays", "ros2msg", def.as_bytes(), "cdr", &payload),
            "/crafted",
        );
        assert!(errors.iter().all(|e| e.contains("crafted")), "{errors:#?}");
    }
    for def in ["float64[4294967296] values\n", "uint8[4294967295] data\n"] {
        let e = decode_error(&cdr_channel("pkg/Fixed", def), &payload);
        println!("{def:?}: {e:?}");
        assert!(e.is_some(), "{def}: no error");
    }
});

alloc_case!(cdr_deep_and_self_referencing_definitions, {
    for def in [
        nested_ros1(10_000),
        "Self next\n================\nMSG: pkg/Self\nSelf next\n".to_string(),
        "A a\n================\nMSG: pkg/A\nB[] b\n================\nMSG: pkg/B\nA a\n".to_string(),
    ] {
        let e = decode_error(&cdr_channel("pkg/Deep", &def), &[0, 1, 0, 0, 0, 0, 0, 0]);
        println!("{e:?}");
        assert!(
            e.as_deref().is_some_and(|e| e.starts_with("schema")),
            "{e:?}"
        );
    }
});

// ---------------------------------------------------------------------------
// Protobuf descriptors and payloads.

fn proto_channel(type_name: &str, fds: &prost_reflect::prost_types::FileDescriptorSet) -> Channel {
    Channel {
        id: 1,
        topic: "/crafted".into(),
        message_type: Some(type_name.into()),
        message_encoding: "protobuf".into(),
        schema_encoding: Some("protobuf".into()),
        schema: Some(Arc::from(prost::Message::encode_to_vec(fds))),
        metadata: Default::default(),
    }
}

/// `message Node { Node child = 1; repeated Node children = 2; bytes data = 3; repeated double v = 4; }`
fn self_referencing_descriptor() -> prost_reflect::prost_types::FileDescriptorSet {
    use prost_reflect::prost_types::{
        DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet,
        field_descriptor_proto::{Label, Type},
    };
    let field = |name: &str, number: i32, label: Label, ty: Type, type_name: Option<&str>| {
        FieldDescriptorProto {
            name: Some(name.into()),
            number: Some(number),
            label: Some(label as i32),
            r#type: Some(ty as i32),
            type_name: type_name.map(String::from),
            ..Default::default()
        }
    };
    FileDescriptorSet {
        file: vec![FileDescriptorProto {
            name: Some("node.proto".into()),
            package: Some("crafted".into()),
            syntax: Some("proto3".into()),
            message_type: vec![DescriptorProto {
                name: Some("Node".into()),
                field: vec![
                    field(
                        "child",
                        1,
                        Label::Optional,
                        Type::Message,
                        Some(".crafted.Node"),
                    ),
                    field(
                        "children",
                        2,
                        Label::Repeated,
                        Type::Message,
                        Some(".crafted.Node"),
                    ),
                    field("data", 3, Label::Optional, Type::Bytes, None),
                    field("v", 4, Label::Repeated, Type::Double, None),
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

alloc_case!(protobuf_self_referencing_schema_and_huge_lengths, {
    let channel = proto_channel("crafted.Node", &self_referencing_descriptor());
    // The recursive type itself compiles to a capped depth or is refused.
    let compiled = logsql_decode::decoder_for(&channel);
    println!(
        "self-referencing descriptor: {:?}",
        compiled.as_ref().map(|d| d.describe())
    );
    // Length-delimited fields claiming 2^63, u64::MAX and u32::MAX bytes.
    for len in [1u64 << 63, u64::MAX, u64::from(u32::MAX)] {
        for tag in [0x0a, 0x12, 0x1a, 0x22] {
            let mut payload = vec![tag];
            varint(&mut payload, len);
            payload.extend_from_slice(&[0; 32]);
            let e = decode_error(&channel, &payload);
            println!("tag {tag:#x} len {len}: {e:?}");
            assert!(e.is_some(), "tag {tag:#x} len {len}: no error");
        }
    }
    // Nesting deeper than any limit: 10,000 levels of `child`.
    let mut payload = Vec::new();
    for _ in 0..10_000 {
        let mut outer = vec![0x0a];
        varint(&mut outer, payload.len() as u64);
        outer.extend_from_slice(&payload);
        payload = outer;
        if payload.len() > 1 << 20 {
            break;
        }
    }
    let e = decode_error(&channel, &payload);
    println!("deep payload: {e:?}");
    // Through a file too (MCAP, protobuf channel).
    let schema = channel.schema.clone().unwrap();
    let mut p = vec![0x1a];
    varint(&mut p, 1 << 63);
    expect_error(
        "crafted.mcap",
        mcap_with_message("crafted.Node", "protobuf", &schema, "protobuf", &p),
        "/crafted",
    );
    // A descriptor set whose own length fields are huge.
    let mut bad = vec![0x0a];
    varint(&mut bad, u64::MAX);
    bad.extend_from_slice(&[0; 16]);
    let mut c = channel.clone();
    c.schema = Some(Arc::from(bad));
    let e = decode_error(&c, &[]);
    println!("bad descriptor: {e:?}");
    assert!(
        e.as_deref().is_some_and(|e| e.starts_with("schema")),
        "{e:?}"
    );
});

// ---------------------------------------------------------------------------
// JSON Schema.

fn json_channel(schema: &str) -> Channel {
    Channel {
        id: 1,
        topic: "/crafted".into(),
        message_type: Some("Crafted".into()),
        message_encoding: "json".into(),
        schema_encoding: Some("jsonschema".into()),
        schema: Some(Arc::from(schema.as_bytes())),
        metadata: Default::default(),
    }
}

alloc_case!(json_self_referencing_and_deep_schemas, {
    let deep_schema = {
        let mut s = String::from(r#"{"type":"integer"}"#);
        for _ in 0..5_000 {
            s = format!(r#"{{"type":"object","properties":{{"a":{s}}}}}"#);
        }
        s
    };
    let deep_doc = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    for schema in [
        r##"{"$ref":"#"}"##.to_string(),
        r##"{"type":"object","properties":{"self":{"$ref":"#"},"items":{"type":"array","items":{"$ref":"#"}}}}"##.to_string(),
        r##"{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}"##.to_string(),
        r##"{"definitions":{"n":{"type":"object","properties":{"next":{"$ref":"#/definitions/n"}}}},"$ref":"#/definitions/n"}"##.to_string(),
        deep_schema,
        deep_doc.clone(),
    ] {
        let e = decode_error(&json_channel(&schema), br#"{"self":{"self":{}}}"#);
        println!("{}: {e:?}", &schema[..schema.len().min(60)]);
    }
    // A 200,000-deep payload in a field the schema leaves open: refused at
    // the decoder's depth limit (or kept as text), never recursed into.
    let payload = format!(r#"{{"a":{deep_doc}}}"#);
    let e = decode_error(
        &json_channel(r#"{"type":"object","properties":{"a":{}}}"#),
        payload.as_bytes(),
    );
    println!("deep payload: {e:?}");
});

// ---------------------------------------------------------------------------
// Apollo Cyber RT record.

fn section(out: &mut Vec<u8>, kind: u32, size: u64) {
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
}

/// Header section (2048-byte slot) with `index_position`, chunk and channel counts.
fn record_header(index_position: u64, counts: u64) -> Vec<u8> {
    let mut h = vec![0x08, 1, 0x10, 0];
    for (tag, v) in [
        (6u64, index_position),
        (7, counts),
        (8, counts),
        (11, counts),
        (12, u64::MAX),
    ] {
        varint(&mut h, tag << 3);
        varint(&mut h, v);
    }
    h.extend_from_slice(&[0x68, 1]);
    let mut out = Vec::new();
    section(&mut out, 0, h.len() as u64);
    h.resize(2048, 0);
    out.extend(h);
    out
}

alloc_case!(record_section_sizes, {
    for (kind, size) in [
        (4u32, u64::MAX),
        (4, 1 << 63),
        (1, u64::from(u32::MAX)),
        (2, 1 << 63),
        (3, u64::MAX),
        (2, u64::from(u32::MAX)),
    ] {
        let mut out = record_header(0, 1);
        section(&mut out, kind, size);
        out.extend_from_slice(&[0; 64]);
        expect_error("crafted.record", out, "crafted.record");
    }
    // Header counts and index position of u64::MAX / 2^63.
    for index in [u64::MAX, 1 << 63] {
        let out = record_header(index, u64::MAX);
        let errors = read_everything("crafted.record", out);
        println!("{errors:#?}");
        assert!(
            errors.iter().all(|e| e.contains("crafted.record")),
            "{errors:#?}"
        );
    }
    // A chunk body whose message content claims 2^63 bytes, and a channel
    // section whose proto_desc claims u32::MAX bytes.
    let mut out = record_header(0, 1);
    let mut ch = vec![0x0a, 2, b'/', b'c', 0x12, 1, b'T', 0x1a];
    varint(&mut ch, u64::from(u32::MAX));
    ch.extend_from_slice(&[0; 8]);
    section(&mut out, 4, ch.len() as u64);
    out.extend(&ch);
    let mut msg = vec![0x0a, 2, b'/', b'c', 0x10, 1, 0x1a];
    varint(&mut msg, 1 << 63);
    msg.extend_from_slice(&[0; 8]);
    let mut body = vec![0x0a];
    varint(&mut body, msg.len() as u64);
    body.extend(msg);
    let mut chunk_header = vec![0x08, 1, 0x10, 1, 0x18, 1, 0x20];
    varint(&mut chunk_header, body.len() as u64);
    section(&mut out, 1, chunk_header.len() as u64);
    out.extend(chunk_header);
    section(&mut out, 2, body.len() as u64);
    out.extend(body);
    expect_error("crafted.record", out, "crafted.record");
});

// ---------------------------------------------------------------------------
// BDDF.

fn bddf_block(out: &mut Vec<u8>, kind: u8, size: u64) {
    out.extend_from_slice(&((u64::from(kind) << 56) | size).to_le_bytes());
}

alloc_case!(bddf_block_sizes_and_index_offsets, {
    let max56 = (1u64 << 56) - 1;
    for (kind, size) in [
        (1u8, max56),
        (0, max56),
        (1, u64::from(u32::MAX)),
        (0, 1 << 40),
    ] {
        let mut out = b"BDDF".to_vec();
        bddf_block(&mut out, kind, size);
        out.extend_from_slice(&[0; 64]);
        expect_error("crafted.bddf", out, "crafted.bddf");
    }
    // A trailer (end block, index offset, SHA1, "FDDB") pointing at u64::MAX
    // and 2^63, after a descriptor block claiming u32::MAX bytes.
    for index_offset in [u64::MAX, 1 << 63, 4] {
        let mut out = b"BDDF".to_vec();
        bddf_block(&mut out, 1, u64::from(u32::MAX));
        out.extend_from_slice(&[0; 32]);
        bddf_block(&mut out, 2, 32);
        out.extend_from_slice(&index_offset.to_le_bytes());
        out.extend_from_slice(&[0; 20]);
        out.extend_from_slice(b"FDDB");
        expect_error("crafted.bddf", out, "crafted.bddf");
    }
    // A data block with a descriptor size of u32::MAX.
    let mut out = b"BDDF".to_vec();
    bddf_block(&mut out, 0, 16);
    out.extend_from_slice(&u32::MAX.to_le_bytes());
    out.extend_from_slice(&[0; 32]);
    expect_error("crafted.bddf", out, "crafted.bddf");
});

// ---------------------------------------------------------------------------
// CARLA recorder.

fn carla_header() -> Vec<u8> {
    let mut out = 1u16.to_le_bytes().to_vec();
    out.extend_from_slice(&14u16.to_le_bytes());
    out.extend_from_slice(b"CARLA_RECORDER");
    out.extend_from_slice(&1_700_000_000i64.to_le_bytes());
    out.extend_from_slice(&7u16.to_le_bytes());
    out.extend_from_slice(b"Town10H");
    out
}

fn carla_packet(out: &mut Vec<u8>, id: u8, size: u32, body: &[u8]) {
    out.push(id);
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(body);
}

fn frame_start(out: &mut Vec<u8>, frame: u64) {
    let mut body = frame.to_le_bytes().to_vec();
    body.extend_from_slice(&0.05f64.to_le_bytes());
    body.extend_from_slice(&(frame as f64 * 0.05).to_le_bytes());
    carla_packet(out, 0, 24, &body);
}

alloc_case!(carla_packet_sizes_and_counts, {
    // Packet sizes of u32::MAX: in the first frame, after it, and as FrameStart.
    for id in [0u8, 2, 6, 7, 99] {
        let mut out = carla_header();
        frame_start(&mut out, 1);
        carla_packet(&mut out, id, u32::MAX, &[0; 64]);
        expect_error("crafted.log", out, "crafted.log");
    }
    // Record counts of 65,535 (the largest u16) in small packets, every kind:
    // the typed tables must stop at the packet's end.
    let mut out = carla_header();
    frame_start(&mut out, 1);
    for id in 2u8..=23 {
        let mut body = u16::MAX.to_le_bytes().to_vec();
        body.extend_from_slice(&[0xff; 30]);
        carla_packet(&mut out, id, body.len() as u32, &body);
    }
    carla_packet(&mut out, 1, 0, &[]);
    frame_start(&mut out, 2);
    carla_packet(&mut out, 1, 0, &[]);
    let errors = read_everything("crafted.log", out);
    println!("{errors:#?}");
    assert!(!errors.is_empty());
    assert!(
        errors.iter().all(|e| e.contains("crafted.log")),
        "{errors:#?}"
    );
});
