//! CARLA's `show_recorder_file_info` text (`CarlaRecorderQuery::QueryInfo`),
//! reproduced byte for byte (dates in UTC).

use std::fmt::Write;

use crate::error::{ErrorContext, Result};
use crate::io::{ReadAt, SequentialReader};

use super::decode::{self, Bone, Cur, FrameStart, PhysicsControl};
use super::fmt::{date_x_x, write_g};
use super::index::{self, CarlaIndex, Header, HeaderError, PACKET_HEADER};
use super::layout::{Kind, Layout};

/// Appends `(x, y, z)`.
fn vec3(out: &mut String, v: [f64; 3]) {
    out.push('(');
    write_g(out, v[0]);
    out.push_str(", ");
    write_g(out, v[1]);
    out.push_str(", ");
    write_g(out, v[2]);
    out.push(')');
}

fn gs(out: &mut String, v: f64) {
    write_g(out, v);
}

/// The info text of `file`. `index` is the summary's private index when known.
pub fn info_text(file: &dyn ReadAt, index: Option<&CarlaIndex>, all: bool) -> Result<String> {
    let ctx = ErrorContext::new(file.name(), "carla", file.size());
    let head = file
        .read_upto(0, 2 + 16 + 8 + 2 + 65_535)
        .map_err(|e| ctx.io(e))?;
    let header: Header = match index::parse_header(&head) {
        Ok(h) => h,
        Err(HeaderError::BadMagic(_)) => return Ok("File is not a CARLA recorder\n".into()),
        Err(HeaderError::Truncated) => {
            return Err(ctx.truncated(0, "the info header is cut short"));
        }
    };
    let owned;
    let layout: Layout = match index {
        Some(i) => i.layout,
        None => {
            owned = index::read_summary(file)?;
            owned
                .private::<CarlaIndex>()
                .map(|i| i.layout)
                .unwrap_or_default()
        }
    };
    let mut out = String::new();
    let _ = writeln!(out, "Version: {}", header.version);
    let _ = writeln!(out, "Map: {}", header.map);
    let _ = writeln!(out, "Date: {}\n", date_x_x(header.date));

    let mut frame = FrameStart {
        id: 0,
        duration: 0.0,
        elapsed: 0.0,
    };
    let mut printed = false;
    let print_frame = |out: &mut String, f: &FrameStart| {
        let _ = write!(out, "Frame {} at ", f.id);
        write_g(out, f.elapsed);
        out.push_str(" seconds\n");
    };
    let size = file.size();
    let mut rd = SequentialReader::new(file, header.end);
    let f64v = layout.f64_vectors;
    let mut names = String::new();
    while rd.position() < size {
        let Some(h) = rd.take(PACKET_HEADER as usize).map_err(|e| ctx.io(e))? else {
            break;
        };
        let raw = h[0];
        let len = u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as u64;
        let body_at = rd.position();
        if body_at + len > size {
            break;
        }
        let kind = layout.kind(raw);
        let needed = match kind {
            Some(Kind::FrameStart | Kind::EventAdd | Kind::EventDel | Kind::EventParent) => true,
            Some(Kind::Collision) => true,
            Some(
                Kind::Position
                | Kind::State
                | Kind::AnimVehicle
                | Kind::AnimWalker
                | Kind::VehicleDoor
                | Kind::VehicleLight
                | Kind::SceneLight
                | Kind::Kinematics
                | Kind::BoundingBox
                | Kind::TriggerVolume
                | Kind::PlatformTime
                | Kind::PhysicsControl
                | Kind::TrafficLightTime
                | Kind::WalkerBones,
            ) => all,
            _ => false,
        };
        if !needed {
            rd.seek(body_at + len);
            continue;
        }
        let Some(body) = rd.take(len as usize).map_err(|e| ctx.io(e))? else {
            break;
        };
        let Some(kind) = kind else { continue };
        let mut c = Cur::new(body, f64v);
        if kind == Kind::FrameStart {
            if let Some(f) = FrameStart::parse(body) {
                frame = f;
            }
            if all {
                print_frame(&mut out, &frame);
            }
            printed = all;
            continue;
        }
        if kind == Kind::PlatformTime {
            if !printed {
                print_frame(&mut out, &frame);
                printed = true;
            }
            let t = c.f64().unwrap_or(0.0);
            out.push_str(" Current platform time: ");
            gs(&mut out, t);
            out.push('\n');
            continue;
        }
        let Some(total) = c.u16() else { continue };
        if total > 0 && !printed {
            print_frame(&mut out, &frame);
            printed = true;
        }
        let title = match kind {
            Kind::Position => Some("Positions"),
            Kind::State => Some("State traffic lights"),
            Kind::AnimVehicle => Some("Vehicle animations"),
            Kind::AnimWalker => Some("Walker animations"),
            Kind::VehicleDoor => Some("Vehicle door animations"),
            Kind::VehicleLight => Some("Vehicle light animations"),
            Kind::SceneLight => Some("Scene light changes"),
            Kind::Kinematics => Some("Dynamic actors"),
            Kind::BoundingBox => Some("Actor bounding boxes"),
            Kind::TriggerVolume => Some("Actor trigger volumes"),
            Kind::PhysicsControl => Some("Physics Control events"),
            Kind::TrafficLightTime => Some("Traffic Light time events"),
            Kind::WalkerBones => Some("Walkers Bones"),
            _ => None,
        };
        if let Some(t) = title {
            let _ = writeln!(out, " {t}: {total}");
        }
        for _ in 0..total {
            if record(&mut out, kind, &mut c, &layout, &mut names).is_none() {
                break;
            }
        }
        if kind == Kind::WalkerBones {
            out.push('\n');
        }
    }
    let _ = write!(out, "\nFrames: {}\nDuration: ", frame.id);
    write_g(&mut out, frame.elapsed);
    out.push_str(" seconds\n");
    Ok(out)
}

