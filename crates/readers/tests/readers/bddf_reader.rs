//! The BDDF reader on the fixtures in `../shared/fixtures/bddf/`, written by the
//! official Python writer (bosdyn-core 5.2.0).
//!
//! - Every complete fixture against `expected.json` (the official readers' view):
//!   series identifiers, spec, identifier hashes, descriptor offsets, block
//!   counts, payload bytes, first/last times, monotonicity, annotations, data
//!   types, index offset, version and file annotations.
//! - Payloads: per series, the SHA1 of the payloads concatenated in block order,
//!   and POD samples (count, first, last, sum of elements), both computed
//!   independently with the official Python reader (`bosdyn.bddf.DataReader` /
//!   `StreamDataReader`, bosdyn-core 5.2.0) and hard-coded below.
//! - SHA1 verification of every complete file, and a mismatch on a flipped byte.
//! - Selection: time windows by binary search read only the selected blocks'
//!   bytes; out-of-order series are filtered, not binary-searched; header-only
//!   reads touch no block.
//! - Files without series, series without blocks, the three truncated files
//!   (every complete block recovered, the cut reported), truncation and
//!   byte-flip sweeps (no panic, a prefix of the messages).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use logsql_readers::Error;
use logsql_readers::formats::FormatReader;
use logsql_readers::formats::bddf::{BddfFormat, BddfIndex, identifier_hash};
use logsql_readers::io::{BytesReader, ReadAt};
use logsql_readers::model::{ExtraValue, Flow, Message, Selection, Summary};
use logsql_readers::table::{ColumnType, ScalarType, Value};
use serde_json::Value as Json;
use sha1::{Digest, Sha1};

