//! A recording's transforms, and the pose of one frame in another at a time.
//!
//! [`TransformBufferBuilder`] takes transforms in log order; a frame's
//! parent and its pose there come from them as tf2 keeps them:
//! - a leading `/` of a frame name is dropped (`/map` is `map`), as tf2 does;
//! - a static transform holds at every time; a later static transform of the
//!   same child replaces it; a frame with a static transform ignores dynamic
//!   ones;
//! - a dynamic link keeps its transforms in stamp order (out-of-order
//!   arrival is fine); a second transform with a stamp already held is
//!   ignored, as tf2 ignores repeated data;
//! - transforms with an empty frame name, a frame as its own parent, a
//!   number that is not finite or a rotation of zero length are rejected
//!   ([`Rejected`]); rotations are normalised.
//!
//! [`TransformBuffer::lookup`] walks from both frames up to their common
//! ancestor, each dynamic link interpolated between the two stamps around
//! the time asked (exactly at a stamp, that transform); when those two name
//! different parents, the earlier holds, as in tf2.

use std::collections::HashMap;

use crate::error::LookupError;
use crate::math::Pose;

/// A frame of one buffer, by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameId(u32);

/// Why a transform was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// The parent or the child frame name is empty.
    EmptyFrame,
    /// The child frame is its own parent.
    SelfTransform,
    /// A translation or rotation component is NaN or infinite.
    NotFinite,
    /// The rotation has zero length.
    NoRotation,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Rejected::EmptyFrame => "a frame name is empty",
            Rejected::SelfTransform => "the frame is its own parent",
            Rejected::NotFinite => "a number is not finite",
            Rejected::NoRotation => "the rotation has zero length",
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    stamp: i64,
    parent: FrameId,
    pose: Pose,
}

#[derive(Debug, Clone)]
enum Link {
    /// No transform has this frame as its child.
    Root,
    Static {
        parent: FrameId,
        pose: Pose,
    },
    /// In stamp order, at least one.
    Dynamic(Vec<Sample>),
}

/// Frame names and their numbers.
#[derive(Debug, Default, Clone)]
struct Frames {
    ids: HashMap<String, FrameId>,
    names: Vec<String>,
}

impl Frames {
    fn id(&mut self, name: &str) -> FrameId {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = FrameId(self.names.len() as u32);
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }
}

/// A frame name as tf2 keys it: without one leading `/`.
fn key(name: &str) -> &str {
    name.strip_prefix('/').unwrap_or(name)
}

/// Collects transforms in log order; [`build`](Self::build) makes the
/// buffer.
#[derive(Debug, Default)]
pub struct TransformBufferBuilder {
    frames: Frames,
    statics: Vec<Option<(FrameId, Pose)>>,
    samples: Vec<Vec<Sample>>,
    taken: usize,
}

impl TransformBufferBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a transform: `pose` is `child` in `parent` at `stamp`
    /// (nanoseconds), static or not.
    pub fn insert(
        &mut self,
        parent: &str,
        child: &str,
        stamp: i64,
        pose: Pose,
        is_static: bool,
    ) -> Result<(), Rejected> {
        let (parent, child) = (key(parent), key(child));
        if parent.is_empty() || child.is_empty() {
            return Err(Rejected::EmptyFrame);
        }
        if parent == child {
            return Err(Rejected::SelfTransform);
        }
        if !pose.translation.is_finite() || !pose.rotation.is_finite() {
            return Err(Rejected::NotFinite);
        }
        let rotation = pose.rotation.normalized().ok_or(Rejected::NoRotation)?;
        let pose = Pose {
            translation: pose.translation,
            rotation,
        };
        let parent = self.frames.id(parent);
        let child = self.frames.id(child);
        let n = self.frames.names.len();
        self.statics.resize(n, None);
        self.samples.resize_with(n, Vec::new);
        let c = child.0 as usize;
        if is_static {
            self.statics[c] = Some((parent, pose));
        } else {
            self.samples[c].push(Sample {
                stamp,
                parent,
                pose,
            });
        }
        self.taken += 1;
        Ok(())
    }

    /// How many transforms were taken.
    pub fn len(&self) -> usize {
        self.taken
    }

    /// Whether none was taken.
    pub fn is_empty(&self) -> bool {
        self.taken == 0
    }

    /// The buffer of every transform taken.
    pub fn build(self) -> TransformBuffer {
        let links = self
            .statics
            .into_iter()
            .zip(self.samples)
            .map(|(fixed, mut samples)| match fixed {
                Some((parent, pose)) => Link::Static { parent, pose },
                None if samples.is_empty() => Link::Root,
                None => {
                    // Stable: among equal stamps the first in log order stays.
                    samples.sort_by_key(|s| s.stamp);
                    samples.dedup_by_key(|s| s.stamp);
                    Link::Dynamic(samples)
                }
            })
            .collect();
        TransformBuffer {
            frames: self.frames,
            links,
            transforms: self.taken,
        }
    }
}

