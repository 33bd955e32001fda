//! The MCAP reader on real sample files, damaged copies and generated files.
//!
//! - `compressed.mcap` / `uncompressed.mcap` (826 messages, 413 chunks): the
//!   indexed path, a forced walk (summary cut off) and the official `mcap` crate
//!   agree on per-topic counts, time bounds and a hash of every payload.
//! - The header-only fast path gives the same `(topic, log_time)` multiset, and
//!   so do the per-channel times `chunk_times` reads from the message indexes.
//! - `zstd_chunk_with_padding.mcap`, `chunk_not_closed.mcap`: padding and u64::MAX lengths.
//! - Truncation at many offsets and flipped bytes: no panic, a readable prefix, errors
//!   that name the file and an offset.
//! - Generated files: loose messages split into pseudo-chunks, and loose messages
//!   beside indexed chunks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use logsql_readers::Error;
use logsql_readers::formats::FormatReader;
use logsql_readers::formats::mcap::records::Record;
use logsql_readers::formats::mcap::{
    ChunkKind, McapFormat, McapIndex, PSEUDO_CHUNK_TARGET, RecordReader,
};
use logsql_readers::io::BytesReader;
use logsql_readers::model::{ChannelTimes, ChunkRead, Flow, Message, Selection, Summary};

/// One delivered message, owned.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Msg {
    topic: String,
    channel: u64,
    log_time: u64,
    publish_time: Option<u64>,
    sequence: Option<u32>,
    data: Vec<u8>,
}

/// What a whole-file read gives: messages in delivery order, per-chunk costs, first error.
struct ReadAll {
    messages: Vec<Msg>,
    reads: Vec<ChunkRead>,
    errors: Vec<(usize, Error)>,
}

fn sample(name: &str) -> Option<(PathBuf, Vec<u8>)> {
    let path = crate::fixtures::file("mcap", &format!("samples/{name}"))?;
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some((path, bytes))
}

fn reader(name: &str, bytes: &[u8]) -> BytesReader {
    BytesReader::new(name, bytes.to_vec())
}

fn read_all(file: &BytesReader, summary: &Summary, sel: &Selection) -> ReadAll {
    let mut out = ReadAll {
        messages: Vec::new(),
        reads: Vec::new(),
        errors: Vec::new(),
    };
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            out.messages.push(Msg {
                topic: m.channel.topic.clone(),
                channel: m.channel.id,
                log_time: m.log_time,
                publish_time: m.publish_time,
                sequence: m.sequence,
                data: m.data.to_vec(),
            });
            Flow::Continue
        };
        match McapFormat.read_chunk(file, summary, chunk, sel, &mut receiver) {
            Ok(r) => out.reads.push(r),
            Err(e) => out.errors.push((chunk.index, e)),
        }
    }
    out
}

/// FNV-1a over (topic, log_time, data) of every message, in order.
fn fnv<'a>(items: impl IntoIterator<Item = (&'a str, u64, &'a [u8])>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for (topic, t, data) in items {
        eat(topic.as_bytes());
        eat(&t.to_le_bytes());
        eat(&(data.len() as u64).to_le_bytes());
        eat(data);
    }
    h
}

/// Per-topic counts, first/last log_time and payload hash.
#[derive(Debug, PartialEq, Eq)]
struct Digest {
    counts: BTreeMap<String, u64>,
    first: u64,
    last: u64,
    hash: u64,
}

fn digest(messages: &[Msg]) -> Digest {
    let mut counts = BTreeMap::new();
    for m in messages {
        *counts.entry(m.topic.clone()).or_insert(0) += 1;
    }
    Digest {
        counts,
        first: messages.iter().map(|m| m.log_time).min().unwrap_or(0),
        last: messages.iter().map(|m| m.log_time).max().unwrap_or(0),
        hash: fnv(messages
            .iter()
            .map(|m| (m.topic.as_str(), m.log_time, m.data.as_slice()))),
    }
}

/// The same digest from the official `mcap` crate.
fn official_digest(bytes: &[u8]) -> Digest {
    let messages: Vec<mcap::Message<'_>> = mcap::MessageStream::new(bytes)
        .expect("mcap stream")
        .map(|m| m.expect("mcap message"))
        .collect();
    let mut counts = BTreeMap::new();
    for m in &messages {
        *counts.entry(m.channel.topic.clone()).or_insert(0) += 1;
    }
    Digest {
        counts,
        first: messages.iter().map(|m| m.log_time).min().unwrap_or(0),
        last: messages.iter().map(|m| m.log_time).max().unwrap_or(0),
        hash: fnv(messages
            .iter()
            .map(|m| (m.channel.topic.as_str(), m.log_time, &m.data[..]))),
    }
}

/// `summary_start` from the footer of a complete file.
fn summary_start(bytes: &[u8]) -> usize {
    let footer = &bytes[bytes.len() - 37..];
    assert_eq!(footer[0], 0x02, "footer opcode");
    u64::from_le_bytes(footer[9..17].try_into().unwrap()) as usize
}

fn expected_counts() -> BTreeMap<String, u64> {
    BTreeMap::from([("/diagnostics".to_string(), 52), ("/tf".to_string(), 774)])
}