/// (file, series index, blocks, sha1 of the series' payloads concatenated in
/// block order). Computed with the official Python reader: `DataReader.read(i, k)`
/// for complete files; for truncated files `StreamDataReader.read_data_block()`
/// up to its EOFError, minus the short cut block of the mid-block file.
const PAYLOADS: &[(&str, u32, u64, &str)] = &[
    (
        "additional_indexes.bddf",
        0,
        250,
        "90cade636226230251bb62674cda1463cb9d5658",
    ),
    (
        "additional_indexes.bddf",
        1,
        1,
        "ced409878a8c150affe2e09fea037fe613561a6f",
    ),
    (
        "additional_indexes.bddf",
        2,
        50,
        "3deff9271b82241c98d97fa67aa8ce94388051dd",
    ),
    (
        "additional_indexes.bddf",
        3,
        7,
        "be99a77eafb1c3a973589a55d15befe328b7741e",
    ),
    (
        "additional_indexes.bddf",
        4,
        3,
        "d135981b6032c4187c738cf8d316fe5e0df0c128",
    ),
    (
        "additional_indexes.bddf",
        5,
        20,
        "cd3362f6fac2975c2c061728658808b42ab1094c",
    ),
    (
        "additional_indexes.bddf",
        6,
        2,
        "ca0f836874d6cd7cb1d53fa5d84d8d8d521bbe26",
    ),
    (
        "basic.bddf",
        0,
        500,
        "da792671d3afde0a599f2e91423dbba436a4ba32",
    ),
    (
        "basic.bddf",
        1,
        1,
        "2f455cc44c4d2b1111d67be59f54153be0a3d4cb",
    ),
    (
        "basic.bddf",
        2,
        100,
        "30febbc4521cc9e06839aba1f707a53d54ca21b5",
    ),
    (
        "basic.bddf",
        3,
        13,
        "608dbdbfcaa23205f0517bec806cc8aaf77ce23f",
    ),
    (
        "basic.bddf",
        4,
        3,
        "67f137d829b0176bbcc712ea563132983ea4f52c",
    ),
    (
        "basic.bddf",
        5,
        4,
        "8b31b8024d3478cf3d36d4a1080c6850f64886ee",
    ),
    (
        "empty_series.bddf",
        0,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "empty_series.bddf",
        1,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "empty_series.bddf",
        2,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "empty_series.bddf",
        3,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "empty_series.bddf",
        4,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "empty_series.bddf",
        5,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "empty_series.bddf",
        6,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "grpc.bddf",
        0,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "grpc.bddf",
        1,
        1,
        "3b9355536e375c16aa3850344227c710145d52fe",
    ),
    (
        "grpc.bddf",
        2,
        50,
        "643af1d8a21f5e72b5969965000051689a241506",
    ),
    (
        "grpc.bddf",
        3,
        7,
        "37769aedad1094cb24c9b89ce17cfae00fb2ffc9",
    ),
    (
        "grpc.bddf",
        4,
        50,
        "61d4b9e5126145b47f8ad789dd555f92245d7685",
    ),
    (
        "grpc.bddf",
        5,
        50,
        "5cb593d072e3053a7e061efbb7d2b05ca9665975",
    ),
    (
        "images.bddf",
        0,
        20,
        "10c877cee29f7f8483007845d504bad8ff5afcb5",
    ),
    (
        "images.bddf",
        1,
        1,
        "7b2a7889644f48f3258938c91fece8cb498c563c",
    ),
    (
        "images.bddf",
        2,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "images.bddf",
        3,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "images.bddf",
        4,
        3,
        "ea5de77aded6b4a0d75123d3e4672b9b905af649",
    ),
    (
        "images.bddf",
        5,
        20,
        "d902d0a05550f434bac67deb81b3095d8d7d6819",
    ),
    (
        "images.bddf",
        6,
        2,
        "ca0f836874d6cd7cb1d53fa5d84d8d8d521bbe26",
    ),
    (
        "long_sparse.bddf",
        0,
        300,
        "6da60dea5d2cf6074c6dcfc290569beb81116512",
    ),
    (
        "long_sparse.bddf",
        1,
        1,
        "416dbaa9f88add82f6338127f840ac8617ed6fc0",
    ),
    (
        "long_sparse.bddf",
        2,
        1200,
        "c912c0f1b44d2f823219e2e91ce31326bd928c64",
    ),
    (
        "long_sparse.bddf",
        3,
        38,
        "d7bb9c88e292872b33c469aedf66dfa05b69e6ca",
    ),
    (
        "long_sparse.bddf",
        4,
        10,
        "3f9473efa7665ac0fc85fe71f8d492d3a6cccb9e",
    ),
    (
        "long_sparse.bddf",
        5,
        10,
        "2bc796cc4e15b1f0be8fd65a85ab4f0e5586bfc2",
    ),
    (
        "out_of_order.bddf",
        0,
        200,
        "9d976d383ed9edbdeef3606e12eb52e05eb1b2cd",
    ),
    (
        "out_of_order.bddf",
        1,
        1,
        "310b53cfd50c4bbd085c1b3a39536a542f4817de",
    ),
    (
        "out_of_order.bddf",
        2,
        40,
        "a25e21009f9a60c18b8ebdb1478404753b3d75a2",
    ),
    (
        "out_of_order.bddf",
        3,
        5,
        "236bc7068ccb9693af201ca5fbc7b34f0466d70f",
    ),
    (
        "out_of_order.bddf",
        4,
        3,
        "ea5de77aded6b4a0d75123d3e4672b9b905af649",
    ),
    (
        "out_of_order.bddf",
        5,
        2,
        "ca0f836874d6cd7cb1d53fa5d84d8d8d521bbe26",
    ),
    (
        "pod_types.bddf",
        0,
        0,
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ),
    (
        "pod_types.bddf",
        1,
        50,
        "9a9303a0ff96933463b72f0627f0113327cb318a",
    ),
    (
        "pod_types.bddf",
        2,
        7,
        "8102813fa0e5b46846fae9043a882cc0d8cd37fb",
    ),
    (
        "pod_types.bddf",
        3,
        25,
        "67c7fb6c8ad87cc3992413419e3cf6e58252d524",
    ),
    (
        "pod_types.bddf",
        4,
        50,
        "f886ebbcec68fe737bb31b32dd8ded5630b2b35c",
    ),
    (
        "pod_types.bddf",
        5,
        50,
        "b5c2adc0357655a319fa127d05f6648bdf7df9de",
    ),
    (
        "pod_types.bddf",
        6,
        50,
        "ea43643709529d96757fe57a8c0a4568e5bc622c",
    ),
    (
        "pod_types.bddf",
        7,
        50,
        "2b73033ea643333f591bcec9f3690e46a75212fe",
    ),
    (
        "pod_types.bddf",
        8,
        50,
        "0d25717340acd5487c58497550d789352079dac5",
    ),
    (
        "pod_types.bddf",
        9,
        50,
        "a3748e3e2d154e211afe35965595973a6a8b7369",
    ),
    (
        "pod_types.bddf",
        10,
        50,
        "2cdc2f32c63686e1a72b637da5004af860f217bc",
    ),
    (
        "pod_types.bddf",
        11,
        50,
        "c7f292c0896d6632fefad9f832abf88d5c45b418",
    ),
    (
        "pod_types.bddf",
        12,
        50,
        "d852bff23e80dbaee3c57b68adaf069b41916ee2",
    ),
    (
        "pod_types.bddf",
        13,
        50,
        "b795db594c10745d3ef09ce177ee3e7c2c492e42",
    ),
    (
        "truncated.before-index.bddf",
        0,
        150,
        "f09595d49cfbdd17d2fa937b25ef5422dfffeec2",
    ),
    (
        "truncated.before-index.bddf",
        1,
        1,
        "b3de7633ba1d2065ce41e23d03c4dc1720c36a9c",
    ),
    (
        "truncated.before-index.bddf",
        2,
        30,
        "d744c7867053afe4f6120c52d727c50239f35654",
    ),
    (
        "truncated.before-index.bddf",
        3,
        4,
        "b0a5a7bc34f2092658f343eaa3c9c275bb8f98da",
    ),
    (
        "truncated.before-index.bddf",
        4,
        3,
        "0e7e48517489178b649e5071336b627f55738ecf",
    ),
    (
        "truncated.before-index.bddf",
        5,
        1,
        "052a4e5039afb5ec8c2e47755734d427ea8b25f5",
    ),
    (
        "truncated.no-trailer.bddf",
        0,
        150,
        "f09595d49cfbdd17d2fa937b25ef5422dfffeec2",
    ),
    (
        "truncated.no-trailer.bddf",
        1,
        1,
        "b3de7633ba1d2065ce41e23d03c4dc1720c36a9c",
    ),
    (
        "truncated.no-trailer.bddf",
        2,
        30,
        "d744c7867053afe4f6120c52d727c50239f35654",
    ),
    (
        "truncated.no-trailer.bddf",
        3,
        4,
        "b0a5a7bc34f2092658f343eaa3c9c275bb8f98da",
    ),
    (
        "truncated.no-trailer.bddf",
        4,
        3,
        "0e7e48517489178b649e5071336b627f55738ecf",
    ),
    (
        "truncated.no-trailer.bddf",
        5,
        1,
        "052a4e5039afb5ec8c2e47755734d427ea8b25f5",
    ),
    (
        "truncated.mid-block.bddf",
        0,
        92,
        "84dea3ab27b72db5f5169c0a64fb80a648511913",
    ),
    (
        "truncated.mid-block.bddf",
        1,
        1,
        "b3de7633ba1d2065ce41e23d03c4dc1720c36a9c",
    ),
    (
        "truncated.mid-block.bddf",
        2,
        18,
        "ca646b9ad44d2afb8b4b1796a4c041d1069637ea",
    ),
    (
        "truncated.mid-block.bddf",
        3,
        2,
        "6a941c235c4a95daec784812d0683f18053ec4af",
    ),
    (
        "truncated.mid-block.bddf",
        4,
        2,
        "9468843603ba77f29a2e24e2daee71247828a767",
    ),
    (
        "truncated.mid-block.bddf",
        5,
        1,
        "052a4e5039afb5ec8c2e47755734d427ea8b25f5",
    ),
];

/// One row of [`POD_SAMPLES`].
type PodSample = (
    &'static str,
    u32,
    u64,
    &'static [&'static str],
    &'static [&'static str],
    &'static str,
);

