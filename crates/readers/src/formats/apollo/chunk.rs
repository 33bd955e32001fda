//! Reading one chunk: the CHUNK_BODY section, walked without copying payloads.

use std::collections::HashMap;
use std::ops::ControlFlow;

use crate::error::{Error, ErrorContext, Result};
use crate::formats::chunk_io::with_buffers;
use crate::io::ReadAt;
use crate::model::{
    Channel, ChunkMeta, ChunkRead, Flow, Message, MessageReceiver, Selection, Summary,
};
use arrow_buffer::Buffer;

use super::section::{SECTION_LEN, SectionHeader, kind, kind_name, walk_body};
use super::summary::{RecordIndex, compress_name, undeclared_channel};

/// Where a message's channel lives.
#[derive(Clone, Copy)]
enum Slot<'s> {
    Summary(&'s Channel, bool),
    Local(usize, bool),
}

/// Name to channel for one chunk read, with the topic verdict cached.
struct Channels<'s> {
    summary: &'s Summary,
    by_name: Option<&'s HashMap<Box<[u8]>, u64>>,
    sel: &'s Selection,
    local: Vec<Channel>,
    slots: HashMap<Vec<u8>, Slot<'s>>,
}

impl<'s> Channels<'s> {
    fn slot(&mut self, name: &[u8]) -> Slot<'s> {
        if let Some(s) = self.slots.get(name) {
            return *s;
        }
        let known = self
            .by_name
            .and_then(|m| m.get(name))
            .and_then(|id| self.summary.channels.get(id))
            .or_else(|| {
                // Summaries not built by this reader: match by topic.
                self.summary
                    .channels
                    .values()
                    .find(|c| c.topic.as_bytes() == name)
            });
        let slot = match known {
            Some(ch) => Slot::Summary(ch, self.sel.wants_topic(&ch.topic)),
            None => {
                let ch = undeclared_channel(name);
                let wanted = self.sel.wants_topic(&ch.topic);
                self.local.push(ch);
                Slot::Local(self.local.len() - 1, wanted)
            }
        };
        self.slots.insert(name.to_vec(), slot);
        slot
    }
}

/// Reads the chunk body section at `chunk.offset` and delivers its messages.
pub(super) fn read(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    chunk: &ChunkMeta,
    sel: &Selection,
    receiver: &mut dyn MessageReceiver,
) -> Result<ChunkRead> {
    let private = summary.private::<RecordIndex>();
    let compress = private.map_or(0, |p| p.compress);
    with_buffers(|raw, _| {
        let mut section = raw.read(
            file,
            ctx,
            chunk.offset,
            chunk.length.max(SECTION_LEN),
            "chunk body section",
        )?;
        let sh = SectionHeader::parse(section)
            .ok_or_else(|| ctx.truncated(chunk.offset, "section header"))?;
        if sh.kind != kind::CHUNK_BODY {
            return Err(ctx.corrupt(
                chunk.offset,
                format!(
                    "expected a CHUNK_BODY section, found {}",
                    kind_name(sh.kind)
                ),
            ));
        }
        let len = sh.length().ok_or_else(|| {
            ctx.corrupt(
                chunk.offset + 8,
                format!("chunk body size {} is invalid", sh.size),
            )
        })?;
        let total = SECTION_LEN + len;
        if total > section.len() as u64 {
            // The index gave a shorter range than the section declares.
            section = raw.read(file, ctx, chunk.offset, total, "chunk body section")?;
        }
        let buffer = section;
        let body = buffer
            .get(SECTION_LEN as usize..total as usize)
            .ok_or_else(|| ctx.truncated(chunk.offset, "chunk body"))?;
        let body_offset = chunk.offset + SECTION_LEN;
        deliver(
            ctx,
            summary,
            private,
            body,
            buffer,
            body_offset,
            compress,
            sel,
            receiver,
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn deliver(
    ctx: &ErrorContext,
    summary: &Summary,
    private: Option<&RecordIndex>,
    body: &[u8],
    buffer: &Buffer,
    body_offset: u64,
    compress: i32,
    sel: &Selection,
    receiver: &mut dyn MessageReceiver,
) -> Result<ChunkRead> {
    let mut channels = Channels {
        summary,
        by_name: private.map(|p| &p.by_name),
        sel,
        local: Vec::new(),
        slots: HashMap::new(),
    };
    let mut stats = ChunkRead::default();
    let mut last: Option<(&[u8], Slot<'_>)> = None;
    let walked = walk_body(body, |m, _| {
        stats.messages += 1;
        let slot = match last {
            Some((name, slot)) if name == m.channel => slot,
            _ => {
                let slot = channels.slot(m.channel);
                last = Some((m.channel, slot));
                slot
            }
        };
        let (channel, wanted) = match slot {
            Slot::Summary(ch, w) => (ch, w),
            Slot::Local(i, w) => (&channels.local[i], w),
        };
        if !wanted || !sel.wants_time(m.time) {
            return ControlFlow::Continue(());
        }
        let msg = Message {
            channel,
            log_time: m.time,
            publish_time: None,
            sequence: None,
            data: if sel.payload { m.content } else { &[] },
            data_buffer: Some(buffer),
            extra: &[],
        };
        if receiver.message(msg) == Flow::Stop {
            stats.stopped = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    match walked {
        Ok(()) => Ok(stats),
        Err((pos, message)) => Err(body_error(ctx, body_offset, pos, compress, message)),
    }
}

fn body_error(
    ctx: &ErrorContext,
    body_offset: u64,
    pos: usize,
    compress: i32,
    message: String,
) -> Error {
    let offset = body_offset + pos as u64;
    if compress != 0 {
        // No Apollo writer compresses bodies (the field is declared only);
        // a body that does not parse in such a file may be compressed.
        return ctx.unsupported(
            offset,
            format!(
                "chunk body at byte {body_offset} does not parse as a plain ChunkBody ({message}); the header declares compress = {} and no Apollo reader or writer defines how bodies are compressed",
                compress_name(compress)
            ),
        );
    }
    ctx.corrupt(
        offset,
        format!("inside the chunk body at byte {body_offset}: {message}"),
    )
}