/// A recording's transforms, ready for lookups.
#[derive(Debug, Clone)]
pub struct TransformBuffer {
    frames: Frames,
    /// By child frame number.
    links: Vec<Link>,
    transforms: usize,
}

impl TransformBuffer {
    /// The number of a frame (a leading `/` ignored), if any transform names it.
    pub fn frame(&self, name: &str) -> Option<FrameId> {
        self.frames.ids.get(key(name)).copied()
    }

    /// A frame's name (without a leading `/`).
    pub fn name(&self, id: FrameId) -> &str {
        &self.frames.names[id.0 as usize]
    }

    /// Every frame's name, in order of first appearance.
    pub fn frames(&self) -> impl Iterator<Item = &str> {
        self.frames.names.iter().map(String::as_str)
    }

    /// How many transforms the buffer was built from.
    pub fn transforms(&self) -> usize {
        self.transforms
    }

    /// The pose of `source` in `target` at `time` (nanoseconds).
    pub fn lookup(&self, target: &str, source: &str, time: i64) -> Result<Pose, LookupError> {
        let known = |name: &str| {
            self.frame(name).ok_or_else(|| LookupError::UnknownFrame {
                frame: name.to_string(),
            })
        };
        let (target, source) = (known(target)?, known(source)?);
        self.lookup_ids(target, source, time, &mut Vec::new())
    }

    /// [`lookup`](Self::lookup) by frame numbers, with a scratch list to
    /// reuse across calls.
    pub fn lookup_ids(
        &self,
        target: FrameId,
        source: FrameId,
        time: i64,
        scratch: &mut Vec<(FrameId, Pose)>,
    ) -> Result<Pose, LookupError> {
        if target == source {
            return Ok(Pose::IDENTITY);
        }
        let steps = self.links.len() + 1;
        // The source frame in each of its ancestors, up to the root or to a
        // link with no data at `time` (the frames meet below it, or the
        // lookup fails with that link's error).
        scratch.clear();
        scratch.push((source, Pose::IDENTITY));
        let (mut frame, mut in_frame) = (source, Pose::IDENTITY);
        let mut stopped = None;
        let mut ended = false;
        for _ in 0..steps {
            match self.link_at(frame, time) {
                Err(e) => {
                    stopped = Some(e);
                    ended = true;
                    break;
                }
                Ok(None) => {
                    ended = true;
                    break;
                }
                Ok(Some((parent, pose))) => {
                    in_frame = pose.then_in(in_frame);
                    frame = parent;
                    if frame == target {
                        return Ok(in_frame);
                    }
                    scratch.push((frame, in_frame));
                }
            }
        }
        if !ended {
            return Err(self.looped(frame, time));
        }
        let source_top = frame;
        // Up from the target until a frame of the source's chain.
        let (mut frame, mut target_in_frame) = (target, Pose::IDENTITY);
        for _ in 0..steps {
            if let Some((_, source_in_frame)) = scratch.iter().find(|(f, _)| *f == frame) {
                return Ok(target_in_frame.inverse().then_in(*source_in_frame));
            }
            match self.link_at(frame, time)? {
                None => {
                    return Err(stopped.unwrap_or_else(|| LookupError::NotConnected {
                        target: self.name(target).to_string(),
                        source_frame: self.name(source).to_string(),
                        source_root: self.name(source_top).to_string(),
                        target_root: self.name(frame).to_string(),
                        time,
                    }));
                }
                Some((parent, pose)) => {
                    target_in_frame = pose.then_in(target_in_frame);
                    frame = parent;
                }
            }
        }
        Err(self.looped(frame, time))
    }