/// (file, series index, samples, first sample, last sample, sum of all
/// elements), from the official Python reader: `struct.unpack('<N<code>')` of
/// every payload of the series (the official `PodSeriesReader` cannot read
/// series with dimensions). Values are text so that 64-bit extremes stay exact;
/// integer sums are exact (Python ints), float sums are float64 sums.
const POD_SAMPLES: &[PodSample] = &[
    (
        "additional_indexes.bddf",
        2,
        500,
        &[
            "-0.01293297844059616",
            "0.11853184491749888",
            "9.665454894635234",
        ],
        &[
            "-0.2822328234052642",
            "0.0036184754511100333",
            "9.775250310448602",
        ],
        "4907.168234738533",
    ),
    (
        "additional_indexes.bddf",
        3,
        100,
        &["3900"],
        &["3894"],
        "389555",
    ),
    (
        "basic.bddf",
        2,
        1000,
        &[
            "0.0066646350284736405",
            "0.12176066623813338",
            "9.814766722561263",
        ],
        &[
            "-0.07417132076933897",
            "-0.09722487240281003",
            "9.640062945061509",
        ],
        "9819.406700623145",
    ),
    ("basic.bddf", 3, 200, &["3903"], &["3881"], "778085"),
    (
        "grpc.bddf",
        2,
        500,
        &[
            "0.004234137038218263",
            "0.12499744563709392",
            "9.770775817446424",
        ],
        &[
            "-0.2815626529602926",
            "0.031015998299746106",
            "9.740547931085944",
        ],
        "4907.392528954177",
    ),
    ("grpc.bddf", 3, 100, &["3902"], &["3889"], "389514"),
    (
        "long_sparse.bddf",
        2,
        6000,
        &[
            "-0.004540957310791182",
            "0.09786853138465203",
            "9.848948673084065",
        ],
        &[
            "-0.252297117398094",
            "0.08068075471483645",
            "9.545454559664094",
        ],
        "58863.27212994564",
    ),
    ("long_sparse.bddf", 3, 600, &["3902"], &["3841"], "2322312"),
    (
        "out_of_order.bddf",
        2,
        400,
        &[
            "0.022047607620284376",
            "0.0879500356267144",
            "9.833641756803008",
        ],
        &[
            "-0.2685594646022242",
            "0.006257656511433361",
            "10.347477029853303",
        ],
        "3928.591984483607",
    ),
    ("out_of_order.bddf", 3, 80, &["3901"], &["3893"], "311737"),
    (
        "pod_types.bddf",
        1,
        500,
        &[
            "0.00315709516833426",
            "0.10929426641821235",
            "9.7942998440505",
        ],
        &[
            "-0.29527810675970884",
            "0.020265507311834574",
            "9.682600124992536",
        ],
        "4906.729171566349",
    ),
    ("pod_types.bddf", 2, 100, &["3897"], &["3889"], "389543"),
    (
        "pod_types.bddf",
        3,
        25,
        &[
            "0.9999996423721313",
            "-0.0008499998948536813",
            "0.0",
            "0.010200000368058681",
            "0.0008499998948536813",
            "0.9999996423721313",
            "0.0",
            "0.0",
            "0.0",
            "0.0",
            "1.0",
            "0.5199999809265137",
            "0.0",
            "0.0",
            "0.0",
            "1.0",
        ],
        &[
            "0.9711355566978455",
            "-0.23852817714214325",
            "0.0",
            "2.890199899673462",
            "0.23852817714214325",
            "0.9711355566978455",
            "0.0",
            "0.0",
            "0.0",
            "0.0",
            "1.0",
            "0.5199999809265137",
            "0.0",
            "0.0",
            "0.0",
            "1.0",
        ],
        "148.76137373503298",
    ),
    ("pod_types.bddf", 4, 50, &["-5"], &["44"], "981"),
    ("pod_types.bddf", 5, 50, &["-5"], &["44"], "981"),
    ("pod_types.bddf", 6, 50, &["-5"], &["44"], "981"),
    ("pod_types.bddf", 7, 50, &["-5"], &["44"], "981"),
    ("pod_types.bddf", 8, 50, &["0"], &["49"], "1479"),
    ("pod_types.bddf", 9, 50, &["0"], &["49"], "66759"),
    ("pod_types.bddf", 10, 50, &["0"], &["49"], "4294968519"),
    (
        "pod_types.bddf",
        11,
        50,
        &["0"],
        &["49"],
        "18446744073709552839",
    ),
    ("pod_types.bddf", 12, 50, &["-3.25"], &["21.25"], "450.0"),
    ("pod_types.bddf", 13, 50, &["1e-300"], &["4.9"], "122.5"),
];

const COMPLETE: &[&str] = &[
    "additional_indexes.bddf",
    "basic.bddf",
    "empty_series.bddf",
    "grpc.bddf",
    "images.bddf",
    "long_sparse.bddf",
    "out_of_order.bddf",
    "pod_types.bddf",
];

fn dir() -> Option<PathBuf> {
    crate::fixtures::dir("bddf")
}

fn load(dir: &std::path::Path, name: &str) -> BytesReader {
    BytesReader::new(name, std::fs::read(dir.join(name)).unwrap())
}

fn expected(dir: &std::path::Path) -> Json {
    serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap()
}

fn summary_of(file: &dyn ReadAt) -> Summary {
    BddfFormat
        .summary(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.name()))
}

fn index(summary: &Summary) -> &BddfIndex {
    summary.private::<BddfIndex>().unwrap()
}

/// Counts the bytes read through it.
struct Counting<'a>(&'a dyn ReadAt, AtomicU64);

impl ReadAt for Counting<'_> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn size(&self) -> u64 {
        self.0.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.1.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.0.read_exact_at(offset, buf)
    }
}

/// One delivered message: channel id, log time, payload CRC32 and length,
/// additional indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Msg {
    series: u64,
    time: u64,
    crc: u32,
    len: usize,
    aix: Option<Vec<(String, i64)>>,
}

fn sha1_hex(data: &[u8]) -> String {
    Sha1::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

struct ReadAll {
    messages: Vec<Msg>,
    /// Per series: SHA1 over the payloads in delivery order.
    hashes: BTreeMap<u64, Sha1>,
    errors: Vec<Error>,
}

fn read_all(file: &dyn ReadAt, summary: &Summary, sel: &Selection) -> ReadAll {
    read_all_with(file, summary, sel, true)
}

/// Reads every chunk; `hash`: also SHA1 the payloads per series.
fn read_all_with(file: &dyn ReadAt, summary: &Summary, sel: &Selection, hash: bool) -> ReadAll {
    let mut out = ReadAll {
        messages: Vec::new(),
        hashes: BTreeMap::new(),
        errors: Vec::new(),
    };
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            if hash {
                out.hashes.entry(m.channel.id).or_default().update(m.data);
            }
            let aix = match m.extra {
                [ExtraValue::Int64Map { keys, values }] => Some(
                    keys.iter()
                        .cloned()
                        .zip(values.iter().copied())
                        .collect::<Vec<_>>(),
                ),
                [ExtraValue::Null] => None,
                other => panic!("unexpected extra {other:?}"),
            };
            out.messages.push(Msg {
                series: m.channel.id,
                time: m.log_time,
                crc: crc32fast::hash(m.data),
                len: m.data.len(),
                aix,
            });
            Flow::Continue
        };
        if let Err(e) = BddfFormat.read_chunk(file, summary, chunk, sel, &mut receiver) {
            out.errors.push(e);
        }
    }
    out
}

