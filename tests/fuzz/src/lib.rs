//! Shared drivers of logsql's fuzz targets.
//!
//! Each fuzz target (`fuzz_targets/*.rs`) is one line calling a driver here:
//!
//! - [`exercise_format`]: the input is a whole log file. It goes through
//!   everything a query can reach for that format: `summary`, `read_chunk` on
//!   every chunk (once with everything selected, once with a narrow
//!   selection), every typed table, `verify`, `info_text`, and the format's
//!   payload decoder on every message.
//! - [`exercise_decoder`]: the input is a schema and a payload in the layout
//!   of [`split_decoder_input`]; the decoder is compiled with
//!   `logsql_decode::decoder_for` and the payload appended to a
//!   `ColumnBuilder`, whose finished arrays must pass Arrow's full validation.
//! - [`exercise_image`]: the input is a camera image in the layout of
//!   [`split_image_input`]; it goes through everything `read_images` and the
//!   image functions reach in `logsql_media::images`.
//!
//! - [`exercise_points`]: the input is a point-cloud layout and its bytes
//!   ([`split_points_input`]); the cloud goes through
//!   `logsql_media::points` (checks, the Arrow builder, the PCD and PLY
//!   writers), whose arrays must pass Arrow's full validation.
//!
//! Errors are the expected outcome for most inputs and are ignored; only
//! panics, hangs, out-of-memory and invalid Arrow arrays are findings.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow_array::Array;
use logsql_decode::{ColumnBuilder, MessageDecoder, append_message};
use logsql_readers::formats::{FormatReader, SNIFF_LEN};
use logsql_readers::io::BytesReader;
use logsql_readers::model::{Channel, Flow, Message, Selection};
use logsql_readers::table::{RowReceiver, Value};

/// Most table arguments tried per typed table (BDDF `pod` takes a series).
const MAX_TABLE_ARGS: usize = 8;

/// Decoded rows kept per channel before the builder is finished and checked
/// (bounds the memory of a fuzz run on large seeds).
const MAX_ROWS_PER_BATCH: usize = 1024;

/// Runs every read path of `format` over `data`, a whole log file.
pub fn exercise_format(format: &dyn FormatReader, data: &[u8]) {
    let _ = format.sniff(&data[..data.len().min(SNIFF_LEN)]);
    let file = BytesReader::new("fuzz-input", data.to_vec());
    let Ok(summary) = format.summary(&file) else {
        return;
    };

    // Every message, payloads included, each decoded with its channel's decoder.
    let mut decoders = Decoders::new(format);
    let all = Selection::all();
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            decoders.decode(&m);
            Flow::Continue
        };
        let _ = format.read_chunk(&file, &summary, chunk, &all, &mut receiver);
    }
    decoders.finish_all();

    // A narrow selection (one topic, half the time range, no payloads), which
    // lets readers answer from their finer indexes.
    let topic = summary.channels.values().next().map(|c| c.topic.clone());
    let narrow = Selection {
        time: summary
            .start_time
            .zip(summary.end_time)
            .map(|(lo, hi)| (lo, lo + hi.saturating_sub(lo) / 2)),
        topics: topic.map(|t| HashSet::from([t])),
        payload: false,
        full_header: false,
        ..Default::default()
    };
    for chunk in &summary.chunks {
        let mut receiver = |_: Message<'_>| Flow::Continue;
        let _ = format.read_chunk(&file, &summary, chunk, &narrow, &mut receiver);
    }

    // Every typed table, with no argument or (when one is needed) each topic.
    for &table in format.tables() {
        let mut args: Vec<Option<&str>> = vec![None];
        if table.def(&summary, None).is_err() {
            args.extend(
                summary
                    .channels
                    .values()
                    .take(MAX_TABLE_ARGS)
                    .map(|c| Some(c.topic.as_str())),
            );
        }
        for arg in args {
            let Ok(def) = table.def(&summary, arg) else {
                continue;
            };
            let mut receiver = CountRows(0);
            if def.per_chunk {
                for chunk in &summary.chunks {
                    let _ = table.read_chunk(&file, &summary, chunk, arg, &all, &mut receiver);
                }
            } else {
                let _ = table.read_file(&file, &summary, arg, &mut receiver);
            }
        }
    }

    let _ = format.verify(&file, &summary);
    let _ = format.info_text(&file, &summary, false);
    let _ = format.info_text(&file, &summary, true);
}