#[test]
fn compressed_and_uncompressed_agree_indexed_walked_and_official() {
    let Some((_, compressed)) = sample("compressed.mcap") else {
        return;
    };
    let Some((_, uncompressed)) = sample("uncompressed.mcap") else {
        return;
    };
    let mut digests = Vec::new();
    for (name, bytes) in [
        ("compressed.mcap", &compressed),
        ("uncompressed.mcap", &uncompressed),
    ] {
        // Indexed.
        let file = reader(name, bytes);
        let summary = McapFormat.summary(&file).unwrap();
        assert!(summary.indexed, "{name}: {summary:?}");
        assert!(summary.damage.is_none(), "{name}: {:?}", summary.damage);
        assert_eq!(summary.chunks.len(), 413, "{name}");
        assert_eq!(summary.message_count, Some(826), "{name}");
        assert_eq!(
            summary
                .topic_message_counts()
                .map(|c| c.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
            Some(expected_counts())
        );
        assert_eq!(
            summary
                .properties
                .iter()
                .find(|(k, _)| k == "library")
                .map(|(_, v)| v.as_str()),
            Some("mcap go #(devel); golang-mcap-v0")
        );
        let codec = if name == "compressed.mcap" {
            "zstd: 413"
        } else {
            "none: 413"
        };
        assert!(
            summary
                .properties
                .contains(&("chunk_compression".into(), codec.into())),
            "{:?}",
            summary.properties
        );
        let all = read_all(&file, &summary, &Selection::all());
        assert!(all.errors.is_empty(), "{name}: {:?}", all.errors);
        assert_eq!(all.reads.iter().map(|r| r.messages).sum::<u64>(), 826);
        // Per-chunk counts (from the index layout) match what each chunk holds.
        for (chunk, read) in summary.chunks.iter().zip(&all.reads) {
            assert_eq!(
                chunk.message_count,
                Some(read.messages),
                "chunk at {}",
                chunk.offset
            );
        }
        let decompressed: u64 = all.reads.iter().map(|r| r.bytes_decompressed).sum();
        let declared: u64 = summary
            .chunks
            .iter()
            .filter_map(|c| c.uncompressed_size)
            .sum();
        if name == "compressed.mcap" {
            assert_eq!(decompressed, declared);
        } else {
            assert_eq!(decompressed, 0);
        }
        let indexed = digest(&all.messages);
        assert_eq!(indexed.counts, expected_counts(), "{name}");
        assert_eq!(
            (Some(indexed.first), Some(indexed.last)),
            (summary.start_time, summary.end_time),
            "{name}"
        );

        // Walked: the same file with its summary section cut off (as if the writer died after DataEnd).
        let cut = &bytes[..summary_start(bytes)];
        let walked_file = reader(name, cut);
        let walked_summary = McapFormat.summary(&walked_file).unwrap();
        assert!(!walked_summary.indexed);
        assert!(
            walked_summary.damage.is_none(),
            "{name}: {:?}",
            walked_summary.damage
        );
        assert_eq!(walked_summary.chunks.len(), 413);
        assert_eq!(walked_summary.channels, summary.channels);
        // The walk learns channel ids and counts from the MessageIndex records after each chunk.
        assert_eq!(walked_summary.message_count, Some(826));
        for (a, b) in walked_summary.chunks.iter().zip(&summary.chunks) {
            assert_eq!(
                (a.offset, a.length, a.start_time, a.end_time, &a.compression),
                (b.offset, b.length, b.start_time, b.end_time, &b.compression)
            );
            assert_eq!(a.channels, b.channels, "chunk at {}", a.offset);
        }
        let walked_all = read_all(&walked_file, &walked_summary, &Selection::all());
        assert!(walked_all.errors.is_empty());
        assert_eq!(
            walked_all.messages, all.messages,
            "{name}: walked and indexed reads differ"
        );

        // The official crate.
        assert_eq!(
            official_digest(bytes),
            indexed,
            "{name}: official mcap crate disagrees"
        );
        digests.push(indexed);
    }
    assert_eq!(
        digests[0], digests[1],
        "compressed and uncompressed files differ"
    );
}

#[test]
fn header_only_path_matches_full_path() {
    let Some((_, bytes)) = sample("compressed.mcap") else {
        return;
    };
    for (label, bytes) in [
        ("indexed", &bytes[..]),
        ("walked", &bytes[..summary_start(&bytes)]),
    ] {
        let file = reader("compressed.mcap", bytes);
        let summary = McapFormat.summary(&file).unwrap();
        let index = summary.private::<McapIndex>().unwrap();
        assert!(
            index
                .chunks
                .iter()
                .all(|c| !c.message_index_offsets.is_empty()),
            "{label}"
        );
        let full = read_all(&file, &summary, &Selection::all());
        let sel = Selection {
            payload: false,
            full_header: false,
            ..Selection::all()
        };
        let fast = read_all(&file, &summary, &sel);
        assert!(fast.errors.is_empty());
        // Answered from the message indexes: nothing decompressed, no header extras.
        assert_eq!(
            fast.reads.iter().map(|r| r.bytes_decompressed).sum::<u64>(),
            0,
            "{label}"
        );
        assert_eq!(fast.reads.iter().map(|r| r.messages).sum::<u64>(), 826);
        assert!(
            fast.messages
                .iter()
                .all(|m| m.publish_time.is_none() && m.sequence.is_none() && m.data.is_empty())
        );
        // Same (topic, log_time) sequence: file order is kept inside each chunk.
        let key = |m: &Msg| (m.topic.clone(), m.log_time);
        assert_eq!(
            fast.messages.iter().map(key).collect::<Vec<_>>(),
            full.messages.iter().map(key).collect::<Vec<_>>(),
            "{label}"
        );

        // With a topic and a time window.
        let t0 = summary.start_time.unwrap();
        let sel = Selection {
            topics: Some(["/diagnostics".to_string()].into()),
            time: Some((t0, t0 + 2_000_000_000)),
            payload: false,
            full_header: false,
            ..Default::default()
        };
        let want: Vec<_> = full
            .messages
            .iter()
            .filter(|m| m.topic == "/diagnostics" && m.log_time <= t0 + 2_000_000_000)
            .map(key)
            .collect();
        assert!(!want.is_empty());
        let got = read_all(&file, &summary, &sel);
        assert_eq!(
            got.messages.iter().map(key).collect::<Vec<_>>(),
            want,
            "{label}"
        );
    }
}

#[test]
fn selection_filters_and_stop() {
    let Some((_, bytes)) = sample("uncompressed.mcap") else {
        return;
    };
    let file = reader("uncompressed.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    let sel = Selection {
        topics: Some(["/tf".to_string()].into()),
        ..Selection::all()
    };
    let got = read_all(&file, &summary, &sel);
    assert_eq!(got.messages.len(), 774);
    assert!(
        got.messages
            .iter()
            .all(|m| m.topic == "/tf" && !m.data.is_empty() && m.sequence.is_some())
    );
    // Without payloads, data is empty but headers are there.
    let sel = Selection {
        payload: false,
        ..Selection::all()
    };
    let got = read_all(&file, &summary, &sel);
    assert_eq!(got.messages.len(), 826);
    assert!(
        got.messages
            .iter()
            .all(|m| m.data.is_empty() && m.publish_time.is_some())
    );
    // A receiver that stops after 3 messages.
    let chunk = summary
        .chunks
        .iter()
        .find(|c| c.channels.as_ref().is_some_and(|ch| ch.len() == 2))
        .unwrap();
    let mut n = 0;
    let mut receiver = |_: Message<'_>| {
        n += 1;
        if n == 1 { Flow::Stop } else { Flow::Continue }
    };
    let r = McapFormat
        .read_chunk(&file, &summary, chunk, &Selection::all(), &mut receiver)
        .unwrap();
    assert!(r.stopped);
    assert_eq!(n, 1);
}

