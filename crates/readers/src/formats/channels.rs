//! Channel resolution while a chunk is read, shared by every format reader.
//!
//! A chunk's messages name their channel by id. The id is looked up in the
//! summary's channels first; then in channel definitions met while reading the
//! chunk (MCAP Channel records, bag connection records), the first real one
//! winning; an id defined nowhere gets the format's synthetic stand-in, so its
//! messages are still delivered. The selection's topic verdict is cached per id,
//! and the last lookup is remembered because messages of one channel come in runs.

use std::collections::HashMap;

use crate::model::{Channel, Selection, Summary};

/// Where a resolved channel lives.
#[derive(Debug, Clone, Copy)]
enum ChanRef<'s> {
    Summary(&'s Channel),
    Local(usize),
}

/// A resolved id with its topic verdict.
#[derive(Debug, Clone, Copy)]
struct Slot<'s> {
    chan: ChanRef<'s>,
    wanted: bool,
    /// A stand-in for an id with no definition (yet).
    synthetic: bool,
}

/// Maps channel ids to channels for the duration of one chunk read.
pub(crate) struct ChannelResolver<'s> {
    summary: &'s Summary,
    sel: &'s Selection,
    synthetic: fn(u64) -> Channel,
    local: Vec<Channel>,
    slots: Slots<'s>,
    last: Option<(u64, Slot<'s>)>,
}

/// Ids below this are kept in a vector indexed by id: writers number their
/// channels from 0 or 1, and a lookup per message then costs no hashing.
const DENSE_IDS: u64 = 1024;

/// The resolved ids: small ones by index, the others in a map.
#[derive(Default)]
struct Slots<'s> {
    dense: Vec<Option<Slot<'s>>>,
    sparse: HashMap<u64, Slot<'s>>,
}

impl<'s> Slots<'s> {
    fn get(&self, id: u64) -> Option<Slot<'s>> {
        match id < DENSE_IDS {
            true => self.dense.get(id as usize).copied().flatten(),
            false => self.sparse.get(&id).copied(),
        }
    }

    fn insert(&mut self, id: u64, slot: Slot<'s>) {
        if id < DENSE_IDS {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense[i] = Some(slot);
        } else {
            self.sparse.insert(id, slot);
        }
    }
}

impl<'s> ChannelResolver<'s> {
    /// A resolver over `summary`'s channels under `sel`; `synthetic` makes the
    /// stand-in channel of an id that nothing defines.
    pub(crate) fn new(
        summary: &'s Summary,
        sel: &'s Selection,
        synthetic: fn(u64) -> Channel,
    ) -> Self {
        Self {
            summary,
            sel,
            synthetic,
            local: Vec::new(),
            slots: Slots::default(),
            last: None,
        }
    }

    /// Whether `id` already has a real definition (in the summary or met while reading),
    /// so that a new definition would be ignored.
    pub(crate) fn is_defined(&self, id: u64) -> bool {
        self.summary.channels.contains_key(&id) || self.slots.get(id).is_some_and(|s| !s.synthetic)
    }

    /// A channel definition met while reading. The summary's definition and the
    /// first real definition win; a synthetic stand-in is replaced.
    pub(crate) fn define(&mut self, channel: Channel) {
        let id = channel.id;
        if self.is_defined(id) {
            return;
        }
        let wanted = self.sel.wants_topic(&channel.topic);
        self.local.push(channel);
        self.slots.insert(
            id,
            Slot {
                chan: ChanRef::Local(self.local.len() - 1),
                wanted,
                synthetic: false,
            },
        );
        self.last = None;
    }

    fn slot(&mut self, id: u64) -> Slot<'s> {
        if let Some((last, slot)) = self.last
            && last == id
        {
            return slot;
        }
        let slot = match self.slots.get(id) {
            Some(s) => s,
            None => {
                let slot = match self.summary.channels.get(&id) {
                    Some(ch) => Slot {
                        chan: ChanRef::Summary(ch),
                        wanted: self.sel.wants_topic(&ch.topic),
                        synthetic: false,
                    },
                    None => {
                        let ch = (self.synthetic)(id);
                        let wanted = self.sel.wants_topic(&ch.topic);
                        self.local.push(ch);
                        Slot {
                            chan: ChanRef::Local(self.local.len() - 1),
                            wanted,
                            synthetic: true,
                        }
                    }
                };
                self.slots.insert(id, slot);
                slot
            }
        };
        self.last = Some((id, slot));
        slot
    }

    /// Whether messages of channel `id` pass the selection's topic filter.
    pub(crate) fn wants(&mut self, id: u64) -> bool {
        self.slot(id).wanted
    }

    /// The channel of `id` (resolving it if needed).
    pub(crate) fn channel(&mut self, id: u64) -> &Channel {
        match self.slot(id).chan {
            ChanRef::Summary(ch) => ch,
            ChanRef::Local(i) => &self.local[i],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn channel(id: u64, topic: &str) -> Channel {
        Channel {
            id,
            topic: topic.into(),
            message_type: None,
            message_encoding: "x".into(),
            schema_encoding: None,
            schema: None,
            metadata: BTreeMap::new(),
        }
    }

    fn synthetic(id: u64) -> Channel {
        channel(id, "")
    }

    #[test]
    fn summary_first_then_first_real_definition_then_synthetic() {
        let mut summary = Summary::default();
        summary.channels.insert(1, channel(1, "/a"));
        let sel = Selection {
            topics: Some(["/a".to_string(), "/c".to_string()].into()),
            ..Selection::all()
        };
        let mut r = ChannelResolver::new(&summary, &sel, synthetic);
        assert!(r.wants(1));
        r.define(channel(1, "/other"));
        assert_eq!(r.channel(1).topic, "/a");
        // A message before its definition gets the stand-in, which a definition replaces.
        assert!(!r.wants(2));
        assert_eq!(r.channel(2).topic, "");
        r.define(channel(2, "/c"));
        assert!(r.wants(2));
        assert_eq!(r.channel(2).topic, "/c");
        r.define(channel(2, "/d"));
        assert_eq!(r.channel(2).topic, "/c");
    }

    #[test]
    fn small_and_large_ids_resolve_alike() {
        let summary = Summary::default();
        let sel = Selection {
            topics: Some(["/big".to_string(), "/small".to_string()].into()),
            ..Selection::all()
        };
        let mut r = ChannelResolver::new(&summary, &sel, synthetic);
        for id in [3, DENSE_IDS - 1, DENSE_IDS, u64::MAX] {
            assert!(!r.is_defined(id));
            assert!(!r.wants(id), "a stand-in until defined");
            let topic = if id < DENSE_IDS { "/small" } else { "/big" };
            r.define(channel(id, topic));
            assert!(r.is_defined(id));
            assert!(r.wants(id));
            assert_eq!(r.channel(id).topic, topic);
        }
        // Interleaved lookups (the last-id shortcut missing every time) keep their answers.
        for _ in 0..3 {
            for id in [u64::MAX, 3, DENSE_IDS, DENSE_IDS - 1] {
                assert_eq!(r.channel(id).id, id);
            }
        }
        assert!(!r.is_defined(4));
    }
}