/// A [`RowReceiver`] that touches every cell and counts rows.
struct CountRows(u64);

impl RowReceiver for CountRows {
    fn row(&mut self, cells: &[Value<'_>]) -> Flow {
        for cell in cells {
            std::hint::black_box(cell);
        }
        self.0 += 1;
        Flow::Continue
    }
}

/// A channel's compiled decoder and the rows decoded so far.
type ChannelRows = (Arc<dyn MessageDecoder>, ColumnBuilder);

/// One compiled decoder and its rows per channel id (`None`: the channel's
/// schema does not compile).
struct Decoders<'f> {
    format: &'f dyn FormatReader,
    by_channel: BTreeMap<u64, Option<ChannelRows>>,
}

impl<'f> Decoders<'f> {
    fn new(format: &'f dyn FormatReader) -> Self {
        Self {
            format,
            by_channel: BTreeMap::new(),
        }
    }

    /// Decodes `m`'s payload with its channel's decoder, compiled on first use.
    fn decode(&mut self, m: &Message<'_>) {
        let format = self.format;
        let slot = self.by_channel.entry(m.channel.id).or_insert_with(|| {
            let decoder = logsql_decode::decoder_of(m.channel, &format.schema_of(m.channel)).ok()?;
            let builder = ColumnBuilder::new(decoder.data_type()).ok()?;
            Some((decoder, builder))
        });
        if let Some((decoder, builder)) = slot {
            let _ = append_message(decoder.as_ref(), m.data, builder);
            if builder.len() >= MAX_ROWS_PER_BATCH {
                check_finish(decoder.as_ref(), builder, builder.len());
            }
        }
    }

    /// Finishes and validates every channel's rows.
    fn finish_all(&mut self) {
        for (decoder, builder) in self.by_channel.values_mut().flatten() {
            let rows = builder.len();
            check_finish(decoder.as_ref(), builder, rows);
        }
    }
}

/// Finishes `builder` and checks the array: `rows` rows of the decoder's type,
/// valid by Arrow's full validation.
fn check_finish(decoder: &dyn MessageDecoder, builder: &mut ColumnBuilder, rows: usize) {
    let array = builder.finish().unwrap_or_else(|e| {
        panic!(
            "{}: finish() failed after successful appends: {e}",
            decoder.describe()
        )
    });
    assert_eq!(array.len(), rows, "{}: row count", decoder.describe());
    assert_eq!(
        array.data_type(),
        decoder.data_type(),
        "{}: finished type differs from data_type()",
        decoder.describe()
    );
    if let Err(e) = array.to_data().validate_full() {
        panic!("{}: invalid array: {e}", decoder.describe());
    }
}

/// A decoder fuzz input, split into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderInput<'a> {
    /// The message type name (`sensor_msgs/Imu`, `foxglove.PoseInFrame`).
    pub type_name: &'a str,
    /// The schema bytes (definition text, `FileDescriptorSet`, JSON Schema).
    pub schema: &'a [u8],
    /// The payload bytes.
    pub payload: &'a [u8],
}

/// Splits a decoder fuzz input laid out as
/// `[u8 name length][name][u16 LE schema length][schema][payload]`;
/// lengths running past the end are cut at the end. `None` when the name is
/// not UTF-8 or the input is too short for the two length fields.
pub fn split_decoder_input(data: &[u8]) -> Option<DecoderInput<'_>> {
    let (&name_len, rest) = data.split_first()?;
    let (name, rest) = rest.split_at(usize::from(name_len).min(rest.len()));
    let type_name = std::str::from_utf8(name).ok()?;
    let (len, rest) = rest.split_at_checked(2)?;
    let schema_len = usize::from(u16::from_le_bytes([len[0], len[1]]));
    let (schema, payload) = rest.split_at(schema_len.min(rest.len()));
    Some(DecoderInput {
        type_name,
        schema,
        payload,
    })
}