/// Prints one record of `kind`; `None` when the packet ends early.
fn record(
    out: &mut String,
    kind: Kind,
    c: &mut Cur<'_>,
    layout: &Layout,
    names: &mut String,
) -> Option<()> {
    match kind {
        Kind::EventAdd => {
            let a = decode::EventAdd::parse(c)?;
            let _ = write!(
                out,
                " Create {}: {} ({}) at ",
                a.id,
                decode::text(a.blueprint),
                a.actor_type
            );
            vec3(out, a.location);
            out.push('\n');
            for (_, k, v) in &a.attributes {
                let _ = writeln!(out, "  {} = {}", decode::text(k), decode::text(v));
            }
        }
        Kind::EventDel => {
            let _ = writeln!(out, " Destroy {}", c.u32()?);
        }
        Kind::EventParent => {
            let (a, b) = (c.u32()?, c.u32()?);
            let _ = writeln!(out, " Parenting {a} with {b} (parent)");
        }
        Kind::Collision => {
            let (id, a1, a2, h1, h2) = (c.u32()?, c.u32()?, c.u32()?, c.bool()?, c.bool()?);
            let _ = write!(out, " Collision id {id} between {a1}");
            if h1 {
                out.push_str(" (hero) ");
            }
            let _ = write!(out, " with {a2}");
            if h2 {
                out.push_str(" (hero) ");
            }
            out.push('\n');
        }
        Kind::Position => {
            let (id, loc, rot) = (c.u32()?, c.vec3()?, c.vec3()?);
            let _ = write!(out, "  Id: {id} Location: ");
            vec3(out, loc);
            out.push_str(if layout.query_colons() {
                " Rotation: "
            } else {
                " Rotation "
            });
            vec3(out, rot);
            out.push('\n');
        }
        Kind::State => {
            let (id, frozen, t, s) = (c.u32()?, c.bool()?, c.f32()?, c.u8()?);
            let _ = write!(
                out,
                "  Id: {id} state: {} frozen: {} elapsedTime: ",
                char::from(0x30u8.wrapping_add(s)),
                u8::from(frozen)
            );
            gs(out, f64::from(t));
            out.push('\n');
        }
        Kind::AnimVehicle => {
            let (id, st, th, br, hb, gear) =
                (c.u32()?, c.f32()?, c.f32()?, c.f32()?, c.bool()?, c.i32()?);
            let _ = write!(out, "  Id: {id} Steering: ");
            gs(out, f64::from(st));
            out.push_str(" Throttle: ");
            gs(out, f64::from(th));
            out.push_str(if layout.query_colons() {
                " Brake: "
            } else {
                " Brake "
            });
            gs(out, f64::from(br));
            let _ = writeln!(out, " Handbrake: {} Gear: {gear}", u8::from(hb));
        }
        Kind::AnimWalker => {
            let (id, sp) = (c.u32()?, c.f32()?);
            let _ = write!(out, "  Id: {id} speed: ");
            gs(out, f64::from(sp));
            out.push('\n');
        }
        Kind::VehicleDoor => {
            let (id, door, _open) = (c.u32()?, c.u8()?, c.u8()?);
            let _ = write!(out, "  Id: {id}\n  Doors opened: ");
            if let Some(n) = decode::door_name(door) {
                let _ = writeln!(out, " {n} ");
            }
        }
        Kind::VehicleLight => {
            let (id, st) = (c.u32()?, c.u32()?);
            decode::light_names(st, names);
            if names.is_empty() {
                let _ = writeln!(out, "  Id: {id} None");
            } else {
                let _ = writeln!(out, "  Id: {id} {names}");
            }
        }
        Kind::SceneLight => {
            let (id, inten) = (c.i32()?, c.f32()?);
            let (r, g, b, _a) = (c.f32()?, c.f32()?, c.f32()?, c.f32()?);
            let (on, _group) = (c.bool()?, c.u8()?);
            let _ = write!(
                out,
                "  Id: {id} enabled: {} intensity: ",
                if on { "True" } else { "False" }
            );
            gs(out, f64::from(inten));
            out.push_str(" RGB_color: ");
            vec3(out, [f64::from(r), f64::from(g), f64::from(b)]);
            out.push('\n');
        }
        Kind::Kinematics => {
            let (id, lin, ang) = (c.u32()?, c.vec3()?, c.vec3()?);
            let _ = write!(out, "  Id: {id} linear_velocity: ");
            vec3(out, lin);
            out.push_str(" angular_velocity: ");
            vec3(out, ang);
            out.push('\n');
        }
        Kind::BoundingBox | Kind::TriggerVolume => {
            let (id, o, e) = (c.u32()?, c.vec3()?, c.vec3()?);
            let _ = write!(out, "  Id: {id} origin: ");
            vec3(out, o);
            out.push_str(" extension: ");
            vec3(out, e);
            out.push('\n');
        }
        Kind::TrafficLightTime => {
            let (id, gt, yt, rt) = (c.u32()?, c.f32()?, c.f32()?, c.f32()?);
            let _ = write!(out, "  Id: {id} green_time: ");
            gs(out, f64::from(gt));
            out.push_str(" yellow_time: ");
            gs(out, f64::from(yt));
            out.push_str(" red_time: ");
            gs(out, f64::from(rt));
            out.push('\n');
        }
        Kind::PhysicsControl => {
            let pc = PhysicsControl::parse(c, layout.wheel_physics_bytes)?;
            physics(out, &pc);
        }
        Kind::WalkerBones => {
            let id = c.u32()?;
            let n = c.u16()?;
            let _ = writeln!(out, "  Id: {id}");
            for _ in 0..n {
                let b = Bone::parse(c)?;
                let _ = write!(out, "     Bone: \"{}\" relative: Loc", decode::text(b.name));
                vec3(out, b.location);
                out.push_str(" Rot");
                vec3(out, b.rotation);
                out.push('\n');
            }
        }
        _ => return None,
    }
    Some(())
}