#[test]
fn zstd_chunk_with_padding_reads_12_messages_on_a_synthetic_channel() {
    let Some((_, bytes)) = sample("zstd_chunk_with_padding.mcap") else {
        return;
    };
    let file = reader("zstd_chunk_with_padding.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    assert!(summary.damage.is_none(), "{:?}", summary.damage);
    assert_eq!(summary.chunks.len(), 1);
    assert_eq!(summary.chunks[0].compression, "zstd");
    let ch = summary.channels.get(&0).expect("synthetic channel 0");
    assert_eq!(
        (
            ch.topic.as_str(),
            ch.message_type.as_ref(),
            ch.message_encoding.as_str()
        ),
        ("", None, "")
    );
    let all = read_all(&file, &summary, &Selection::all());
    assert!(all.errors.is_empty(), "{:?}", all.errors);
    assert_eq!(all.messages.len(), 12);
    assert!(
        all.messages
            .iter()
            .all(|m| m.channel == 0 && m.topic.is_empty())
    );
    assert_eq!(
        all.reads[0].bytes_decompressed,
        summary.chunks[0].uncompressed_size.unwrap()
    );
    // The streamed record reader agrees.
    let mut reader = RecordReader::new(&file).unwrap();
    let mut n = 0;
    while let Some(item) = reader.next_record().unwrap() {
        if let Record::Message(m) = item.record {
            assert_eq!(m.header.channel_id, 0);
            n += 1;
        }
    }
    assert_eq!(n, 12);
}

fn assert_names_file_and_offset(e: &Error, file: &str) {
    let text = e.to_string();
    assert!(text.contains(file), "error does not name the file: {text}");
    assert!(e.offset().is_some(), "error has no offset: {text}");
    assert!(
        text.contains(&format!("byte {}", e.offset().unwrap())),
        "offset not in the message: {text}"
    );
}

#[test]
fn chunk_not_closed_is_a_clean_error() {
    let Some((_, bytes)) = sample("chunk_not_closed.mcap") else {
        return;
    };
    let file = reader("chunk_not_closed.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    assert!(summary.chunks.is_empty());
    let damage = summary.damage.expect("damage");
    assert_names_file_and_offset(&damage, "chunk_not_closed.mcap");
    assert_eq!(damage.offset(), Some(39), "{damage}");
    assert!(matches!(damage, Error::Truncated { .. }), "{damage}");
    assert_eq!(
        summary
            .properties
            .iter()
            .find(|(k, _)| k == "library")
            .map(|(_, v)| v.as_str()),
        Some("mcap-rs-0.23.3")
    );
    // The streamed reader yields the Header, then the same error.
    let mut reader = RecordReader::new(&file).unwrap();
    assert!(matches!(
        reader.next_record().unwrap().unwrap().record,
        Record::Header(_)
    ));
    let e = reader.next_record().unwrap_err();
    assert_names_file_and_offset(&e, "chunk_not_closed.mcap");
    assert_eq!(e.offset(), Some(39));
    assert!(reader.next_record().unwrap().is_none());
}

#[test]
fn bad_magic_is_a_hard_error() {
    for bytes in [
        &b""[..],
        b"\x89MCA",
        b"\x89MCAP1\r\n and more bytes",
        b"GARBAGEGARBAGE",
    ] {
        let file = reader("bad.mcap", bytes);
        let e = McapFormat.summary(&file).unwrap_err();
        assert_names_file_and_offset(&e, "bad.mcap");
        assert!(RecordReader::new(&file).is_err());
    }
}

#[test]
fn truncated_files_give_a_readable_prefix() {
    let Some((_, bytes)) = sample("compressed.mcap") else {
        return;
    };
    let file = reader("compressed.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    let full = read_all(&file, &summary, &Selection::all()).messages;
    let data_end = summary_start(&bytes);
    let mut damaged = 0;
    for cut in (0..bytes.len()).step_by(997) {
        let name = format!("compressed-cut-{cut}.mcap");
        let file = reader(&name, &bytes[..cut]);
        let summary = match McapFormat.summary(&file) {
            Ok(s) => s,
            Err(e) => {
                assert!(cut < 8, "cut at {cut}: {e}");
                assert_names_file_and_offset(&e, &name);
                continue;
            }
        };
        let got = read_all(&file, &summary, &Selection::all());
        assert!(
            got.errors.is_empty(),
            "cut at {cut}: listed chunks must be readable: {:?}",
            got.errors
        );
        assert_eq!(
            got.messages[..],
            full[..got.messages.len()],
            "cut at {cut}: not a prefix of the full read"
        );
        match &summary.damage {
            Some(e) => {
                damaged += 1;
                assert_names_file_and_offset(e, &name);
                assert!(e.offset().unwrap() <= cut as u64, "cut at {cut}: {e}");
                assert!(
                    summary
                        .message_count
                        .is_none_or(|n| n == got.messages.len() as u64)
                );
            }
            None => assert!(
                cut >= data_end,
                "cut at {cut} (data ends at {data_end}) reported no damage"
            ),
        }
        // The header-only path on the damaged file gives the same messages.
        let sel = Selection {
            payload: false,
            full_header: false,
            ..Selection::all()
        };
        let fast = read_all(&file, &summary, &sel);
        assert_eq!(fast.messages.len(), got.messages.len(), "cut at {cut}");
    }
    assert!(damaged > 500, "{damaged}");
}

#[test]
fn flipped_bytes_are_reported_and_other_chunks_stay_readable() {
    let Some((_, bytes)) = sample("compressed.mcap") else {
        return;
    };
    let file = reader("compressed.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    let victim = &summary.chunks[100];
    // Break the zstd frame magic at the start of the chunk's compressed records.
    let header_len = 9 + 8 + 8 + 8 + 4 + 4 + victim.compression.len() + 8;
    let mut broken = bytes.clone();
    broken[victim.offset as usize + header_len] ^= 0xFF;
    let file = reader("flipped.mcap", &broken);
    let summary = McapFormat.summary(&file).unwrap();
    let all = read_all(&file, &summary, &Selection::all());
    assert_eq!(all.errors.len(), 1, "{:?}", all.errors);
    let (index, e) = &all.errors[0];
    assert_eq!(*index, 100);
    assert_names_file_and_offset(e, "flipped.mcap");
    assert!(e.to_string().contains("decompress"), "{e}");
    assert!(
        e.offset().unwrap() >= victim.offset && e.offset().unwrap() < victim.offset + victim.length,
        "{e}"
    );
    // Exactly that chunk's messages are missing (its count comes from the chunk index layout).
    let lost = summary.chunks[100].message_count.unwrap();
    assert!(lost > 0);
    assert_eq!(all.messages.len() as u64, 826 - lost);
}

/// A zstd file with chunk CRCs, written by the official crate.
fn write_crc_file(messages: usize, payload: usize) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let opts = mcap::WriteOptions::new()
        .compression(Some(mcap::Compression::Zstd))
        .chunk_size(Some(8 * 1024))
        .calculate_chunk_crcs(true);
    let mut w = opts.create(&mut out).unwrap();
    let schema = w.add_schema("pkg/Msg", "ros1msg", b"uint8[] data").unwrap();
    let a = w
        .add_channel(schema, "/a", "ros1", &BTreeMap::new())
        .unwrap();
    let b = w.add_channel(0, "/b", "json", &BTreeMap::new()).unwrap();
    for i in 0..messages {
        let channel_id = if i % 3 == 0 { b } else { a };
        let data: Vec<u8> = (0..payload)
            .map(|j| ((i * 31 + j * 7) % 251) as u8)
            .collect();
        let header = mcap::records::MessageHeader {
            channel_id,
            sequence: i as u32,
            log_time: 1_000 + i as u64,
            publish_time: 999 + i as u64,
        };
        w.write_to_known_channel(&header, &data).unwrap();
    }
    w.finish().unwrap();
    drop(w);
    out.into_inner()
}

#[test]
fn chunk_crc_mismatch_is_reported() {
    let bytes = write_crc_file(600, 100);
    let file = reader("crc.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    assert!(summary.chunks.len() > 3, "{}", summary.chunks.len());
    let all = read_all(&file, &summary, &Selection::all());
    assert!(all.errors.is_empty());
    assert_eq!(digest(&all.messages), official_digest(&bytes));
    assert_eq!(all.messages.iter().filter(|m| m.topic == "/b").count(), 200);
    let ch_a = summary.channels.values().find(|c| c.topic == "/a").unwrap();
    assert_eq!(
        (
            ch_a.message_type.as_deref(),
            ch_a.schema_encoding.as_deref()
        ),
        (Some("pkg/Msg"), Some("ros1msg"))
    );
    assert_eq!(ch_a.schema.as_deref(), Some(&b"uint8[] data"[..]));

    // Flip bytes in the middle of chunk 2's compressed data until the damage shows
    // (zstd may or may not notice; the CRC always does).
    let victim = summary.chunks[2].clone();
    let mid = (victim.offset + victim.length / 2) as usize;
    let mut broken = bytes.clone();
    broken[mid] ^= 0x55;
    let file = reader("crc-flipped.mcap", &broken);
    let summary = McapFormat.summary(&file).unwrap();
    let all = read_all(&file, &summary, &Selection::all());
    assert_eq!(all.errors.len(), 1, "{:?}", all.errors);
    let (index, e) = &all.errors[0];
    assert_eq!(*index, 2);
    assert_names_file_and_offset(e, "crc-flipped.mcap");
    assert!(
        matches!(e, Error::Checksum { .. } | Error::Corrupt { .. }),
        "{e}"
    );
    let in_range =
        |o: Option<u64>| o.is_some_and(|o| o >= victim.offset && o < victim.offset + victim.length);
    assert!(in_range(e.offset()), "{e}");
    let lost = summary.chunks[2].message_count.unwrap();
    assert!(lost > 0);
    assert_eq!(all.messages.len() as u64, 600 - lost);

    // The streamed reader reports the same chunk.
    let mut reader = RecordReader::new(&file).unwrap();
    let err = loop {
        match reader.next_record() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("no error"),
            Err(e) => break e,
        }
    };
    assert!(in_range(err.offset()), "{err}");
    assert_names_file_and_offset(&err, "crc-flipped.mcap");
}

#[test]
fn large_unchunked_file_splits_into_pseudo_chunks() {
    // ~10 MiB of loose messages, no chunks, with a summary (channels, statistics).
    let mut out = std::io::Cursor::new(Vec::new());
    let opts = mcap::WriteOptions::new()
        .use_chunks(false)
        .compression(None);
    let mut w = opts.create(&mut out).unwrap();
    let a = w.add_channel(0, "/big", "raw", &BTreeMap::new()).unwrap();
    let b = w.add_channel(0, "/small", "raw", &BTreeMap::new()).unwrap();
    let n = 1000u32;
    for i in 0..n {
        let (channel_id, size) = if i % 10 == 0 { (b, 10) } else { (a, 11_000) };
        let data = vec![(i % 256) as u8; size];
        // Log times are not monotonic in file order.
        let log_time = 1_000_000 + u64::from((i * 7919) % n);
        let header = mcap::records::MessageHeader {
            channel_id,
            sequence: i,
            log_time,
            publish_time: log_time,
        };
        w.write_to_known_channel(&header, &data).unwrap();
    }
    w.finish().unwrap();
    drop(w);
    let bytes = out.into_inner();
    let file = reader("loose.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    assert!(!summary.indexed);
    assert!(summary.damage.is_none());
    assert_eq!(summary.message_count, Some(u64::from(n)));
    assert_eq!(
        summary
            .channel_message_counts
            .as_ref()
            .map(|c| c.values().sum::<u64>()),
        Some(u64::from(n))
    );
    let index = summary.private::<McapIndex>().unwrap();
    assert!(index.chunks.iter().all(|c| c.kind == ChunkKind::Loose));
    let total = bytes.len() as u64;
    assert!(
        summary.chunks.len() as u64 >= total / PSEUDO_CHUNK_TARGET,
        "{} pseudo-chunks",
        summary.chunks.len()
    );
    assert!(
        summary
            .chunks
            .iter()
            .all(|c| c.length <= PSEUDO_CHUNK_TARGET + 20_000)
    );
    assert_eq!(
        summary
            .chunks
            .iter()
            .map(|c| c.message_count.unwrap())
            .sum::<u64>(),
        u64::from(n)
    );
    assert_eq!(
        summary.chunks.iter().filter_map(|c| c.start_time).min(),
        Some(1_000_000)
    );
    assert_eq!(
        summary.chunks.iter().filter_map(|c| c.end_time).max(),
        Some(1_000_000 + u64::from(n) - 1)
    );
    let all = read_all(&file, &summary, &Selection::all());
    assert!(all.errors.is_empty());
    assert_eq!(digest(&all.messages), official_digest(&bytes));
    // Each pseudo-chunk's stated bounds, count and channels are exact.
    for chunk in &summary.chunks {
        let one = Summary {
            chunks: vec![chunk.clone()],
            ..summary.clone()
        };
        let got = read_all(&file, &one, &Selection::all());
        assert_eq!(got.messages.len() as u64, chunk.message_count.unwrap());
        assert_eq!(
            got.messages.iter().map(|m| m.log_time).min(),
            chunk.start_time
        );
        assert_eq!(
            got.messages.iter().map(|m| m.log_time).max(),
            chunk.end_time
        );
        let mut ids: Vec<u64> = got.messages.iter().map(|m| m.channel).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(Some(ids), chunk.channels);
    }
    // Without payloads, nothing big is read but every message is delivered.
    let sel = Selection {
        payload: false,
        full_header: false,
        ..Selection::all()
    };
    assert_eq!(
        read_all(&file, &summary, &sel).messages.len() as u64,
        u64::from(n)
    );
}

/// A minimal MCAP writer for hand-made layouts.
struct Builder {
    buf: Vec<u8>,
}

impl Builder {
    fn new() -> Self {
        let mut b = Self {
            buf: b"\x89MCAP0\r\n".to_vec(),
        };
        b.record(0x01, &[str_(""), str_("hand")].concat());
        b
    }
    fn record(&mut self, op: u8, content: &[u8]) -> u64 {
        let at = self.buf.len() as u64;
        self.buf.push(op);
        self.buf.extend((content.len() as u64).to_le_bytes());
        self.buf.extend(content);
        at
    }
    /// An uncompressed Chunk of `inner` records spanning `start..=end`: its
    /// offset and length.
    fn chunk(&mut self, start: u64, end: u64, inner: &[u8]) -> (u64, u64) {
        let content = [
            start.to_le_bytes().to_vec(),
            end.to_le_bytes().to_vec(),
            (inner.len() as u64).to_le_bytes().to_vec(),
            crc32fast::hash(inner).to_le_bytes().to_vec(),
            str_(""),
            (inner.len() as u64).to_le_bytes().to_vec(),
            inner.to_vec(),
        ]
        .concat();
        let at = self.record(0x06, &content);
        (at, self.buf.len() as u64 - at)
    }
    /// The ChunkIndex of an uncompressed chunk (`chunk`: offset and length) of
    /// `inner_len` bytes; `offsets` is its encoded message-index offset map.
    fn chunk_index(
        &mut self,
        (start, end): (u64, u64),
        (chunk_at, chunk_len): (u64, u64),
        offsets: &[u8],
        message_index_len: u64,
        inner_len: u64,
    ) {
        let content = [
            start.to_le_bytes().to_vec(),
            end.to_le_bytes().to_vec(),
            chunk_at.to_le_bytes().to_vec(),
            chunk_len.to_le_bytes().to_vec(),
            offsets.to_vec(),
            message_index_len.to_le_bytes().to_vec(),
            str_(""),
            inner_len.to_le_bytes().to_vec(),
            inner_len.to_le_bytes().to_vec(),
        ]
        .concat();
        self.record(0x08, &content);
    }
    /// The Footer (summary at `summary_start`, no summary offsets, no CRC) and
    /// the closing magic: the file's bytes.
    fn finish(mut self, summary_start: u64) -> Vec<u8> {
        let footer = [
            summary_start.to_le_bytes().to_vec(),
            0u64.to_le_bytes().to_vec(),
            0u32.to_le_bytes().to_vec(),
        ]
        .concat();
        self.record(0x02, &footer);
        self.buf.extend(b"\x89MCAP0\r\n");
        self.buf
    }
}

fn str_(s: &str) -> Vec<u8> {
    [
        (s.len() as u32).to_le_bytes().to_vec(),
        s.as_bytes().to_vec(),
    ]
    .concat()
}

fn channel_rec(id: u16, topic: &str) -> Vec<u8> {
    [
        id.to_le_bytes().to_vec(),
        0u16.to_le_bytes().to_vec(),
        str_(topic),
        str_("raw"),
        0u32.to_le_bytes().to_vec(),
    ]
    .concat()
}

fn message_rec(channel: u16, seq: u32, t: u64) -> Vec<u8> {
    [
        channel.to_le_bytes().to_vec(),
        seq.to_le_bytes().to_vec(),
        t.to_le_bytes().to_vec(),
        t.to_le_bytes().to_vec(),
        vec![seq as u8; 5],
    ]
    .concat()
}

fn framed(op: u8, content: &[u8]) -> Vec<u8> {
    [
        vec![op],
        (content.len() as u64).to_le_bytes().to_vec(),
        content.to_vec(),
    ]
    .concat()
}

#[test]
fn loose_messages_beside_indexed_chunks_are_not_lost() {
    let mut b = Builder::new();
    b.record(0x04, &channel_rec(1, "/loose"));
    b.record(0x05, &message_rec(1, 0, 10));
    b.record(0x05, &message_rec(1, 1, 11));
    // An uncompressed chunk with its own channel and two messages, then its message index.
    let inner = [
        framed(0x04, &channel_rec(2, "/chunked")),
        framed(0x05, &message_rec(2, 2, 20)),
        framed(0x05, &message_rec(2, 3, 21)),
    ]
    .concat();
    let chunk = b.chunk(20, 21, &inner);
    // Loose messages after the chunk, and an attachment between them.
    b.record(0x05, &message_rec(1, 4, 5));
    let attachment = [
        1u64.to_le_bytes().to_vec(),
        2u64.to_le_bytes().to_vec(),
        str_("a.txt"),
        str_("text/plain"),
        3u64.to_le_bytes().to_vec(),
        b"abc".to_vec(),
        0u32.to_le_bytes().to_vec(),
    ]
    .concat();
    b.record(0x09, &attachment);
    b.record(0x05, &message_rec(1, 5, 30));
    b.record(0x0F, &0u32.to_le_bytes());
    // Summary: the chunk index (no message indexes), no Channel records.
    let summary_start = b.buf.len() as u64;
    b.chunk_index((20, 21), chunk, &0u32.to_le_bytes(), 0, inner.len() as u64);
    let bytes = b.finish(summary_start);

    let file = reader("mixed.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    assert!(summary.indexed);
    assert!(summary.damage.is_none(), "{:?}", summary.damage);
    let kinds: Vec<ChunkKind> = summary
        .private::<McapIndex>()
        .unwrap()
        .chunks
        .iter()
        .map(|c| c.kind)
        .collect();
    assert_eq!(
        kinds,
        [ChunkKind::Loose, ChunkKind::Chunk, ChunkKind::Loose]
    );
    assert_eq!(summary.chunks[2].message_count, Some(2));
    assert_eq!(
        (summary.chunks[2].start_time, summary.chunks[2].end_time),
        (Some(5), Some(30))
    );
    // Channel 2 is only defined inside the chunk: the summary found it there.
    assert_eq!(
        summary.channels.get(&2).map(|c| c.topic.as_str()),
        Some("/chunked")
    );
    assert_eq!(summary.attachments.len(), 1);
    assert_eq!(summary.attachments[0].name, "a.txt");
    let all = read_all(&file, &summary, &Selection::all());
    assert!(all.errors.is_empty(), "{:?}", all.errors);
    let got: Vec<(String, Option<u32>)> = all
        .messages
        .iter()
        .map(|m| (m.topic.clone(), m.sequence))
        .collect();
    let want: Vec<(String, Option<u32>)> = [
        ("/loose", 0),
        ("/loose", 1),
        ("/chunked", 2),
        ("/chunked", 3),
        ("/loose", 4),
        ("/loose", 5),
    ]
    .iter()
    .map(|(t, s)| (t.to_string(), Some(*s)))
    .collect();
    assert_eq!(got, want);
    // Topic pruning information is exact for the pseudo-chunks.
    assert_eq!(summary.chunks[0].channels, Some(vec![1]));
}

/// Deterministic pseudo-random numbers (xorshift).
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Everything the reader offers, on damaged bytes: must not panic (or hang).
fn exercise(name: &str, bytes: &[u8]) {
    let file = reader(name, bytes);
    if let Ok(summary) = McapFormat.summary(&file) {
        for sel in [
            Selection::all(),
            Selection {
                payload: false,
                full_header: false,
                ..Selection::all()
            },
        ] {
            let _ = read_all(&file, &summary, &sel);
        }
    }
    if let Ok(mut r) = RecordReader::new(&file) {
        let mut n = 0;
        while let Ok(Some(_)) = r.next_record() {
            n += 1;
            assert!(n < 1_000_000, "{name}: record reader does not end");
        }
    }
}

#[test]
fn mutated_files_never_panic() {
    let Some(dir) = crate::fixtures::dir("mcap") else {
        return;
    };
    // Every byte of a few conformance files, flipped and zeroed.
    for rel in [
        "OneMessage/OneMessage-ch-chx-mx-pad-rch-rsh-st-sum.mcap",
        "TenMessages/TenMessages-ch-chx-mx-pad-rch-rsh-st-sum.mcap",
        "OneAttachment/OneAttachment-ax-pad-st-sum.mcap",
        "OneMetadata/OneMetadata-mdx-pad-st-sum.mcap",
        "OneSchemalessMessage/OneSchemalessMessage-ch-chx-pad.mcap",
    ] {
        let path = dir.join("conformance").join(rel);
        let Ok(bytes) = std::fs::read(&path) else {
            panic!("missing {}", path.display())
        };
        for i in 0..bytes.len() {
            for v in [bytes[i] ^ 0xFF, 0x00, 0xFF] {
                let mut m = bytes.clone();
                m[i] = v;
                exercise(rel, &m);
            }
        }
    }
    // Random multi-byte damage in the big samples.
    for name in ["compressed.mcap", "uncompressed.mcap"] {
        let Some((_, bytes)) = sample(name) else {
            return;
        };
        let mut next = rng(0x5eed ^ bytes.len() as u64);
        for _ in 0..40 {
            let mut m = bytes.clone();
            for _ in 0..4 {
                let i = (next() % m.len() as u64) as usize;
                m[i] = next() as u8;
            }
            exercise(name, &m);
        }
    }
}

/// A file that counts the bytes read from it.
struct Counting {
    inner: BytesReader,
    read: std::sync::atomic::AtomicU64,
}

impl logsql_readers::io::ReadAt for Counting {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.read
            .fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_exact_at(offset, buf)
    }
}

#[test]
fn indexed_summary_and_header_only_reads_are_cheap() {
    use logsql_readers::io::ReadAt;
    let Some((_, bytes)) = sample("compressed.mcap") else {
        return;
    };
    let file = Counting {
        inner: reader("compressed.mcap", &bytes),
        read: 0.into(),
    };
    let summary = McapFormat.summary(&file).unwrap();
    let summary_section = file.size() - summary_start(&bytes) as u64;
    let read = file.read.swap(0, std::sync::atomic::Ordering::Relaxed);
    // Footer, summary section, the Header and the DataEnd in the gaps: nothing else.
    assert!(
        read < summary_section + 37 + 200,
        "summary read {read} bytes (summary section is {summary_section})"
    );

    let index = summary.private::<McapIndex>().unwrap();
    let mi_bytes: u64 = index.chunks.iter().map(|c| c.message_index_length).sum();
    let sel = Selection {
        payload: false,
        full_header: false,
        ..Selection::all()
    };
    let mut n = 0u64;
    for chunk in &summary.chunks {
        let mut receiver = |_: Message<'_>| {
            n += 1;
            Flow::Continue
        };
        McapFormat
            .read_chunk(&file, &summary, chunk, &sel, &mut receiver)
            .unwrap();
    }
    assert_eq!(n, 826);
    let read = file.read.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        read, mi_bytes,
        "header-only scan should read only the message indexes"
    );
}

#[test]
fn record_reader_options() {
    use logsql_readers::formats::mcap::RecordReaderOptions;
    let Some((_, bytes)) = sample("compressed.mcap") else {
        return;
    };
    let file = reader("compressed.mcap", &bytes);
    let count = |opts: RecordReaderOptions| {
        let mut r = RecordReader::with_options(&file, opts).unwrap();
        let mut by_type: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut in_chunk = 0;
        while let Some(item) = r.next_record().unwrap() {
            *by_type.entry(item.record.type_name()).or_default() += 1;
            in_chunk += usize::from(item.in_chunk.is_some());
        }
        (by_type, in_chunk)
    };
    // Raw top level: chunks stay closed, message indexes are there.
    let (raw, in_chunk) = count(RecordReaderOptions {
        flatten_chunks: false,
        message_indexes: true,
        verify_crcs: true,
    });
    assert_eq!(in_chunk, 0);
    assert_eq!(
        (raw["Chunk"], raw["MessageIndex"], raw["ChunkIndex"]),
        (413, 826, 413)
    );
    assert!(!raw.contains_key("Message"));
    // Default: flattened, no message indexes; every message comes from inside a chunk.
    let (flat, in_chunk) = count(RecordReaderOptions::default());
    assert_eq!(flat["Message"], 826);
    assert!(!flat.contains_key("Chunk") && !flat.contains_key("MessageIndex"));
    assert_eq!(
        in_chunk,
        flat["Message"] + flat["Schema"] + flat["Channel"] - 4
    );
    assert_eq!(
        (
            flat["Header"],
            flat["DataEnd"],
            flat["Footer"],
            flat["Statistics"]
        ),
        (1, 1, 1, 1)
    );
}

/// A file cut between two MessageIndex records of its last chunk (at a record
/// boundary, so the walk ends without an error): the header-only read must not
/// answer from the partial index list (found by the truncation sweep).
/// Per channel id, the sorted log times a header-only read of every chunk delivers.
fn header_only_times(file: &BytesReader, summary: &Summary) -> BTreeMap<u64, Vec<u64>> {
    let sel = Selection {
        payload: false,
        full_header: false,
        ..Selection::all()
    };
    let mut out: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for m in read_all(file, summary, &sel).messages {
        out.entry(m.channel).or_default().push(m.log_time);
    }
    out.values_mut().for_each(|t| t.sort_unstable());
    out
}

#[test]
fn chunk_times_from_message_indexes_equal_the_header_only_read() {
    let Some((_, bytes)) = sample("compressed.mcap") else {
        return;
    };
    for (label, bytes) in [
        ("indexed", &bytes[..]),
        ("walked", &bytes[..summary_start(&bytes)]),
    ] {
        let file = reader("compressed.mcap", bytes);
        let summary = McapFormat.summary(&file).unwrap();
        let mut times = ChannelTimes::default();
        for chunk in &summary.chunks {
            assert!(
                McapFormat
                    .chunk_times(&file, &summary, chunk, &mut times)
                    .unwrap(),
                "{label}: chunk {}",
                chunk.index
            );
        }
        let mut got: BTreeMap<u64, Vec<u64>> = times.into_channels().into_iter().collect();
        got.values_mut().for_each(|t| t.sort_unstable());
        let counts: BTreeMap<&str, usize> = got
            .iter()
            .map(|(id, t)| (summary.channels[id].topic.as_str(), t.len()))
            .collect();
        assert_eq!(
            counts,
            BTreeMap::from([("/diagnostics", 52), ("/tf", 774)]),
            "{label}"
        );
        assert_eq!(got, header_only_times(&file, &summary), "{label}");
    }
}

#[test]
fn chunk_times_leave_duplicated_or_missing_message_indexes_to_read_chunk() {
    // One uncompressed chunk of two messages on channel 1, then `index` as its
    // MessageIndex records.
    let file = |index: Vec<u8>| -> Vec<u8> {
        let mut b = Builder::new();
        b.record(0x04, &channel_rec(1, "/a"));
        let m0 = framed(0x05, &message_rec(1, 0, 10));
        let inner = [m0.clone(), framed(0x05, &message_rec(1, 1, 11))].concat();
        let chunk = b.chunk(10, 11, &inner);
        let mi_at = b.buf.len() as u64;
        b.buf.extend(&index);
        let mi_len = index.len() as u64;
        b.record(0x0F, &0u32.to_le_bytes());
        let summary_start = b.buf.len() as u64;
        b.record(0x04, &channel_rec(1, "/a"));
        let offsets: Vec<u8> = if index.is_empty() {
            0u32.to_le_bytes().to_vec()
        } else {
            [
                10u32.to_le_bytes().to_vec(),
                1u16.to_le_bytes().to_vec(),
                mi_at.to_le_bytes().to_vec(),
            ]
            .concat()
        };
        b.chunk_index((10, 11), chunk, &offsets, mi_len, inner.len() as u64);
        b.finish(summary_start)
    };
    let m1_offset = framed(0x05, &message_rec(1, 0, 10)).len() as u64;
    let message_index = |entries: &[(u64, u64)]| -> Vec<u8> {
        let mut content = 1u16.to_le_bytes().to_vec();
        content.extend(((entries.len() * 16) as u32).to_le_bytes());
        for (t, o) in entries {
            content.extend(t.to_le_bytes());
            content.extend(o.to_le_bytes());
        }
        framed(0x07, &content)
    };
    let cases = [
        ("whole", message_index(&[(10, 0), (11, m1_offset)]), true),
        // The same message listed twice: read_chunk delivers it once.
        (
            "duplicated",
            message_index(&[(10, 0), (10, 0), (11, m1_offset)]),
            false,
        ),
        // Offsets no two messages can have: past the chunk's end, or closer
        // than a Message record.
        ("beyond", message_index(&[(10, 0), (11, 1_000)]), false),
        ("too close", message_index(&[(10, 0), (11, 5)]), false),
        ("none", Vec::new(), false),
    ];
    for (label, index, answered) in cases {
        let bytes = file(index);
        let file = reader(label, &bytes);
        let summary = McapFormat.summary(&file).unwrap();
        assert!(summary.indexed && summary.damage.is_none(), "{label}");
        assert_eq!(summary.chunks.len(), 1, "{label}");
        let mut times = ChannelTimes::default();
        let got = McapFormat
            .chunk_times(&file, &summary, &summary.chunks[0], &mut times)
            .unwrap();
        assert_eq!(got, answered, "{label}");
        let read = header_only_times(&file, &summary);
        assert_eq!(read, BTreeMap::from([(1, vec![10, 11])]), "{label}");
        if answered {
            assert_eq!(times.into_channels(), vec![(1, vec![10, 11])], "{label}");
        } else {
            assert!(times.is_empty(), "{label}");
        }
    }
}

#[test]
fn cut_between_message_indexes_keeps_header_only_reads_whole() {
    let Some(path) = crate::fixtures::file("mcap", "decode/json.mcap") else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let file = reader("json.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    let header_only = Selection {
        payload: false,
        full_header: false,
        ..Selection::all()
    };
    let mut cuts = 0;
    for chunk in &summary.chunks {
        // The MessageIndex records after the chunk: cut after the first one.
        let mut pos = (chunk.offset + chunk.length) as usize;
        let mut ends = Vec::new();
        while bytes[pos] == 0x07 {
            pos += 9 + u64::from_le_bytes(bytes[pos + 1..pos + 9].try_into().unwrap()) as usize;
            ends.push(pos);
        }
        if ends.len() < 2 {
            continue;
        }
        let name = format!("json-cut-{}.mcap", ends[0]);
        let file = reader(&name, &bytes[..ends[0]]);
        let cut = McapFormat.summary(&file).unwrap();
        assert!(cut.damage.is_some());
        let full = read_all(&file, &cut, &Selection::all());
        let fast = read_all(&file, &cut, &header_only);
        assert!(full.errors.is_empty() && fast.errors.is_empty());
        assert_eq!(fast.messages.len(), full.messages.len(), "{name}");
        cuts += 1;
    }
    assert!(cuts > 0, "no chunk with two MessageIndex records");
}

/// A file cut inside its summary section, whose chunks hold a Channel record in
/// an earlier chunk than its messages: the walk learns some channels from the
/// summary section's remains, and the others must still be found in the chunks
/// (not given a synthetic, empty topic). Found by the truncation sweep.
#[test]
fn cut_summary_section_still_finds_channels_defined_in_earlier_chunks() {
    let Some(path) = crate::fixtures::file("mcap", "decode/lz4_mixed.mcap") else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let file = reader("lz4_mixed.mcap", &bytes);
    let summary = McapFormat.summary(&file).unwrap();
    let full = read_all(&file, &summary, &Selection::all()).messages;
    assert_eq!(full.len(), 550);
    for cut in (summary_start(&bytes)..bytes.len()).step_by(61) {
        let name = format!("lz4_mixed-cut-{cut}.mcap");
        let file = reader(&name, &bytes[..cut]);
        let summary = McapFormat.summary(&file).unwrap();
        let got = read_all(&file, &summary, &Selection::all());
        assert!(got.errors.is_empty(), "{name}: {:?}", got.errors);
        assert!(
            got.messages == full,
            "{name}: messages differ from the full read"
        );
    }
}