/// Lays out a decoder fuzz input (the inverse of [`split_decoder_input`]);
/// `None` when the name or schema is too long for its length field.
pub fn join_decoder_input(type_name: &str, schema: &[u8], payload: &[u8]) -> Option<Vec<u8>> {
    let name_len = u8::try_from(type_name.len()).ok()?;
    let schema_len = u16::try_from(schema.len()).ok()?;
    let mut out = Vec::with_capacity(3 + type_name.len() + schema.len() + payload.len());
    out.push(name_len);
    out.extend_from_slice(type_name.as_bytes());
    out.extend_from_slice(&schema_len.to_le_bytes());
    out.extend_from_slice(schema);
    out.extend_from_slice(payload);
    Some(out)
}

/// Compiles a decoder for `message_encoding` / `schema_encoding` from the
/// schema in `data` and decodes its payload (whole, then cut in half, so the
/// roll-back of a failed row is exercised), then validates the arrays.
///
/// A JSON input without schema is typed by `json::infer` from the payload.
pub fn exercise_decoder(message_encoding: &str, schema_encoding: &str, data: &[u8]) {
    let Some(input) = split_decoder_input(data) else {
        return;
    };
    let channel = Channel {
        id: 1,
        topic: "/fuzz".into(),
        message_type: Some(input.type_name.to_string()),
        message_encoding: message_encoding.into(),
        schema_encoding: Some(schema_encoding.into()),
        schema: Some(Arc::from(input.schema)),
        metadata: BTreeMap::new(),
    };
    let decoder = if message_encoding == "json" && input.schema.is_empty() {
        logsql_decode::json::infer(&mut std::iter::once(input.payload))
    } else {
        logsql_decode::decoder_for(&channel)
    };
    let Ok(decoder) = decoder else {
        return;
    };
    let Ok(mut builder) = ColumnBuilder::new(decoder.data_type()) else {
        return;
    };
    let mut rows = 0;
    let half = &input.payload[..input.payload.len() / 2];
    for payload in [input.payload, half, input.payload] {
        if append_message(decoder.as_ref(), payload, &mut builder).is_ok() {
            rows += 1;
        }
        assert_eq!(
            builder.len(),
            rows,
            "{}: rows after append",
            decoder.describe()
        );
    }
    check_finish(decoder.as_ref(), &mut builder, rows);
}

/// A point-cloud fuzz input: the fields, the geometry, the flags and the
/// data (see [`split_points_input`]).
#[derive(Debug)]
pub struct PointsInput<'a> {
    /// `(name, offset, datatype number, count)`.
    pub fields: Vec<(String, u32, u8, u32)>,
    pub width: u32,
    pub height: u32,
    pub point_step: u32,
    pub row_step: u32,
    /// Bit 0: big-endian; bit 1: a `foxglove.PointCloud` (datatype numbers
    /// in its order, `point_step` as its stride, no geometry).
    pub flags: u8,
    pub data: &'a [u8],
}

/// Splits a point-cloud fuzz input laid out as `[u8 field count]`, per field
/// `[u8 name length][name][u32 LE offset][u8 datatype][u32 LE count]`, then
/// `[u32 LE width][u32 LE height][u32 LE point_step][u32 LE row_step][u8
/// flags][data...]`. `None` when the input ends before the data.
pub fn split_points_input(data: &[u8]) -> Option<PointsInput<'_>> {
    fn u32_at(rest: &mut &[u8]) -> Option<u32> {
        let (b, r) = rest.split_at_checked(4)?;
        *rest = r;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    let (&n, mut rest) = data.split_first()?;
    let mut fields = Vec::new();
    for _ in 0..n {
        let (&len, r) = rest.split_first()?;
        let (name, r) = r.split_at_checked(usize::from(len))?;
        rest = r;
        let offset = u32_at(&mut rest)?;
        let (&datatype, r) = rest.split_first()?;
        rest = r;
        let count = u32_at(&mut rest)?;
        fields.push((
            String::from_utf8_lossy(name).into_owned(),
            offset,
            datatype,
            count,
        ));
    }
    let width = u32_at(&mut rest)?;
    let height = u32_at(&mut rest)?;
    let point_step = u32_at(&mut rest)?;
    let row_step = u32_at(&mut rest)?;
    let (&flags, data) = rest.split_first()?;
    Some(PointsInput {
        fields,
        width,
        height,
        point_step,
        row_step,
        flags,
        data,
    })
}