fn physics(out: &mut String, pc: &PhysicsControl) {
    let f = |v: f32| super::fmt::g(f64::from(v));
    let _ = writeln!(out, "  Id: {}", pc.id);
    let _ = writeln!(out, "   max_rpm = {}", f(pc.engine[0]));
    let _ = writeln!(out, "   MOI = {}", f(pc.engine[1]));
    let _ = writeln!(out, "   damping_rate_full_throttle = {}", f(pc.engine[2]));
    let _ = writeln!(
        out,
        "   damping_rate_zero_throttle_clutch_engaged = {}",
        f(pc.engine[3])
    );
    let _ = writeln!(
        out,
        "   damping_rate_zero_throttle_clutch_disengaged = {}",
        f(pc.engine[4])
    );
    let _ = writeln!(
        out,
        "   use_gear_auto_box = {}",
        if pc.use_gear_autobox { "true" } else { "false" }
    );
    out.push_str("   gear_switch_time = 0.5\n");
    let _ = writeln!(out, "   clutch_strength = {}", f(pc.misc[0]));
    let _ = writeln!(out, "   final_ratio = {}", f(pc.misc[1]));
    let _ = writeln!(out, "   mass = {}", f(pc.misc[2]));
    let _ = writeln!(out, "   drag_coefficient = {}", f(pc.misc[3]));
    out.push_str("   center_of_mass = ");
    vec3(out, pc.center_of_mass);
    out.push('\n');
    out.push_str("   torque_curve =");
    for [x, y] in &pc.torque_curve {
        let _ = write!(out, " ({}, {})", f(*x), f(*y));
    }
    out.push('\n');
    out.push_str("   steering_curve =");
    for [x, y] in &pc.steering_curve {
        let _ = write!(out, " ({}, {})", f(*x), f(*y));
    }
    out.push('\n');
    out.push_str("   forward_gears:\n");
    for (i, [r, d, u]) in pc.forward_gears.iter().enumerate() {
        let _ = writeln!(
            out,
            "    gear {i}: ratio {} down_ratio {} up_ratio {}",
            f(*r),
            f(*d),
            f(*u)
        );
    }
    out.push_str("   wheels:\n");
    for (i, w) in pc.wheels.iter().enumerate() {
        let _ = write!(
            out,
            "    wheel {i}: tire_friction {} damping_rate {} max_steer_angle {} radius {} max_brake_torque {} max_handbrake_torque {} position ",
            f(w.tire_friction),
            f(w.damping_rate),
            f(w.max_steer_angle),
            f(w.radius),
            f(w.max_brake_torque),
            f(w.max_handbrake_torque)
        );
        vec3(out, w.position);
        out.push('\n');
    }
}