fn series_hashes(r: ReadAll) -> BTreeMap<u64, String> {
    r.hashes
        .into_iter()
        .map(|(k, h)| (k, h.finalize().iter().map(|b| format!("{b:02x}")).collect()))
        .collect()
}

fn prop<'s>(summary: &'s Summary, key: &str) -> Option<&'s str> {
    summary
        .properties
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn identifier_hash_test_vectors() {
    let s = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        identifier_hash(
            "bosdyn:channel",
            &s(&[("bosdyn:channel", "bosdyn.api.OperatorComment")])
        ),
        0xc51068557dabb078
    );
    assert_eq!(
        identifier_hash("bosdyn:channel", &s(&[("varname", "x")])),
        0x1293ccddaaea3062
    );
    // Keys are hashed in sorted order whatever order they are given in.
    assert_eq!(
        identifier_hash(
            "bosdyn:grpc:requests",
            &s(&[
                ("bosdyn:message-type", "bosdyn.api.RobotIdRequest"),
                ("bosdyn:grpc:service", "robot_id"),
            ])
        ),
        0xbebcf813fea09eb6
    );
    assert_eq!(
        identifier_hash(
            "bosdyn:channel",
            &s(&[("bosdyn:channel", "bosdyn.api.RobotState")])
        ),
        0x93d9ece413e638f2
    );
}

#[test]
fn sniff_and_extensions() {
    assert!(BddfFormat.sniff(b"BDDF\xb8\0\0\0\0\0\0\x01"));
    assert!(!BddfFormat.sniff(b"FDDB"));
    assert_eq!(BddfFormat.extensions(), &["bddf"]);
    let f = logsql_readers::formats::sniff(b"BDDF\0\0\0\0\0\0\0\x01").unwrap();
    assert_eq!(f.name(), "bddf");
    assert_eq!(BddfFormat.extra_columns()[0].name, "additional_indexes");
}

/// Every complete fixture against expected.json and the payload oracle.
#[test]
fn complete_files_match_the_official_reader() {
    let Some(dir) = dir() else { return };
    let exp = expected(&dir);
    for name in COMPLETE {
        let e = &exp[*name]["complete"];
        let file = load(&dir, name);
        let summary = summary_of(&file);
        assert!(summary.indexed, "{name}");
        assert!(summary.damage.is_none(), "{name}: {:?}", summary.damage);
        assert_eq!(summary.file_size, e["bytes"].as_u64().unwrap(), "{name}");
        assert_eq!(prop(&summary, "version"), e["version"].as_str(), "{name}");
        assert_eq!(
            prop(&summary, "index_offset").map(|s| s.parse::<u64>().unwrap()),
            e["index_offset"].as_u64(),
            "{name}"
        );
        for (k, v) in e["annotations"].as_object().unwrap() {
            assert_eq!(
                prop(&summary, &format!("annotation:{k}")),
                v.as_str(),
                "{name} {k}"
            );
        }
        let idx = index(&summary);
        let series = e["series"].as_array().unwrap();
        assert_eq!(summary.channels.len(), series.len(), "{name}");
        assert_eq!(idx.series.len(), series.len(), "{name}");
        let mut total_blocks = 0;
        for es in series {
            let i = es["series_index"].as_u64().unwrap();
            let what = format!("{name} series {i}");
            let ch = &summary.channels[&i];
            let s = &idx.series[i as usize];
            let md = &ch.metadata;
            assert_eq!(
                md["series_type"],
                es["series_type"].as_str().unwrap(),
                "{what}"
            );
            assert_eq!(
                serde_json::from_str::<Json>(&md["spec"]).unwrap(),
                es["spec"],
                "{what}"
            );
            let hash = format!("{:#018x}", s.identifier_hash);
            assert_eq!(hash, es["identifier_hash"].as_str().unwrap(), "{what}");
            assert_eq!(md["identifier_hash"], hash, "{what}");
            assert!(s.hash_ok, "{what}");
            assert_eq!(md["hash_ok"], "true", "{what}");
            assert_eq!(
                s.descriptor_offset,
                es["descriptor_file_offset"].as_u64().unwrap(),
                "{what}"
            );
            let blocks = es["blocks"].as_u64().unwrap();
            total_blocks += blocks;
            assert_eq!(s.block_count, blocks, "{what}");
            assert_eq!(
                summary.channel_message_counts.as_ref().unwrap()[&i],
                blocks,
                "{what}"
            );
            assert_eq!(s.total_bytes, es["total_bytes"].as_u64().unwrap(), "{what}");
            assert_eq!(s.start_time, es["first_ns"].as_u64(), "{what}");
            assert_eq!(s.end_time, es["last_ns"].as_u64(), "{what}");
            assert_eq!(s.monotonic, es["monotonic"].as_bool().unwrap(), "{what}");
            let names: Vec<&str> = es["additional_index_names"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(s.additional_index_names, names, "{what}");
            assert_eq!(md["additional_index_names"], names.join(","), "{what}");
            let ann: BTreeMap<String, String> = md
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("annotation:")?.to_string(), v.clone())))
                .collect();
            let exp_ann: BTreeMap<String, String> = es["annotations"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            assert_eq!(ann, exp_ann, "{what}");
            // Topic: the bosdyn:channel spec value, else type:k=v,...
            let spec = es["spec"].as_object().unwrap();
            let topic = match spec.get("bosdyn:channel") {
                Some(c) => c.as_str().unwrap().to_string(),
                None => format!(
                    "{}:{}",
                    es["series_type"].as_str().unwrap(),
                    spec.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            };
            assert_eq!(ch.topic, topic, "{what}");
            match es["kind"].as_str().unwrap() {
                "message_type" => {
                    assert_eq!(
                        md["content_type"],
                        es["content_type"].as_str().unwrap(),
                        "{what}"
                    );
                    assert_eq!(md["type_name"], es["type_name"].as_str().unwrap(), "{what}");
                    assert_eq!(
                        md["is_metadata"],
                        es["is_metadata"].as_bool().unwrap().to_string(),
                        "{what}"
                    );
                    assert_eq!(
                        ch.message_type.as_deref(),
                        es["type_name"].as_str(),
                        "{what}"
                    );
                    let enc = if es["content_type"] == "application/protobuf" {
                        "protobuf"
                    } else {
                        es["content_type"].as_str().unwrap()
                    };
                    assert_eq!(ch.message_encoding, enc, "{what}");
                }
                "pod_type" => {
                    let pt = es["pod_type"].as_str().unwrap();
                    assert_eq!(md["pod_type"], pt, "{what}");
                    let dims: Vec<String> = es["dimension"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d.to_string())
                        .collect();
                    assert_eq!(md["dimensions"], dims.join(","), "{what}");
                    let mt = if dims.is_empty() {
                        pt.to_string()
                    } else {
                        format!("{pt}[{}]", dims.join(", "))
                    };
                    assert_eq!(ch.message_type.as_deref(), Some(mt.as_str()), "{what}");
                    assert_eq!(ch.message_encoding, "pod", "{what}");
                }
                other => panic!("{what}: kind {other}"),
            }
        }
        assert_eq!(summary.message_count, Some(total_blocks), "{name}");
        assert_eq!(
            prop(&summary, "blocks").unwrap(),
            total_blocks.to_string(),
            "{name}"
        );
        assert_eq!(
            e["stream_data_blocks"].as_u64().unwrap(),
            total_blocks,
            "{name}"
        );
        // Chunks cover every block once, in file order.
        assert_eq!(
            summary
                .chunks
                .iter()
                .map(|c| c.message_count.unwrap())
                .sum::<u64>(),
            total_blocks
        );
        for w in summary.chunks.windows(2) {
            assert!(w[0].offset + w[0].length <= w[1].offset, "{name}");
        }
        // Reading every chunk: counts, times, payload hashes.
        let all = read_all(&file, &summary, &Selection::all());
        assert!(all.errors.is_empty(), "{name}: {:?}", all.errors);
        assert_eq!(all.messages.len() as u64, total_blocks, "{name}");
        for es in series {
            let i = es["series_index"].as_u64().unwrap();
            let times: Vec<u64> = all
                .messages
                .iter()
                .filter(|m| m.series == i)
                .map(|m| m.time)
                .collect();
            assert_eq!(
                times.iter().min().copied(),
                es["first_ns"].as_u64(),
                "{name} {i}"
            );
            assert_eq!(
                times.iter().max().copied(),
                es["last_ns"].as_u64(),
                "{name} {i}"
            );
            let bytes: u64 = all
                .messages
                .iter()
                .filter(|m| m.series == i)
                .map(|m| m.len as u64)
                .sum();
            assert_eq!(bytes, es["total_bytes"].as_u64().unwrap(), "{name} {i}");
        }
        let hashes = series_hashes(all);
        let mut checked = 0;
        for (f, s, blocks, sha) in PAYLOADS.iter().filter(|p| p.0 == *name) {
            let got = hashes
                .get(&u64::from(*s))
                .cloned()
                .unwrap_or_else(|| sha1_hex(b""));
            assert_eq!(got, *sha, "{f} series {s} ({blocks} blocks)");
            checked += 1;
        }
        assert_eq!(checked, series.len(), "{name}: oracle rows");
    }
}

