//! Decoding a `SeriesBlockIndex` descriptor block entry by entry.
//!
//! A series' block index lists every data block of the series (43,618 entries
//! over the 7 series of the 200 MB benchmark file). Decoding it with the
//! generated types builds a vector of entries, each with its own vector of
//! additional index values, only for [`super::index`] to copy them into its
//! block list and drop them. Here the block's fields are walked with prost's
//! own field decoders and each entry is handed over as it is decoded: its
//! additional index values go straight into the caller's list, and nothing is
//! allocated per entry.
//!
//! The result is what `DescriptorBlock::decode` gives for a block whose only
//! `DescriptorType` field is `series_block_index` (fields in any order, repeated
//! occurrences merged, unknown fields skipped). A block that also sets another
//! `DescriptorType` field is reported as not a series block index, which no
//! writer produces; the caller then reads the file without its index.

use std::ops::Range;

use prost::DecodeError;
use prost::bytes::Buf;
use prost::encoding::{
    DecodeContext, WireType, decode_key, int64, merge_loop, message, skip_field, uint32, uint64,
};

use super::proto;
use crate::model::Nanos;

/// `DescriptorBlock.series_block_index`.
const SERIES_BLOCK_INDEX: u32 = 3;
/// The other `DescriptorBlock.DescriptorType` fields (file descriptor, series
/// descriptor, file index).
const OTHER_DESCRIPTORS: [u32; 3] = [1, 2, 4];

/// The fields of a `SeriesBlockIndex` besides its entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BlockIndexHead {
    /// `series_index`.
    pub series_index: u32,
    /// `descriptor_file_offset`.
    pub descriptor_file_offset: u64,
    /// `total_bytes`.
    pub total_bytes: u64,
}

/// One `BlockEntry`, as decoded.
#[derive(Debug, Clone)]
pub(super) struct BlockEntry {
    /// `timestamp`, in nanoseconds (see [`timestamp_ns`]).
    pub time: Nanos,
    /// `file_offset`.
    pub file_offset: u64,
    /// Where the entry's additional index values lie in the caller's list.
    pub additional: Range<usize>,
}

/// Decodes the body of a descriptor block that should hold a
/// `SeriesBlockIndex`, calling `entry` for each block entry in order; each
/// entry's additional index values are appended to `additional` first.
///
/// `Ok(None)`: the block holds another descriptor (or none). On an error some
/// entries may already have been handed over.
pub(super) fn decode(
    body: &[u8],
    additional: &mut Vec<i64>,
    mut entry: impl FnMut(BlockEntry),
) -> Result<Option<BlockIndexHead>, DecodeError> {
    // Where the series block index lies: a block naming another descriptor
    // type is not one (see the module documentation).
    let mut buf = body;
    let mut found = false;
    while buf.has_remaining() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        if OTHER_DESCRIPTORS.contains(&tag) {
            return Ok(None);
        }
        found |= tag == SERIES_BLOCK_INDEX;
        skip_field(wire_type, tag, &mut buf, DecodeContext::default())?;
    }
    if !found {
        return Ok(None);
    }
    let mut head = BlockIndexHead::default();
    let mut buf = body;
    while buf.has_remaining() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        if tag != SERIES_BLOCK_INDEX {
            skip_field(wire_type, tag, &mut buf, DecodeContext::default())?;
            continue;
        }
        check_length_delimited(wire_type)?;
        merge_loop(
            &mut head,
            &mut buf,
            DecodeContext::default(),
            |head, buf, ctx| {
                let (tag, wire_type) = decode_key(buf)?;
                match tag {
                    1 => uint32::merge(wire_type, &mut head.series_index, buf, ctx),
                    2 => uint64::merge(wire_type, &mut head.descriptor_file_offset, buf, ctx),
                    3 => {
                        check_length_delimited(wire_type)?;
                        let e = block_entry(buf, additional, ctx)?;
                        entry(e);
                        Ok(())
                    }
                    4 => uint64::merge(wire_type, &mut head.total_bytes, buf, ctx),
                    _ => skip_field(wire_type, tag, buf, ctx),
                }
            },
        )?;
    }
    Ok(Some(head))
}

