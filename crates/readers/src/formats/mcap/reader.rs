//! The public streamed record reader: every record of a file, in file order.
//!
//! This module owns [`RecordReader`], the "look at everything" view used by the
//! conformance tests and by structural checks: it reads front to back with a
//! bounded buffer, replaces each Chunk by the records inside it (decompressed
//! into one reused buffer), verifies chunk, attachment and data-section CRCs,
//! and can skip MessageIndex records. Records borrow from the reader's buffers,
//! so it is a *lending* reader: call [`RecordReader::next_record`] in a loop.
//!
//! ```no_run
//! use logsql_readers::formats::mcap::reader::RecordReader;
//! use logsql_readers::formats::mcap::records::Record;
//! use logsql_readers::io::FileReader;
//!
//! # fn main() -> logsql_readers::Result<()> {
//! let file = FileReader::open("run.mcap")?;
//! let mut reader = RecordReader::new(&file)?;
//! while let Some(item) = reader.next_record()? {
//!     if let Record::Message(m) = item.record {
//!         println!("channel {} at {}: {} bytes", m.header.channel_id, m.header.log_time, m.data.len());
//!     }
//! }
//! # Ok(()) }
//! ```

use super::chunk::decompress_records;
use super::records::{self, MAGIC, RECORD_PREFIX_LEN, Record, op};
use super::walk::{field_err, prefix_fields};
use crate::byte_buf::ByteBuf;
use crate::error::{ErrorContext, Result, hex_head};
use crate::io::{ReadAt, SequentialReader};

/// What a [`RecordReader`] yields and checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordReaderOptions {
    /// Replace each Chunk by its decompressed inner records (default `true`);
    /// when `false`, Chunk records are yielded as they are.
    pub flatten_chunks: bool,
    /// Yield MessageIndex records (default `false`: they are skipped).
    pub message_indexes: bool,
    /// Verify chunk `uncompressed_crc`, attachment `crc` and `data_section_crc`
    /// when they are not 0 (default `true`).
    pub verify_crcs: bool,
}

impl Default for RecordReaderOptions {
    fn default() -> Self {
        Self {
            flatten_chunks: true,
            message_indexes: false,
            verify_crcs: true,
        }
    }
}

/// One record and where it came from.
#[derive(Debug, Clone, Copy)]
pub struct RecordItem<'a> {
    /// File offset of the top-level record (for a record from inside a chunk, of that Chunk record).
    pub offset: u64,
    /// For a record from inside a chunk, its position in the decompressed chunk records.
    pub in_chunk: Option<usize>,
    /// The record.
    pub record: Record<'a>,
}

#[derive(Debug, Clone, Copy)]
enum State {
    TopLevel,
    InChunk {
        chunk_offset: u64,
        pos: usize,
        records_file_offset: Option<u64>,
    },
    ClosingMagic,
    Done,
}

enum Step {
    Done,
    Top {
        len: u64,
    },
    Inner {
        chunk_offset: u64,
        pos: usize,
        opcode: u8,
        start: usize,
        end: usize,
        records_file_offset: Option<u64>,
    },
}

/// Reads every record of an MCAP file in file order (see the module documentation).
pub struct RecordReader<'f> {
    ctx: ErrorContext,
    sr: SequentialReader<'f>,
    size: u64,
    opts: RecordReaderOptions,
    state: State,
    chunk_buf: ByteBuf,
    /// CRC of the data section so far; `None` after DataEnd.
    data_crc: Option<crc32fast::Hasher>,
}

impl<'f> RecordReader<'f> {
    /// A reader with default options; checks the leading magic.
    pub fn new(file: &'f dyn ReadAt) -> Result<Self> {
        Self::with_options(file, RecordReaderOptions::default())
    }

    /// A reader with `opts`; checks the leading magic.
    pub fn with_options(file: &'f dyn ReadAt, opts: RecordReaderOptions) -> Result<Self> {
        let ctx = ErrorContext::new(file.name(), "mcap", file.size());
        let mut sr = SequentialReader::new(file, 0);
        let head = sr.peek(MAGIC.len()).map_err(|e| ctx.io(e))?;
        if head != MAGIC {
            return Err(ctx.corrupt(
                0,
                format!(
                    "not an MCAP file: expected magic {}, found {}",
                    hex_head(MAGIC),
                    hex_head(head)
                ),
            ));
        }
        sr.advance(MAGIC.len() as u64);
        let mut data_crc = crc32fast::Hasher::new();
        data_crc.update(MAGIC);
        Ok(Self {
            ctx,
            sr,
            size: file.size(),
            opts,
            state: State::TopLevel,
            chunk_buf: ByteBuf::default(),
            data_crc: Some(data_crc),
        })
    }