/// Reads the cloud in `data` ([`split_points_input`]) as `read_points` does:
/// the datatypes, the checks, the Arrow builder (the cloud, the cloud with
/// its fields in reverse order, a null), Arrow's full validation of the
/// column, and the PCD and PLY writers on the points.
pub fn exercise_points(data: &[u8]) {
    use logsql_media::points::{
        Cloud, CloudFormat, PointField, PointType, PointsBuilder, write_cloud,
    };
    let Some(input) = split_points_input(data) else {
        return;
    };
    let foxglove = input.flags & 2 != 0;
    let fields: Result<Vec<PointField>, _> = input
        .fields
        .iter()
        .map(|(name, offset, datatype, count)| {
            let datatype = if foxglove {
                PointType::from_foxglove(u64::from(*datatype))
            } else {
                PointType::from_ros(u64::from(*datatype))
            }?;
            Ok::<_, logsql_media::MediaError>(PointField {
                name: name.clone(),
                offset: *offset,
                datatype,
                count: if foxglove { 1 } else { *count },
            })
        })
        .collect();
    let Ok(fields) = fields else {
        return;
    };
    let cloud = if foxglove {
        match Cloud::foxglove(&fields, input.point_step, input.data) {
            Ok(c) => c,
            Err(_) => return,
        }
    } else {
        Cloud {
            fields: &fields,
            width: input.width,
            height: input.height,
            point_step: input.point_step,
            row_step: input.row_step,
            is_bigendian: input.flags & 1 != 0,
            data: input.data,
        }
    };
    let Ok(mut builder) = PointsBuilder::new(&fields) else {
        return;
    };
    let reversed: Vec<PointField> = fields.iter().rev().cloned().collect();
    let mut appended = 0;
    for c in [
        cloud,
        Cloud {
            fields: &reversed,
            ..cloud
        },
    ] {
        if builder.append(&c).is_ok() {
            appended += 1;
        }
    }
    builder.append_null();
    let list = builder.finish();
    list.to_data()
        .validate_full()
        .expect("a valid points column");
    assert_eq!(list.len(), appended + 1, "one list per cloud");
    if appended == 0 {
        return;
    }
    assert_eq!(list.value_length(0) as u64, cloud.point_count());
    let points = list.value(0);
    let points = arrow_array::cast::AsArray::as_struct(&points);
    for format in [CloudFormat::Pcd, CloudFormat::Ply] {
        let _ = write_cloud(std::io::Cursor::new(Vec::new()), points, format);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_input_splits() {
        let mut data = vec![1, 1, b'x', 0, 0, 0, 0, 7, 1, 0, 0, 0];
        for v in [2u32, 1, 4, 8] {
            data.extend(v.to_le_bytes());
        }
        data.push(0);
        data.extend(1.5f32.to_le_bytes());
        data.extend(2.5f32.to_le_bytes());
        let input = split_points_input(&data).unwrap();
        assert_eq!(input.fields, [("x".to_string(), 0, 7, 1)]);
        assert_eq!((input.width, input.point_step, input.data.len()), (2, 4, 8));
        exercise_points(&data);
    }

    #[test]
    fn decoder_input_round_trips() {
        let data = join_decoder_input("pkg/T", b"int32 x\n", &[1, 2, 3, 4]).unwrap();
        let input = split_decoder_input(&data).unwrap();
        assert_eq!(input.type_name, "pkg/T");
        assert_eq!(input.schema, b"int32 x\n");
        assert_eq!(input.payload, &[1, 2, 3, 4]);
    }
}

/// The raw encodings an image input's first byte after the kind picks.
pub const IMAGE_ENCODINGS: &[&str] = &[
    "rgb8", "bgr8", "rgba8", "bgra8", "mono8", "8UC1", "mono16", "16UC1", "32FC1",
    "bayer_rggb8", "bayer_bggr8", "bayer_gbrg8", "bayer_grbg8", "yuv422", "uyvy", "yuyv",
    "yuv422_yuy2", "rgb16",
];

/// An image input: `[0][u8 n][format, n bytes][data]` is a compressed
/// image with its message's format string; `[1][u8 encoding index][u16 LE
/// width][u16 LE height][u32 LE step][u8 is_bigendian][data]` a raw one.
pub enum ImageInput<'a> {
    /// A compressed image's format string and data.
    Compressed(&'a str, &'a [u8]),
    /// A raw image's encoding, width, height, step, byte order and data.
    Raw(&'static str, u32, u32, u32, bool, &'a [u8]),
}