    fn looped(&self, frame: FrameId, time: i64) -> LookupError {
        LookupError::Loop {
            frame: self.name(frame).to_string(),
            time,
        }
    }

    /// `child`'s parent and its pose there at `time`, or `None` at a root.
    fn link_at(&self, child: FrameId, time: i64) -> Result<Option<(FrameId, Pose)>, LookupError> {
        let samples = match &self.links[child.0 as usize] {
            Link::Root => return Ok(None),
            Link::Static { parent, pose } => return Ok(Some((*parent, *pose))),
            Link::Dynamic(samples) => samples,
        };
        let i = samples.partition_point(|s| s.stamp < time);
        if let Some(s) = samples.get(i).filter(|s| s.stamp == time) {
            return Ok(Some((s.parent, s.pose)));
        }
        if i == 0 || i == samples.len() {
            let (first, last) = (samples[0], samples[samples.len() - 1]);
            return Err(LookupError::OutsideData {
                parent: self.name(last.parent).to_string(),
                child: self.name(child).to_string(),
                time,
                first: first.stamp,
                last: last.stamp,
            });
        }
        let (a, b) = (samples[i - 1], samples[i]);
        if a.parent != b.parent {
            return Ok(Some((a.parent, a.pose)));
        }
        let t = (i128::from(time) - i128::from(a.stamp)) as f64
            / (i128::from(b.stamp) - i128::from(a.stamp)) as f64;
        Ok(Some((a.parent, a.pose.interpolate(b.pose, t))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{Quat, Vec3};

    fn at(x: f64, y: f64, z: f64) -> Pose {
        Pose {
            translation: Vec3::new(x, y, z),
            rotation: Quat::IDENTITY,
        }
    }

    fn yawed(x: f64, yaw: f64) -> Pose {
        Pose {
            translation: Vec3::new(x, 0.0, 0.0),
            rotation: Quat::new(0.0, 0.0, (yaw / 2.0).sin(), (yaw / 2.0).cos()),
        }
    }

    fn close(p: Pose, x: f64, y: f64, z: f64) -> bool {
        let t = p.translation;
        (t.x - x).abs() < 1e-12 && (t.y - y).abs() < 1e-12 && (t.z - z).abs() < 1e-12
    }

    /// map -> odom (dynamic) -> base_link (dynamic) -> laser (static);
    /// map -> tree (static).
    fn robot() -> TransformBuffer {
        let mut b = TransformBufferBuilder::new();
        b.insert("map", "odom", 10, at(1.0, 0.0, 0.0), false)
            .unwrap();
        b.insert("map", "odom", 30, at(3.0, 0.0, 0.0), false)
            .unwrap();
        // Out of order, and a repeated stamp that is ignored.
        b.insert(
            "odom",
            "base_link",
            20,
            yawed(0.0, std::f64::consts::PI),
            false,
        )
        .unwrap();
        b.insert("odom", "base_link", 0, yawed(0.0, 0.0), false)
            .unwrap();
        b.insert("odom", "base_link", 20, at(99.0, 0.0, 0.0), false)
            .unwrap();
        b.insert("/base_link", "laser", 0, at(0.5, 0.0, 0.2), true)
            .unwrap();
        b.insert("map", "tree", 0, at(0.0, 5.0, 0.0), true).unwrap();
        b.build()
    }

    #[test]
    fn chains_interpolate_and_invert() {
        let b = robot();
        // At 20: odom at x=2 in map, base_link turned by pi, laser 0.5 ahead.
        let laser = b.lookup("map", "laser", 20).unwrap();
        assert!(close(laser, 1.5, 0.0, 0.2), "{laser:?}");
        // Half way (10) base_link has turned by pi/2: laser at +y.
        let laser = b.lookup("/map", "laser", 10).unwrap();
        assert!(close(laser, 1.0, 0.5, 0.2), "{laser:?}");
        // The other direction is the inverse.
        let back = b.lookup("laser", "map", 20).unwrap();
        assert!(close(
            back.then_in(b.lookup("map", "laser", 20).unwrap()),
            0.0,
            0.0,
            0.0
        ));
        // Through the common ancestor: the tree seen from the laser.
        let tree = b.lookup("laser", "tree", 20).unwrap();
        let want = b
            .lookup("laser", "map", 20)
            .unwrap()
            .apply(Vec3::new(0.0, 5.0, 0.0));
        assert!(close(tree, want.x, want.y, want.z));
        assert_eq!(b.lookup("tree", "tree", 99).unwrap(), Pose::IDENTITY);
    }

    #[test]
    fn links_above_the_meeting_frame_need_no_data() {
        let b = robot();
        // At 5 map -> odom has no data; laser and base_link meet below it.
        let laser = b.lookup("base_link", "laser", 5).unwrap();
        assert!(close(laser, 0.5, 0.0, 0.2));
        let base = b.lookup("laser", "odom", 5).unwrap();
        assert!(close(base, -0.5, 0.0, -0.2), "{base:?}");
    }

    #[test]
    fn what_has_no_answer() {
        let b = robot();
        assert!(matches!(
            b.lookup("map", "laser", 5),
            Err(LookupError::OutsideData { ref child, first: 10, last: 30, .. }) if child == "odom"
        ));
        assert!(matches!(
            b.lookup("map", "nowhere", 20),
            Err(LookupError::UnknownFrame { .. })
        ));
        let mut island = TransformBufferBuilder::new();
        island.insert("a", "b", 0, at(1.0, 0.0, 0.0), true).unwrap();
        island.insert("c", "d", 0, at(1.0, 0.0, 0.0), true).unwrap();
        let err = island.build().lookup("b", "d", 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "frames \"b\" and \"d\" are not connected at 0 ns: \"d\" ends at root \"c\", \"b\" at root \"a\""
        );
        let mut looped = TransformBufferBuilder::new();
        looped.insert("a", "b", 0, at(1.0, 0.0, 0.0), true).unwrap();
        looped.insert("b", "a", 0, at(1.0, 0.0, 0.0), true).unwrap();
        looped.insert("x", "y", 0, at(1.0, 0.0, 0.0), true).unwrap();
        assert!(matches!(
            looped.build().lookup("y", "a", 0),
            Err(LookupError::Loop { .. })
        ));
    }

    #[test]
    fn rejects_what_tf2_rejects() {
        let mut b = TransformBufferBuilder::new();
        let zero = Pose {
            translation: Vec3::ZERO,
            rotation: Quat::new(0.0, 0.0, 0.0, 0.0),
        };
        assert_eq!(
            b.insert("a", "a", 0, at(0.0, 0.0, 0.0), false),
            Err(Rejected::SelfTransform)
        );
        assert_eq!(
            b.insert("", "a", 0, at(0.0, 0.0, 0.0), false),
            Err(Rejected::EmptyFrame)
        );
        assert_eq!(
            b.insert("a", "b", 0, zero, false),
            Err(Rejected::NoRotation)
        );
        assert_eq!(
            b.insert("a", "b", 0, at(f64::NAN, 0.0, 0.0), false),
            Err(Rejected::NotFinite)
        );
        assert!(b.is_empty());
    }
}
