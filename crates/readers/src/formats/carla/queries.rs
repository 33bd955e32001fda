//! CARLA's `show_recorder_collisions` and `show_recorder_actors_blocked`
//! (`CarlaRecorderQuery::QueryCollisions` / `QueryBlocked`), reproduced byte
//! for byte, upstream quirks included: EventDel erases the *last added* actor
//! instead of the deleted one, and once a collision row was printed the stream
//! stays in fixed notation with precision 0 (so the closing `Duration:` line is
//! rounded to whole seconds).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

use crate::error::{ErrorContext, Result};
use crate::io::{ReadAt, SequentialReader};

use super::decode::{self, Cur, FrameStart};
use super::fmt::{date_x_x, g};
use super::index::{self, HeaderError, PACKET_HEADER};
use super::layout::{Kind, Layout};

/// The header lines, or the "not a recorder" answer.
fn header(file: &dyn ReadAt, ctx: &ErrorContext) -> Result<Result<(String, u64), String>> {
    let head = file
        .read_upto(0, 2 + 16 + 8 + 2 + 65_535)
        .map_err(|e| ctx.io(e))?;
    match index::parse_header(&head) {
        Ok(h) => Ok(Ok((
            format!(
                "Version: {}\nMap: {}\nDate: {}\n\n",
                h.version,
                h.map,
                date_x_x(h.date)
            ),
            h.end,
        ))),
        Err(HeaderError::BadMagic(_)) => Ok(Err("File is not a CARLA recorder\n".into())),
        Err(HeaderError::Truncated) => Err(ctx.truncated(0, "the info header is cut short")),
    }
}

/// Calls `f` with every whole packet of a kind in `kinds` (bodies read), in file order.
fn walk(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    start: u64,
    layout: &Layout,
    kinds: &[Kind],
    f: &mut dyn FnMut(Kind, &[u8]),
) -> Result<()> {
    let size = file.size();
    let mut rd = SequentialReader::new(file, start);
    while rd.position() < size {
        let Some(h) = rd.take(PACKET_HEADER as usize).map_err(|e| ctx.io(e))? else {
            break;
        };
        let raw = h[0];
        let len = u64::from(u32::from_le_bytes([h[1], h[2], h[3], h[4]]));
        let body_at = rd.position();
        if body_at + len > size {
            break;
        }
        match layout.kind(raw).filter(|k| kinds.contains(k)) {
            Some(kind) => {
                let Some(body) = rd.take(len as usize).map_err(|e| ctx.io(e))? else {
                    break;
                };
                f(kind, body);
            }
            None => rd.seek(body_at + len),
        }
    }
    Ok(())
}

fn layout_of(file: &dyn ReadAt, layout: Option<Layout>) -> Result<Layout> {
    match layout {
        Some(l) => Ok(l),
        None => Ok(index::read_summary(file)?
            .private::<index::CarlaIndex>()
            .map(|i| i.layout)
            .unwrap_or_default()),
    }
}

/// Category letter of an actor type (`"ovwtha"[type]`; `?` past the end).
fn category(ty: u8) -> char {
    b"ovwtha".get(ty as usize).map_or('?', |&c| char::from(c))
}

/// `show_recorder_collisions(name, cat1, cat2)`; categories `o v w t h a`.
pub fn collisions_text(
    file: &dyn ReadAt,
    layout: Option<Layout>,
    cat1: char,
    cat2: char,
) -> Result<String> {
    let ctx = ErrorContext::new(file.name(), "carla", file.size());
    let (mut out, start) = match header(file, &ctx)? {
        Ok(h) => h,
        Err(text) => return Ok(text),
    };
    let layout = layout_of(file, layout)?;
    let _ = writeln!(
        out,
        "{:>8} {:>6} {:>6} {:<35} {:>6} {:<35}",
        "Time", "Types", "Id", "Actor 1", "Id", "Actor 2"
    );
    let mut actors: HashMap<u32, (u8, String)> = HashMap::new();
    let mut last_added = 0u32;
    let mut frame = FrameStart {
        id: 0,
        duration: 0.0,
        elapsed: 0.0,
    };
    let mut old: HashSet<(u32, u32)> = HashSet::new();
    let mut new: HashSet<(u32, u32)> = HashSet::new();
    let mut fixed = false;
    let kinds = [
        Kind::FrameStart,
        Kind::EventAdd,
        Kind::EventDel,
        Kind::Collision,
    ];
    walk(file, &ctx, start, &layout, &kinds, &mut |kind, body| {
        let mut c = Cur::new(body, layout.f64_vectors);
        match kind {
            Kind::FrameStart => {
                if let Some(f) = FrameStart::parse(body) {
                    frame = f;
                }
                old = std::mem::take(&mut new);
            }
            Kind::EventAdd => {
                let n = c.u16().unwrap_or(0);
                for _ in 0..n {
                    let Some(a) = decode::EventAdd::parse(&mut c) else {
                        break;
                    };
                    last_added = a.id;
                    actors.insert(a.id, (a.actor_type, decode::text(a.blueprint).into_owned()));
                }
            }
            Kind::EventDel => {
                let n = c.u16().unwrap_or(0);
                for _ in 0..n {
                    if c.u32().is_none() {
                        break;
                    }
                    // Upstream bug kept on purpose: the last added id is erased.
                    actors.remove(&last_added);
                }
            }
            Kind::Collision => {
                let n = c.u16().unwrap_or(0);
                for _ in 0..n {
                    let (Some(_id), Some(a1), Some(a2), Some(h1), Some(h2)) =
                        (c.u32(), c.u32(), c.u32(), c.bool(), c.bool())
                    else {
                        break;
                    };
                    let mut cat = |a: u32| {
                        if a == u32::MAX {
                            'o'
                        } else {
                            category(actors.entry(a).or_default().0)
                        }
                    };
                    let (t1, t2) = (cat(a1), cat(a2));
                    let ok1 = cat1 == 'a' || cat1 == t1 || (cat1 == 'h' && h1);
                    let ok2 = cat2 == 'a' || cat2 == t2 || (cat2 == 'h' && h2);
                    if !(ok1 && ok2) {
                        continue;
                    }
                    if !old.contains(&(a1, a2)) {
                        let n1 = actors.entry(a1).or_default().1.clone();
                        let n2 = actors.entry(a2).or_default().1.clone();
                        let _ = writeln!(
                            out,
                            "{:>8.0}   {t1} {t2}  {a1:>6} {n1:<35} {a2:>6} {n2:<35}",
                            frame.elapsed
                        );
                        fixed = true;
                    }
                    new.insert((a1, a2));
                }
            }
            _ => {}
        }
    })?;
    let duration = if fixed {
        format!("{:.0}", frame.elapsed)
    } else {
        g(frame.elapsed)
    };
    let _ = write!(
        out,
        "\nFrames: {}\nDuration: {duration} seconds\n",
        frame.id
    );
    Ok(out)
}