/// Splits an image input (see [`ImageInput`]); `None` when too short.
pub fn split_image_input(data: &[u8]) -> Option<ImageInput<'_>> {
    let (&kind, rest) = data.split_first()?;
    if kind == 0 {
        let (&n, rest) = rest.split_first()?;
        let format = std::str::from_utf8(rest.get(..n as usize)?).ok()?;
        return Some(ImageInput::Compressed(format, &rest[n as usize..]));
    }
    let head = rest.get(..10)?;
    let encoding = IMAGE_ENCODINGS[head[0] as usize % IMAGE_ENCODINGS.len()];
    let u16_at = |i: usize| u32::from(u16::from_le_bytes([head[i], head[i + 1]]));
    let step = u32::from_le_bytes([head[5], head[6], head[7], head[8]]);
    Some(ImageInput::Raw(encoding, u16_at(1), u16_at(3), step, head[9] & 1 == 1, &rest[10..]))
}

/// Writes an image input (the inverse of [`split_image_input`]), for seeds.
pub fn image_input(input: &ImageInput<'_>) -> Vec<u8> {
    match *input {
        ImageInput::Compressed(format, data) => {
            let mut v = vec![0, format.len() as u8];
            v.extend_from_slice(format.as_bytes());
            v.extend_from_slice(data);
            v
        }
        ImageInput::Raw(encoding, w, h, step, be, data) => {
            let index = IMAGE_ENCODINGS.iter().position(|e| *e == encoding).unwrap_or(0);
            let mut v = vec![1, index as u8];
            v.extend_from_slice(&(w as u16).to_le_bytes());
            v.extend_from_slice(&(h as u16).to_le_bytes());
            v.extend_from_slice(&step.to_le_bytes());
            v.push(u8::from(be));
            v.extend_from_slice(data);
            v
        }
    }
}

/// Runs everything `read_images` and the image functions do with one image:
/// the header or size check, the Arrow image column, decoding to each pixel
/// format, PNG and JPEG encoding and a thumbnail. Decoded sizes are checked.
pub fn exercise_image(data: &[u8]) {
    use logsql_media::images::arrow::{ImageBuilder, ImageColumn};
    use logsql_media::images::{Codec, Image, PixelFormat};

    let Some(input) = split_image_input(data) else {
        return;
    };
    let made = match input {
        ImageInput::Compressed(format, bytes) => Image::compressed(format, bytes),
        ImageInput::Raw(encoding, w, h, step, be, bytes) => Image::raw(encoding, w, h, step, be, bytes),
    };
    let Ok(image) = made else {
        return;
    };
    let mut builder = ImageBuilder::with_capacity(1);
    builder.append(Some(&image));
    let array = builder.finish();
    array.to_data().validate_full().expect("valid image array");
    let column = ImageColumn::new(&array).expect("an image column");
    let image = column.get(0).expect("the image");
    for format in [PixelFormat::Rgb8, PixelFormat::Mono8, PixelFormat::Mono16] {
        if let Ok(p) = image.pixels(format) {
            assert_eq!(
                p.data.len(),
                p.width as usize * p.height as usize * format.bytes_per_pixel()
            );
            if image.width > 0 {
                assert_eq!((p.width, p.height), (image.width, image.height));
            }
        }
    }
    let _ = image.encode(Codec::Png, None);
    let _ = image.encode(Codec::Jpeg, Some(75));
    let _ = image.thumbnail_png(7);
}

