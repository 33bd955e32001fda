//! Writes the seed corpora of the decoder fuzz targets (`ros1msg`, `cdr`,
//! `protobuf`, `json`) from the MCAP decode fixtures.
//!
//! `seed <fixture dir> <corpus root>`: every channel of every `*.mcap` in the
//! fixture dir gives up to [`PER_CHANNEL`] inputs `<type name, schema,
//! payload>` (layout of `logsql_fuzz::join_decoder_input`) in
//! `<corpus root>/<target>/`, named by a hash of their content. JSON channels
//! also give inputs without schema (the inference path). Called by `seed.sh`.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use logsql_readers::formats::{self, FormatReader};
use logsql_readers::io::FileReader;
use logsql_readers::model::{Flow, Message, Selection};

/// Inputs written per channel (the first messages of the channel).
const PER_CHANNEL: usize = 6;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [fixtures, corpus] = args.as_slice() else {
        eprintln!("usage: seed <mcap decode fixture dir> <corpus root>");
        std::process::exit(2);
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures)
        .unwrap_or_else(|e| panic!("{fixtures}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mcap"))
        .collect();
    files.sort();
    let mut written: BTreeMap<&'static str, usize> = BTreeMap::new();
    for path in &files {
        for (target, input) in inputs(path) {
            let dir = Path::new(corpus).join(target);
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let mut h = DefaultHasher::new();
            input.hash(&mut h);
            let file = dir.join(format!("seed-{:016x}", h.finish()));
            std::fs::write(&file, &input).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            *written.entry(target).or_default() += 1;
        }
    }
    for (target, n) in written {
        println!("{target}: {n} seed inputs");
    }
}

/// The decoder seed inputs of one MCAP file, with their target names.
fn inputs(path: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let file = FileReader::open(path).unwrap_or_else(|e| panic!("{e}"));
    let format = formats::mcap::McapFormat;
    let summary = format
        .summary(&file)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut per_channel: BTreeMap<u64, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for chunk in &summary.chunks {
        let mut sink = |m: Message<'_>| {
            let seen = per_channel.entry(m.channel.id).or_default();
            if *seen >= PER_CHANNEL {
                return Flow::Continue;
            }
            *seen += 1;
            let target = match m.channel.message_encoding.as_str() {
                "ros1" => "ros1msg",
                "cdr" => "cdr",
                "protobuf" => "protobuf",
                "json" => "json",
                _ => return Flow::Continue,
            };
            let name = m.channel.message_type.as_deref().unwrap_or("");
            let schema = m.channel.schema.as_deref().unwrap_or(&[]);
            if let Some(input) = logsql_fuzz::join_decoder_input(name, schema, m.data) {
                out.push((target, input));
            }
            if target == "json"
                && let Some(input) = logsql_fuzz::join_decoder_input(name, &[], m.data)
            {
                out.push((target, input));
            }
            Flow::Continue
        };
        format
            .read_chunk(&file, &summary, chunk, &Selection::all(), &mut sink)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    out
}