/// `show_recorder_actors_blocked(name, min_time, min_distance)` (seconds, cm).
pub fn blocked_text(
    file: &dyn ReadAt,
    layout: Option<Layout>,
    min_time: f64,
    min_distance: f64,
) -> Result<String> {
    let ctx = ErrorContext::new(file.name(), "carla", file.size());
    let (mut out, start) = match header(file, &ctx)? {
        Ok(h) => h,
        Err(text) => return Ok(text),
    };
    let layout = layout_of(file, layout)?;
    let _ = writeln!(
        out,
        "{:>8} {:>6} {:<35} {:>10}",
        "Time", "Id", "Actor", "Duration"
    );
    #[derive(Default)]
    struct Info {
        name: String,
        last: [f32; 3],
        time: f64,
        duration: f64,
    }
    let mut actors: BTreeMap<u32, Info> = BTreeMap::new();
    let mut last_added = 0u32;
    let mut frame = FrameStart {
        id: 0,
        duration: 0.0,
        elapsed: 0.0,
    };
    // (duration, insertion order) -> row; longest first, ties in insertion order.
    let mut results: Vec<(f64, String)> = Vec::new();
    let row = |id: u32, a: &Info| {
        format!(
            "{:>8.0} {id:>6} {:<35} {:>10.0}\n",
            a.time, a.name, a.duration
        )
    };
    let kinds = [
        Kind::FrameStart,
        Kind::EventAdd,
        Kind::EventDel,
        Kind::Position,
    ];
    walk(file, &ctx, start, &layout, &kinds, &mut |kind, body| {
        let mut c = Cur::new(body, layout.f64_vectors);
        match kind {
            Kind::FrameStart => {
                if let Some(f) = FrameStart::parse(body) {
                    frame = f;
                }
            }
            Kind::EventAdd => {
                let n = c.u16().unwrap_or(0);
                for _ in 0..n {
                    let Some(a) = decode::EventAdd::parse(&mut c) else {
                        break;
                    };
                    last_added = a.id;
                    actors.insert(
                        a.id,
                        Info {
                            name: decode::text(a.blueprint).into_owned(),
                            ..Info::default()
                        },
                    );
                }
            }
            Kind::EventDel => {
                let n = c.u16().unwrap_or(0);
                for _ in 0..n {
                    if c.u32().is_none() {
                        break;
                    }
                    actors.remove(&last_added);
                }
            }
            Kind::Position => {
                let n = c.u16().unwrap_or(0);
                for _ in 0..n {
                    let (Some(id), Some(l), Some(_)) = (c.u32(), c.vec3(), c.vec3()) else {
                        break;
                    };
                    let l = [l[0] as f32, l[1] as f32, l[2] as f32];
                    let a = actors.entry(id).or_default();
                    let d = ((a.last[0] - l[0]).powi(2)
                        + (a.last[1] - l[1]).powi(2)
                        + (a.last[2] - l[2]).powi(2))
                    .sqrt();
                    if f64::from(d) < min_distance {
                        if a.duration == 0.0 {
                            a.time = frame.elapsed;
                        }
                        a.duration += frame.duration;
                    } else {
                        if a.duration >= min_time {
                            results.push((a.duration, row(id, a)));
                        }
                        a.duration = 0.0;
                        a.last = l;
                    }
                }
            }
            _ => {}
        }
    })?;
    for (id, a) in &actors {
        if a.duration >= min_time {
            results.push((a.duration, row(*id, a)));
        }
    }
    // Stable sort: longest first, ties keep their order.
    results.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, r) in &results {
        out.push_str(r);
    }
    let _ = write!(
        out,
        "\nFrames: {}\nDuration: {} seconds\n",
        frame.id,
        g(frame.elapsed)
    );
    Ok(out)
}