/// Reads `data` as a ROS1 bag, writes every message it reads with
/// `logsql_writers::bag::BagWriter` (as `logsql recover --to
/// bag` does), reads the written bag back and checks that it holds exactly
/// the messages written, in order: topic, log time and payload. Channels a
/// bag connection cannot describe are left out, as recover leaves them out.
pub fn exercise_bag_write(data: &[u8]) {
    use logsql_readers::formats::bag::BagFormat;
    use logsql_writers::bag::{BagConnection, BagWriter};

    let file = BytesReader::new("fuzz-input", data.to_vec());
    let Ok(summary) = BagFormat.summary(&file) else {
        return;
    };
    let Ok(mut writer) = BagWriter::new(std::io::Cursor::new(Vec::new())) else {
        return;
    };
    // Small chunks, so a few messages already make several.
    writer = writer.with_chunk_size(1024);
    let mut connections = BTreeMap::new();
    for (id, channel) in &summary.channels {
        if let Ok(c) = BagConnection::from_channel(channel) {
            connections.insert(*id, writer.add_connection(c));
        }
    }
    let mut written: Vec<(String, u64, Vec<u8>)> = Vec::new();
    let mut failed = false;
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            let Some(&conn) = connections.get(&m.channel.id) else {
                return Flow::Continue;
            };
            match writer.write(conn, m.log_time, m.data) {
                Ok(()) => written.push((m.channel.topic.clone(), m.log_time, m.data.to_vec())),
                // A time the bag format cannot hold (past 2^32 s): refused, never written.
                Err(_) => failed = true,
            }
            Flow::Continue
        };
        let _ = BagFormat.read_chunk(&file, &summary, chunk, &Selection::all(), &mut receiver);
    }
    let _ = failed;
    let out = writer.finish().expect("finishing a bag in memory").into_inner();

    let back = BytesReader::new("written", out);
    let summary = BagFormat
        .summary(&back)
        .unwrap_or_else(|e| panic!("the written bag does not read back: {e}"));
    assert!(summary.damage.is_none(), "the written bag reads as damaged");
    let mut read: Vec<(String, u64, Vec<u8>)> = Vec::new();
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            read.push((m.channel.topic.clone(), m.log_time, m.data.to_vec()));
            Flow::Continue
        };
        BagFormat
            .read_chunk(&back, &summary, chunk, &Selection::all(), &mut receiver)
            .unwrap_or_else(|e| panic!("a chunk of the written bag does not read back: {e}"));
    }
    assert_eq!(read.len(), written.len(), "messages read back");
    assert!(read == written, "the messages read back differ from those written");
}

/// Reads `data` as a rosbag2 SQLite database, writes every message it reads
/// into a new `.db3` with `logsql_writers::ros2::Db3Writer`
/// (as `logsql recover --to db3` does) in a temporary directory, reads that
/// back and checks that it holds exactly the messages written (topic, time,
/// payload; compared as sorted lists, since the reader orders by time).
pub fn exercise_db3_write(data: &[u8]) {
    use logsql_readers::formats::ros2::Ros2Format;
    use logsql_writers::ros2::{Db3Topic, Db3Writer};
    use logsql_readers::io::FileReader;

    let file = BytesReader::new("fuzz-input", data.to_vec());
    let Ok(summary) = Ros2Format.summary(&file) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("logsql-fuzz-db3-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("out.db3");
    let mut writer = Db3Writer::create(&path, "").expect("a new database");
    let mut topics = BTreeMap::new();
    for (id, channel) in &summary.channels {
        if let Ok(t) = writer.add_topic(Db3Topic::from_channel(channel)) {
            topics.insert(*id, t);
        }
    }
    let mut written: Vec<(String, u64, Vec<u8>)> = Vec::new();
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            let (Some(&topic), Ok(time)) = (topics.get(&m.channel.id), i64::try_from(m.log_time))
            else {
                return Flow::Continue;
            };
            writer
                .write(topic, time, m.data)
                .unwrap_or_else(|e| panic!("writing a message: {e}"));
            written.push((m.channel.topic.clone(), m.log_time, m.data.to_vec()));
            Flow::Continue
        };
        let _ = Ros2Format.read_chunk(&file, &summary, chunk, &Selection::all(), &mut receiver);
    }
    let metadata = writer.metadata("out.db3", "");
    writer
        .finish(&metadata)
        .unwrap_or_else(|e| panic!("finishing the database: {e}"));

    let back = FileReader::open(&path).expect("the written database opens");
    let summary = Ros2Format
        .summary(&back)
        .unwrap_or_else(|e| panic!("the written database does not read back: {e}"));
    let mut read: Vec<(String, u64, Vec<u8>)> = Vec::new();
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            read.push((m.channel.topic.clone(), m.log_time, m.data.to_vec()));
            Flow::Continue
        };
        Ros2Format
            .read_chunk(&back, &summary, chunk, &Selection::all(), &mut receiver)
            .unwrap_or_else(|e| panic!("the written database does not read back: {e}"));
    }
    drop(back);
    let _ = std::fs::remove_dir_all(&dir);
    written.sort();
    read.sort();
    assert_eq!(read.len(), written.len(), "messages read back");
    assert!(read == written, "the messages read back differ from those written");
}