/// Decodes one length-delimited `BlockEntry`.
fn block_entry(
    buf: &mut impl Buf,
    additional: &mut Vec<i64>,
    ctx: DecodeContext,
) -> Result<BlockEntry, DecodeError> {
    let before = additional.len();
    let mut timestamp: Option<proto::Timestamp> = None;
    let mut file_offset = 0u64;
    merge_loop(&mut file_offset, buf, ctx, |file_offset, buf, ctx| {
        let (tag, wire_type) = decode_key(buf)?;
        match tag {
            1 => message::merge(
                wire_type,
                timestamp.get_or_insert_with(Default::default),
                buf,
                ctx,
            ),
            2 => uint64::merge(wire_type, file_offset, buf, ctx),
            3 => int64::merge_repeated(wire_type, additional, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    })?;
    Ok(BlockEntry {
        time: timestamp_ns(timestamp.as_ref()),
        file_offset,
        additional: before..additional.len(),
    })
}

/// The error prost gives for a message field of another wire type.
fn check_length_delimited(wire_type: WireType) -> Result<(), DecodeError> {
    prost::encoding::check_wire_type(WireType::LengthDelimited, wire_type)
}

/// Nanoseconds since the epoch of a protobuf timestamp, clamped to `0..=u64::MAX`
/// (times before 1970 become 0).
pub(crate) fn timestamp_ns(ts: Option<&proto::Timestamp>) -> Nanos {
    let Some(ts) = ts else { return 0 };
    let ns = i128::from(ts.seconds) * 1_000_000_000 + i128::from(ts.nanos);
    u64::try_from(ns.max(0)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use proto::descriptor_block::DescriptorType;
    use proto::series_block_index::BlockEntry as ProtoEntry;

    fn entry(seconds: i64, nanos: i32, offset: u64, aix: &[i64]) -> ProtoEntry {
        ProtoEntry {
            timestamp: Some(proto::Timestamp { seconds, nanos }),
            file_offset: offset,
            additional_indexes: aix.to_vec(),
        }
    }

    fn block(sbi: proto::SeriesBlockIndex) -> Vec<u8> {
        proto::DescriptorBlock {
            descriptor_type: Some(DescriptorType::SeriesBlockIndex(sbi)),
        }
        .encode_to_vec()
    }

    /// The head, the entries and the additional index values of a block.
    type Decoded = (BlockIndexHead, Vec<BlockEntry>, Vec<i64>);

    fn decoded(body: &[u8]) -> Result<Option<Decoded>, DecodeError> {
        let mut aix = Vec::new();
        let mut entries = Vec::new();
        let head = decode(body, &mut aix, |e| entries.push(e))?;
        Ok(head.map(|h| (h, entries, aix)))
    }

    #[test]
    fn entries_and_fields_match_the_generated_decoder() {
        let sbi = proto::SeriesBlockIndex {
            series_index: 3,
            descriptor_file_offset: 1234,
            block_entries: vec![
                entry(1_700_000_000, 5, 4096, &[7, -2]),
                entry(1_700_000_001, 0, 9000, &[]),
                ProtoEntry {
                    timestamp: None,
                    file_offset: 12_000,
                    additional_indexes: vec![i64::MIN, i64::MAX],
                },
                entry(-5, 0, 13_000, &[1]),
            ],
            total_bytes: 99,
        };
        let body = block(sbi.clone());
        let (head, entries, aix) = decoded(&body).unwrap().unwrap();
        assert_eq!(
            head,
            BlockIndexHead {
                series_index: 3,
                descriptor_file_offset: 1234,
                total_bytes: 99
            }
        );
        let want: Vec<(Nanos, u64)> = sbi
            .block_entries
            .iter()
            .map(|e| (timestamp_ns(e.timestamp.as_ref()), e.file_offset))
            .collect();
        let got: Vec<(Nanos, u64)> = entries.iter().map(|e| (e.time, e.file_offset)).collect();
        assert_eq!(got, want);
        let ranges: Vec<Range<usize>> = entries.iter().map(|e| e.additional.clone()).collect();
        assert_eq!(ranges, vec![0..2, 2..2, 2..4, 4..5]);
        assert_eq!(entries[0].time, 1_700_000_000_000_000_005);
        assert_eq!(entries[2].time, 0);
        assert_eq!(entries[3].time, 0);
        assert_eq!(aix, vec![7, -2, i64::MIN, i64::MAX, 1]);
    }

    #[test]
    fn repeated_occurrences_merge_and_unknown_fields_are_skipped() {
        // Two `series_block_index` fields (entries appended, later scalars
        // win), an unknown varint field before and an unknown one inside an
        // entry; additional indexes unpacked (one key per value).
        let first = block(proto::SeriesBlockIndex {
            series_index: 1,
            descriptor_file_offset: 10,
            block_entries: vec![entry(1, 0, 100, &[])],
            total_bytes: 5,
        });
        let second = block(proto::SeriesBlockIndex {
            series_index: 2,
            descriptor_file_offset: 0,
            block_entries: vec![entry(2, 0, 200, &[])],
            total_bytes: 0,
        });
        let mut body = vec![0x78, 0x05]; // field 15, varint 5
        body.extend_from_slice(&first);
        body.extend_from_slice(&second);
        let (head, entries, _) = decoded(&body).unwrap().unwrap();
        let generated = proto::DescriptorBlock::decode(body.as_slice()).unwrap();
        let Some(DescriptorType::SeriesBlockIndex(sbi)) = generated.descriptor_type else {
            panic!("not a series block index");
        };
        assert_eq!(head.series_index, sbi.series_index);
        assert_eq!(head.descriptor_file_offset, sbi.descriptor_file_offset);
        assert_eq!(head.total_bytes, sbi.total_bytes);
        assert_eq!(
            entries.iter().map(|e| e.file_offset).collect::<Vec<_>>(),
            vec![100, 200]
        );

        // An entry: field 2 = 300, unknown field 9 (varint), field 3 unpacked twice.
        let entry_body = [0x10, 0xac, 0x02, 0x48, 0x01, 0x18, 0x04, 0x18, 0x06];
        let mut sbi_body = vec![0x1a, entry_body.len() as u8];
        sbi_body.extend_from_slice(&entry_body);
        let mut body = vec![0x1a, sbi_body.len() as u8];
        body.extend_from_slice(&sbi_body);
        let (_, entries, aix) = decoded(&body).unwrap().unwrap();
        assert_eq!(entries[0].file_offset, 300);
        assert_eq!(entries[0].additional, 0..2);
        assert_eq!(aix, vec![4, 6]);
    }

    #[test]
    fn other_descriptors_and_damage() {
        let fi = proto::DescriptorBlock {
            descriptor_type: Some(DescriptorType::FileIndex(proto::FileIndex::default())),
        }
        .encode_to_vec();
        assert!(decoded(&fi).unwrap().is_none());
        assert!(decoded(&[]).unwrap().is_none());
        let body = block(proto::SeriesBlockIndex {
            series_index: 1,
            descriptor_file_offset: 10,
            block_entries: vec![entry(1, 0, 100, &[1, 2, 3])],
            total_bytes: 5,
        });
        // Every cut of the body fails as the generated decoder does.
        for cut in 1..body.len() {
            let ours = decoded(&body[..cut]);
            let generated = proto::DescriptorBlock::decode(&body[..cut]);
            assert_eq!(ours.is_err(), generated.is_err(), "cut at {cut}");
        }
        // A wrong wire type for the index field.
        assert!(decoded(&[0x18, 0x01]).is_err());
    }
}