    /// File offset of the next top-level record.
    pub fn position(&self) -> u64 {
        self.sr.position()
    }

    /// The next record, `Ok(None)` after the Footer and closing magic. After an
    /// error the reader is finished.
    pub fn next_record(&mut self) -> Result<Option<RecordItem<'_>>> {
        let step = match self.prepare() {
            Ok(step) => step,
            Err(e) => {
                self.state = State::Done;
                return Err(e);
            }
        };
        match step {
            Step::Done => Ok(None),
            Step::Inner {
                chunk_offset,
                pos,
                opcode,
                start,
                end,
                records_file_offset,
            } => {
                let content = self.chunk_buf.get(start..end).unwrap_or(&[]);
                match records::parse_record(opcode, content) {
                    Ok(record) => Ok(Some(RecordItem {
                        offset: chunk_offset,
                        in_chunk: Some(pos),
                        record,
                    })),
                    Err(e) => {
                        self.state = State::Done;
                        let at = pos + RECORD_PREFIX_LEN as usize + e.pos;
                        let msg = format!("bad {} record: {}", op::name(opcode), e.message);
                        Err(inner_error(
                            &self.ctx,
                            chunk_offset,
                            records_file_offset,
                            at,
                            msg,
                        ))
                    }
                }
            }
            Step::Top { len } => {
                let pos = self.sr.position();
                let total = (RECORD_PREFIX_LEN + len) as usize;
                let ctx = &self.ctx;
                let bytes = match self.sr.take(total) {
                    Ok(Some(b)) => b,
                    Ok(None) => {
                        self.state = State::Done;
                        return Err(ctx.truncated(pos, "record extends past the end of the file"));
                    }
                    Err(e) => {
                        self.state = State::Done;
                        return Err(ctx.io(e));
                    }
                };
                let (opcode, _) = prefix_fields(bytes);
                let content = bytes.get(RECORD_PREFIX_LEN as usize..).unwrap_or(&[]);
                let record = match records::parse_record(opcode, content) {
                    Ok(r) => r,
                    Err(e) => {
                        self.state = State::Done;
                        return Err(field_err(ctx, pos, opcode, &e));
                    }
                };
                let check = match &record {
                    Record::DataEnd(d) => {
                        let computed = self.data_crc.take().map(|h| h.finalize());
                        match computed {
                            Some(c)
                                if self.opts.verify_crcs
                                    && d.data_section_crc != 0
                                    && c != d.data_section_crc =>
                            {
                                Err(ctx.checksum(
                                    pos,
                                    "data_section_crc",
                                    u64::from(d.data_section_crc),
                                    u64::from(c),
                                ))
                            }
                            _ => Ok(()),
                        }
                    }
                    Record::Attachment(a) if self.opts.verify_crcs && a.crc != 0 => {
                        let computed =
                            crc32fast::hash(content.get(..a.crc_covered_len).unwrap_or(&[]));
                        if computed == a.crc {
                            Ok(())
                        } else {
                            Err(ctx.checksum(
                                pos,
                                "attachment crc",
                                u64::from(a.crc),
                                u64::from(computed),
                            ))
                        }
                    }
                    _ => Ok(()),
                };
                if let Some(h) = self.data_crc.as_mut() {
                    h.update(bytes);
                }
                if let Err(e) = check {
                    self.state = State::Done;
                    return Err(e);
                }
                if opcode == op::FOOTER {
                    self.state = State::ClosingMagic;
                }
                Ok(Some(RecordItem {
                    offset: pos,
                    in_chunk: None,
                    record,
                }))
            }
        }
    }

    /// Advances past everything that is not yielded (chunk framing, skipped
    /// records) and says what to yield next.
    fn prepare(&mut self) -> Result<Step> {
        let ctx = &self.ctx;
        loop {
            match self.state {
                State::Done => return Ok(Step::Done),
                State::ClosingMagic => {
                    let pos = self.sr.position();
                    let tail = self.sr.peek(MAGIC.len()).map_err(|e| ctx.io(e))?;
                    if tail != MAGIC {
                        return Err(ctx.corrupt(
                            pos,
                            format!(
                                "expected the closing magic after the Footer, found {}",
                                hex_head(tail)
                            ),
                        ));
                    }
                    self.sr.advance(MAGIC.len() as u64);
                    self.state = State::Done;
                }
                State::InChunk {
                    chunk_offset,
                    pos,
                    records_file_offset,
                } => {
                    let Some(rest) = self.chunk_buf.get(pos..).filter(|r| !r.is_empty()) else {
                        self.state = State::TopLevel;
                        continue;
                    };
                    if rest.len() < RECORD_PREFIX_LEN as usize {
                        let msg =
                            format!("{} trailing bytes are too short for a record", rest.len());
                        return Err(inner_error(
                            ctx,
                            chunk_offset,
                            records_file_offset,
                            pos,
                            msg,
                        ));
                    }
                    let (opcode, len) = prefix_fields(rest);
                    let room = (rest.len() - RECORD_PREFIX_LEN as usize) as u64;
                    if len > room {
                        let msg = format!(
                            "{} record of {len} bytes runs past the end of the chunk ({room} bytes left)",
                            op::name(opcode)
                        );
                        return Err(inner_error(
                            ctx,
                            chunk_offset,
                            records_file_offset,
                            pos,
                            msg,
                        ));
                    }
                    let start = pos + RECORD_PREFIX_LEN as usize;
                    let end = start + len as usize;
                    self.state = State::InChunk {
                        chunk_offset,
                        pos: end,
                        records_file_offset,
                    };
                    if opcode == op::MESSAGE_INDEX && !self.opts.message_indexes {
                        continue;
                    }
                    return Ok(Step::Inner {
                        chunk_offset,
                        pos,
                        opcode,
                        start,
                        end,
                        records_file_offset,
                    });
                }
                State::TopLevel => {
                    let pos = self.sr.position();
                    let remaining = self.size.saturating_sub(pos);
                    if remaining == 0 {
                        return Err(ctx.truncated(pos, "file ends without a Footer record"));
                    }
                    if remaining < RECORD_PREFIX_LEN {
                        return Err(ctx.truncated(
                            pos,
                            format!("{remaining} bytes left, too few for a record"),
                        ));
                    }
                    let (opcode, len) = prefix_fields(
                        self.sr
                            .peek(RECORD_PREFIX_LEN as usize)
                            .map_err(|e| ctx.io(e))?,
                    );
                    if len > remaining - RECORD_PREFIX_LEN {
                        return Err(ctx.truncated(
                            pos,
                            format!(
                                "{} record of {len} bytes extends past the end of the file ({} bytes left)",
                                op::name(opcode),
                                remaining - RECORD_PREFIX_LEN
                            ),
                        ));
                    }
                    let skip_mi = opcode == op::MESSAGE_INDEX && !self.opts.message_indexes;
                    let flatten = opcode == op::CHUNK && self.opts.flatten_chunks;
                    if !skip_mi && !flatten {
                        return Ok(Step::Top { len });
                    }
                    let total = usize::try_from(RECORD_PREFIX_LEN + len)
                        .map_err(|_| ctx.unsupported(pos, "record too large for this platform"))?;
                    let bytes = self.sr.take(total).map_err(|e| ctx.io(e))?.ok_or_else(|| {
                        ctx.truncated(pos, "record extends past the end of the file")
                    })?;
                    if let Some(h) = self.data_crc.as_mut() {
                        h.update(bytes);
                    }
                    if skip_mi {
                        continue;
                    }
                    let content = bytes.get(RECORD_PREFIX_LEN as usize..).unwrap_or(&[]);
                    let chunk = records::parse_chunk(content)
                        .map_err(|e| field_err(ctx, pos, opcode, &e))?;
                    let records_offset = pos + RECORD_PREFIX_LEN + chunk.records_pos as u64;
                    decompress_records(
                        ctx,
                        pos,
                        &chunk.header,
                        chunk.records,
                        None,
                        records_offset,
                        &mut self.chunk_buf,
                        self.opts.verify_crcs,
                    )?;
                    let stored = chunk.header.compression.is_empty();
                    self.state = State::InChunk {
                        chunk_offset: pos,
                        pos: 0,
                        records_file_offset: stored.then_some(records_offset),
                    };
                }
            }
        }
    }
}

fn inner_error(
    ctx: &ErrorContext,
    chunk_offset: u64,
    records_file_offset: Option<u64>,
    pos: usize,
    message: String,
) -> crate::Error {
    match records_file_offset {
        Some(base) => ctx.corrupt(
            base + pos as u64,
            format!("inside the chunk at byte {chunk_offset}: {message}"),
        ),
        None => ctx.corrupt(
            chunk_offset,
            format!(
                "in the chunk at this offset, at byte {pos} of its decompressed records: {message}"
            ),
        ),
    }
}