#[test]
fn sha1_verifies_and_a_flipped_byte_is_detected() {
    let Some(dir) = dir() else { return };
    for name in COMPLETE.iter().chain(&["no_series.bddf"]) {
        let file = load(&dir, name);
        let summary = summary_of(&file);
        let counting = Counting(&file, AtomicU64::new(0));
        let r = BddfFormat
            .verify(&counting, &summary)
            .expect("has a checksum");
        assert!(r.is_ok(), "{name}: {r:?}");
        assert_eq!(
            counting.1.load(Ordering::Relaxed),
            file.size() - 24,
            "{name}: hashes file[0..len-24]"
        );
    }
    // Summary never hashes: building it reads far less than the file.
    let file = load(&dir, "images.bddf");
    let counting = Counting(&file, AtomicU64::new(0));
    let summary = summary_of(&counting);
    assert!(counting.1.load(Ordering::Relaxed) < 20_000);
    // A flipped payload byte: the summary is the same, verify reports the mismatch.
    let mut bytes = std::fs::read(dir.join("images.bddf")).unwrap();
    let stored = prop(&summary, "sha1").unwrap().to_string();
    let len = bytes.len();
    bytes[400_000] ^= 0x40;
    let flipped = BytesReader::new("flipped.bddf", bytes);
    let s2 = summary_of(&flipped);
    assert_eq!(s2.message_count, summary.message_count);
    match BddfFormat.verify(&flipped, &s2).unwrap() {
        Err(Error::Checksum {
            file,
            offset,
            what,
            stored: st,
            computed,
            ..
        }) => {
            assert_eq!(file, "flipped.bddf");
            assert_eq!(offset, len as u64 - 24);
            assert_eq!(&*what, format!("sha1 over file[0..{}]", len - 24).as_str());
            assert_eq!(&*st, stored.as_str());
            assert_ne!(&*computed, stored.as_str());
            assert_eq!(computed.len(), 40);
        }
        other => panic!("expected a checksum mismatch, got {other:?}"),
    }
}

/// POD samples through the `pod` typed table.
#[test]
fn pod_table_matches_the_official_reader() {
    let Some(dir) = dir() else { return };
    for (name, series, count, first, last, sum) in POD_SAMPLES {
        let what = format!("{name} series {series}");
        let file = load(&dir, name);
        let summary = summary_of(&file);
        // By series index and by topic: the same table.
        let def = BddfFormat
            .table("pod")
            .and_then(|t| t.def(&summary, Some(&series.to_string())))
            .unwrap();
        let topic = &summary.channels[&u64::from(*series)].topic;
        assert_eq!(
            BddfFormat
                .table("pod")
                .and_then(|t| t.def(&summary, Some(topic)))
                .unwrap(),
            def,
            "{what}"
        );
        let names: Vec<&str> = def.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["log_time", "block", "sample", "value"], "{what}");
        assert!(def.per_chunk);
        let elems = first.len();
        match def.columns[3].ty {
            ColumnType::Scalar(_) => assert_eq!(elems, 1, "{what}"),
            ColumnType::FixedList(_, n) => assert_eq!(n, elems, "{what}"),
            other => panic!("{what}: {other:?}"),
        }
        let mut rows: Vec<(u64, u64, u64, Vec<String>)> = Vec::new();
        let mut total = 0f64;
        let mut int_total = 0i128;
        for chunk in &summary.chunks {
            let mut receiver = |cells: &[Value<'_>]| {
                let Value::Time(t) = cells[0] else { panic!() };
                let Value::U64(b) = cells[1] else { panic!() };
                let Value::U64(s) = cells[2] else { panic!() };
                let vals: Vec<String> = match cells[3] {
                    Value::I64(x) => vec![x.to_string()],
                    Value::U64(x) => vec![x.to_string()],
                    Value::F64(x) => vec![format!("{x:?}")],
                    Value::I64s(xs) => xs.iter().map(|x| x.to_string()).collect(),
                    Value::U64s(xs) => xs.iter().map(|x| x.to_string()).collect(),
                    Value::F64s(xs) => xs.iter().map(|x| format!("{x:?}")).collect(),
                    Value::F32s(xs) => xs.iter().map(|x| format!("{:?}", f64::from(*x))).collect(),
                    other => panic!("{other:?}"),
                };
                for v in &vals {
                    match v.parse::<i128>() {
                        Ok(i) => int_total += i,
                        Err(_) => total += v.parse::<f64>().unwrap(),
                    }
                }
                rows.push((t, b, s, vals));
                Flow::Continue
            };
            BddfFormat
                .table("pod")
                .and_then(|t| {
                    t.read_chunk(
                        &file,
                        &summary,
                        chunk,
                        Some(topic),
                        &Selection::all(),
                        &mut receiver,
                    )
                })
                .unwrap();
        }
        assert_eq!(rows.len() as u64, *count, "{what}");
        let same = |got: &[String], want: &[&str]| {
            got.len() == want.len()
                && got
                    .iter()
                    .zip(want)
                    .all(|(g, w)| match (g.parse::<i128>(), w.parse::<i128>()) {
                        (Ok(a), Ok(b)) => a == b,
                        _ => g.parse::<f64>().unwrap() == w.parse::<f64>().unwrap(),
                    })
        };
        assert!(
            same(&rows[0].3, first),
            "{what}: first {:?} vs {first:?}",
            rows[0].3
        );
        assert!(same(&rows.last().unwrap().3, last), "{what}: last");
        match sum.parse::<i128>() {
            Ok(exact) => assert_eq!(int_total, exact, "{what}: integer sum"),
            Err(_) => {
                let sum: f64 = sum.parse().unwrap();
                assert!(
                    (total - sum).abs() <= 1e-9 * sum.abs().max(1.0),
                    "{what}: sum {total} vs {sum}"
                );
            }
        }
        // Block times: log_time is the block time, samples restart at 0 per block.
        let idx = index(&summary);
        let s = &idx.series[*series as usize];
        assert_eq!(rows[0].0, s.start_time.unwrap());
        assert_eq!(rows[0].1, 0);
        assert_eq!(rows[0].2, 0);
        assert_eq!(rows.last().unwrap().1 + 1, s.block_count, "{what}");
    }
}

#[test]
fn pod_table_types_and_errors() {
    let Some(dir) = dir() else { return };
    let file = load(&dir, "pod_types.bddf");
    let summary = summary_of(&file);
    let ty = |arg: &str| {
        BddfFormat
            .table("pod")
            .and_then(|t| t.def(&summary, Some(arg)))
            .unwrap()
            .columns[3]
            .ty
    };
    assert_eq!(
        ty("imu/accel"),
        ColumnType::FixedList(ScalarType::Float64, 3)
    );
    assert_eq!(
        ty("body/tform_odom"),
        ColumnType::FixedList(ScalarType::Float32, 16)
    );
    assert_eq!(ty("battery/cell_mv"), ColumnType::Scalar(ScalarType::Int32));
    let types = [
        ScalarType::Int8,
        ScalarType::Int16,
        ScalarType::Int32,
        ScalarType::Int64,
        ScalarType::UInt8,
        ScalarType::UInt16,
        ScalarType::UInt32,
        ScalarType::UInt64,
        ScalarType::Float32,
        ScalarType::Float64,
    ];
    for (k, t) in types.iter().enumerate() {
        assert_eq!(ty(&(4 + k).to_string()), ColumnType::Scalar(*t));
    }
    let err = BddfFormat
        .table("pod")
        .and_then(|t| t.def(&summary, Some("bosdyn.api.RobotState")))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bosdyn.api.RobotState") && err.contains("not a POD series"),
        "{err}"
    );
    let err = BddfFormat
        .table("pod")
        .and_then(|t| t.def(&summary, Some("nope")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope") && err.contains("imu/accel"), "{err}");
    assert!(
        BddfFormat
            .table("pod")
            .and_then(|t| t.def(&summary, None))
            .is_err()
    );
    assert!(
        BddfFormat
            .table("other")
            .and_then(|t| t.def(&summary, None))
            .is_err()
    );
    // A time window: only the blocks inside it.
    let lo = 1_700_000_001_000_000_000;
    let hi = 1_700_000_002_000_000_000;
    let sel = Selection {
        time: Some((lo, hi)),
        ..Selection::all()
    };
    let mut times = Vec::new();
    for chunk in &summary.chunks {
        let mut receiver = |cells: &[Value<'_>]| {
            let Value::Time(t) = cells[0] else { panic!() };
            times.push(t);
            Flow::Continue
        };
        BddfFormat
            .table("pod")
            .and_then(|t| {
                t.read_chunk(
                    &file,
                    &summary,
                    chunk,
                    Some("acme:signals:varname=test.int8"),
                    &sel,
                    &mut receiver,
                )
            })
            .unwrap();
    }
    // int8 series: 10 Hz from +5 ms: 10 samples in [1 s, 2 s].
    assert_eq!(times.len(), 10, "{times:?}");
    assert!(times.iter().all(|t| (lo..=hi).contains(t)));
}

#[test]
fn series_table() {
    let Some(dir) = dir() else { return };
    let file = load(&dir, "additional_indexes.bddf");
    let summary = summary_of(&file);
    let def = BddfFormat
        .table("series")
        .and_then(|t| t.def(&summary, None))
        .unwrap();
    assert!(!def.per_chunk);
    let col = |n: &str| def.columns.iter().position(|c| c.name == n).unwrap();
    let mut rows: Vec<String> = Vec::new();
    let mut receiver = |cells: &[Value<'_>]| {
        assert_eq!(cells.len(), def.columns.len());
        rows.push(format!("{:?}", cells));
        if let Value::U64(5) = cells[col("series_index")] {
            assert_eq!(cells[col("series_type")], Value::Str("acme:sensor-log"));
            assert_eq!(cells[col("content_type")], Value::Str("text/csv"));
            assert_eq!(
                cells[col("additional_index_names")],
                Value::Str("sequence,receive_time_nsec")
            );
            assert_eq!(cells[col("hash_ok")], Value::Bool(true));
            assert_eq!(
                cells[col("identifier_hash")],
                Value::U64(0xe043d7094141f664)
            );
            assert_eq!(cells[col("block_count")], Value::U64(20));
            let Value::Pairs(spec) = cells[col("spec")] else {
                panic!()
            };
            assert_eq!(spec.len(), 4);
            assert_eq!(spec[2], ("b-key".to_string(), "β".to_string()));
        }
        if let Value::U64(2) = cells[col("series_index")] {
            assert_eq!(cells[col("pod_type")], Value::Str("TYPE_FLOAT64"));
            assert_eq!(cells[col("dimensions")], Value::U64s(&[3]));
            assert_eq!(
                cells[col("start_time")],
                Value::Time(1_700_000_000_001_300_000)
            );
        }
        Flow::Continue
    };
    BddfFormat
        .table("series")
        .and_then(|t| t.read_file(&file, &summary, None, &mut receiver))
        .unwrap();
    assert_eq!(rows.len(), 7);
}

#[test]
fn additional_indexes_column() {
    let Some(dir) = dir() else { return };
    let file = load(&dir, "additional_indexes.bddf");
    let summary = summary_of(&file);
    let all = read_all(&file, &summary, &Selection::all());
    let of = |s: u64| -> Vec<&Msg> { all.messages.iter().filter(|m| m.series == s).collect() };
    let pair = |a: i64, b: i64| {
        Some(vec![
            ("sequence".to_string(), a),
            ("receive_time_nsec".to_string(), b),
        ])
    };
    // Values from the official reader's SeriesBlockIndex entries.
    for (s, n, first, last, sum) in [
        (
            0u64,
            250usize,
            (0, 1700000000001767504),
            (249, 1700000004981856421),
            425000000622922657906i128,
        ),
        (
            5,
            20,
            (0, 1700000000041000007),
            (19, 1700000004791000007),
            34000000048320000330,
        ),
        (
            6,
            2,
            (0, 1700000000720000000),
            (1, 1700000003220000000),
            3400000003940000001,
        ),
    ] {
        let ms = of(s);
        assert_eq!(ms.len(), n);
        assert_eq!(ms[0].aix, pair(first.0, first.1));
        assert_eq!(ms[n - 1].aix, pair(last.0, last.1));
        let total: i128 = ms
            .iter()
            .flat_map(|m| m.aix.as_ref().unwrap())
            .map(|(_, v)| i128::from(*v))
            .sum();
        assert_eq!(total, sum);
    }
    // Series without additional indexes: null.
    assert!(of(1).iter().chain(of(2).iter()).all(|m| m.aix.is_none()));
}

/// Time windows: binary search on sorted series reads only the selected
/// blocks' bytes; unsorted series are filtered; header-only reads read nothing.
#[test]
fn selection_reads_only_selected_blocks() {
    let Some(dir) = dir() else { return };
    for (name, lo, hi, topic) in [
        (
            "long_sparse.bddf",
            1_700_000_100_000_000_000u64,
            1_700_000_200_000_000_000u64,
            None,
        ),
        (
            "long_sparse.bddf",
            1_700_000_100_000_000_000,
            1_700_000_130_000_000_000,
            Some("imu/accel"),
        ),
        (
            "out_of_order.bddf",
            1_700_000_001_000_000_000,
            1_700_000_002_500_000_000,
            None,
        ),
        (
            "out_of_order.bddf",
            1_700_000_001_000_000_000,
            1_700_000_002_500_000_000,
            Some("bosdyn.api.RobotState"),
        ),
        (
            "basic.bddf",
            1_700_000_003_000_000_000,
            1_700_000_003_000_000_000,
            None,
        ),
    ] {
        let file = load(&dir, name);
        let summary = summary_of(&file);
        let full = read_all(&file, &summary, &Selection::all());
        let topic_of = |id: u64| summary.channels[&id].topic.clone();
        let want: Vec<&Msg> = full
            .messages
            .iter()
            .filter(|m| (lo..=hi).contains(&m.time))
            .filter(|m| topic.is_none_or(|t| topic_of(m.series) == t))
            .collect();
        assert!(!want.is_empty(), "{name}");
        let sel = Selection {
            time: Some((lo, hi)),
            topics: topic.map(|t| [t.to_string()].into()),
            ..Selection::all()
        };
        let counting = Counting(&file, AtomicU64::new(0));
        let got = read_all(&counting, &summary, &sel);
        assert!(got.errors.is_empty());
        let got_refs: Vec<&Msg> = got.messages.iter().collect();
        assert_eq!(got_refs, want, "{name} {topic:?}");
        // Bytes read: exactly the delivered blocks (header, descriptor, payload).
        let idx = index(&summary);
        let block_bytes: u64 = idx
            .blocks
            .iter()
            .filter(|b| (lo..=hi).contains(&b.time))
            .filter(|b| topic.is_none_or(|t| idx.series[b.series as usize].topic == t))
            .map(|b| b.extent)
            .sum();
        assert_eq!(counting.1.load(Ordering::Relaxed), block_bytes, "{name}");
        // Header-only: nothing read, same messages without payloads.
        let counting = Counting(&file, AtomicU64::new(0));
        let sel = Selection {
            payload: false,
            full_header: false,
            ..sel
        };
        let light = read_all(&counting, &summary, &sel);
        assert_eq!(counting.1.load(Ordering::Relaxed), 0);
        let a: Vec<(u64, u64)> = light.messages.iter().map(|m| (m.series, m.time)).collect();
        let b: Vec<(u64, u64)> = want.iter().map(|m| (m.series, m.time)).collect();
        assert_eq!(a, b, "{name}");
    }
    // The out-of-order series is flagged and still fully selected by filtering.
    let file = load(&dir, "out_of_order.bddf");
    let summary = summary_of(&file);
    assert_eq!(summary.channels[&0].metadata["monotonic"], "false");
}

#[test]
fn empty_series_and_no_series() {
    let Some(dir) = dir() else { return };
    let file = load(&dir, "empty_series.bddf");
    let s = summary_of(&file);
    assert_eq!(s.channels.len(), 7);
    assert!(s.chunks.is_empty());
    assert_eq!(s.message_count, Some(0));
    assert_eq!((s.start_time, s.end_time), (None, None));
    assert!(s.damage.is_none() && s.indexed);
    assert_eq!(s.channels[&5].message_type.as_deref(), Some("TYPE_UINT16"));
    // The pod table of an empty series has no rows (and no chunks to read).
    assert!(
        BddfFormat
            .table("pod")
            .and_then(|t| t.def(&s, Some("empty/u16")))
            .is_ok()
    );

    // No series: the index is an empty descriptor block (the official readers crash).
    let file = load(&dir, "no_series.bddf");
    let s = summary_of(&file);
    assert!(s.channels.is_empty() && s.chunks.is_empty());
    assert!(s.indexed, "{:?}", s.properties);
    assert!(s.damage.is_none());
    assert_eq!(s.message_count, Some(0));
    assert_eq!(prop(&s, "index_offset"), Some("196"));
    assert_eq!(prop(&s, "series"), Some("0"));
    assert_eq!(
        prop(&s, "annotation:bosdyn:robot-nickname"),
        Some("spot-test-9")
    );
}

/// The truncated fixtures: every complete block, the cut reported.
#[test]
fn truncated_files_recover_every_complete_block() {
    let Some(dir) = dir() else { return };
    let exp = expected(&dir);
    let source = &exp["truncated.bddf"]["complete"]["series"];
    for t in exp["truncated.bddf"]["truncated"].as_array().unwrap() {
        let name = t["file"].as_str().unwrap();
        let file = load(&dir, name);
        assert_eq!(file.size(), t["bytes"].as_u64().unwrap());
        let s = summary_of(&file);
        assert!(!s.indexed, "{name}");
        let damage = s
            .damage
            .clone()
            .unwrap_or_else(|| panic!("{name}: no damage"));
        assert!(
            matches!(damage, Error::Truncated { .. }),
            "{name}: {damage}"
        );
        assert!(damage.to_string().contains(name), "{damage}");
        let mut per_series: BTreeMap<String, u64> = t["per_series_blocks"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        if t["mode"] == "mid-block" {
            // The official stream reader also yields the cut block with a short
            // payload; a correct recovery keeps only the 92 whole ones.
            assert_eq!(t["last_block_series_and_len"][0], 0);
            *per_series.get_mut("0").unwrap() -= 1;
            // The cut is inside the RobotState block (1382-byte payload, 691
            // of them in the file) that starts right after the last whole block.
            let at = damage.offset().unwrap();
            let last = index(&s).blocks.last().unwrap();
            assert_eq!(at, last.offset + last.extent, "{damage}");
            let left = file.size() - at;
            assert!(left > 12 + 691 && left < 12 + 64 + 1382, "{damage}");
            assert!(damage.to_string().contains("cut inside"), "{damage}");
        } else {
            assert_eq!(damage.offset(), Some(file.size()), "{damage}");
        }
        let all = read_all(&file, &s, &Selection::all());
        assert!(all.errors.is_empty(), "{name}: {:?}", all.errors);
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for m in &all.messages {
            *counts.entry(m.series.to_string()).or_default() += 1;
        }
        assert_eq!(counts, per_series, "{name}");
        for (k, n) in &per_series {
            assert_eq!(
                s.channel_message_counts.as_ref().unwrap()[&k.parse::<u64>().unwrap()],
                *n
            );
        }
        // Payload hashes of the complete blocks, per series.
        let hashes = series_hashes(all);
        for (_, series, blocks, sha) in PAYLOADS.iter().filter(|p| p.0 == name) {
            assert_eq!(per_series[&series.to_string()], *blocks, "{name} {series}");
            assert_eq!(hashes[&u64::from(*series)], *sha, "{name} series {series}");
        }
        // Series descriptors were all before the cut: same identifiers as the source.
        let idx = index(&s);
        for es in source.as_array().unwrap() {
            let i = es["series_index"].as_u64().unwrap() as usize;
            assert_eq!(
                format!("{:#018x}", idx.series[i].identifier_hash),
                es["identifier_hash"].as_str().unwrap()
            );
            if t["mode"] != "mid-block" {
                assert_eq!(idx.series[i].start_time, es["first_ns"].as_u64());
                assert_eq!(idx.series[i].end_time, es["last_ns"].as_u64());
            }
        }
        // No trailer: nothing to verify.
        assert!(BddfFormat.verify(&file, &s).is_none());
    }
}

/// Reads `bytes` as a BDDF file without panicking; returns the messages and errors.
fn read_any(name: &str, bytes: Vec<u8>) -> (Vec<Msg>, Vec<Error>) {
    let file = BytesReader::new(name, bytes);
    match BddfFormat.summary(&file) {
        Ok(s) => {
            let r = read_all_with(&file, &s, &Selection::all(), false);
            let light = read_all_with(
                &file,
                &s,
                &Selection {
                    payload: false,
                    full_header: false,
                    ..Selection::all()
                },
                false,
            );
            assert!(light.messages.len() >= r.messages.len());
            for table in ["series", "pod"] {
                let _ = BddfFormat
                    .table(table)
                    .and_then(|t| t.def(&s, Some("imu/accel")));
            }
            let mut errors = r.errors;
            errors.extend(s.damage);
            (r.messages, errors)
        }
        Err(e) => (Vec::new(), vec![e]),
    }
}

#[test]
fn truncation_sweep_returns_a_prefix() {
    let Some(dir) = dir() else { return };
    for (name, step) in [
        ("pod_types.bddf", 37usize),
        ("basic.bddf", 2_999),
        ("grpc.bddf", 211),
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let full = read_any(name, bytes.clone()).0;
        let mut cuts: Vec<usize> = (0..bytes.len()).step_by(step).collect();
        cuts.extend(bytes.len().saturating_sub(80)..bytes.len());
        cuts.extend(0..300);
        for cut in cuts {
            let (msgs, errors) = read_any(name, bytes[..cut].to_vec());
            assert!(msgs.len() <= full.len(), "{name} cut at {cut}");
            assert_eq!(
                &full[..msgs.len()],
                &msgs[..],
                "{name} cut at {cut}: not a prefix"
            );
            for e in &errors {
                assert!(e.to_string().contains(name), "{e}");
            }
            if cut < bytes.len() {
                assert!(
                    !errors.is_empty(),
                    "{name} cut at {cut}: no damage reported"
                );
            }
        }
    }
}

#[test]
fn byte_flip_sweep_never_panics() {
    let Some(dir) = dir() else { return };
    for (name, step) in [
        ("pod_types.bddf", 53usize),
        ("additional_indexes.bddf", 2_999),
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        for at in (0..bytes.len()).step_by(step) {
            for mask in [0x01u8, 0xff] {
                let mut b = bytes.clone();
                b[at] ^= mask;
                let (_, errors) = read_any(name, b);
                for e in &errors {
                    assert!(
                        e.offset().is_some() || matches!(e, Error::Io { .. }),
                        "{name} flip at {at}: {e}"
                    );
                }
            }
        }
    }
}
