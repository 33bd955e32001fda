//! Typed tables: one row per record of a packet kind.
//!
//! Every table starts with `frame` (UInt64, recorder frame id), `elapsed`
//! (Float64, seconds since start) and `log_time` (Timestamp, header date +
//! elapsed), then the record's fields. Units are SI: positions, extents and
//! bone offsets in metres (CARLA stores centimetres; values are divided by
//! 100), rotations in degrees as (roll, pitch, yaw) in UE4's left-handed frame
//! (CARLA's own axes, not flipped), walker and bike speeds in m/s (stored
//! cm/s), times in seconds. All tables except `actors` are read chunk by chunk
//! (time-pruned); `actors` walks the event packets of the whole file.

use std::collections::HashMap;

use crate::error::{ErrorContext, Result};
use crate::io::{ReadAt, SequentialReader};
use crate::model::{ChunkMeta, ChunkRead, Flow, Selection, Summary};
use crate::table::{ColumnDef, ColumnType, RowReceiver, ScalarType as S, TableDef, Value};

use super::chunk::{self, FrameCtx, Packet};
use super::decode::{self, Bone, Cur, FrameStart, PhysicsControl};
use super::index::{CarlaIndex, PACKET_HEADER};
use super::layout::{self, Kind, Layout};

/// Every table name.
pub const TABLES: &[&str] = &[
    "frames",
    "actors",
    "positions",
    "collisions",
    "traffic_lights",
    "vehicle_controls",
    "walker_speeds",
    "vehicle_lights",
    "scene_lights",
    "kinematics",
    "bounding_boxes",
    "trigger_volumes",
    "platform_times",
    "physics_controls",
    "traffic_light_times",
    "wheels",
    "bikers",
    "doors",
    "bones",
    "visual_times",
    "events",
];

/// The packet kind a per-record table decodes (`None` for frames and actors).
pub(crate) fn table_kind(table: &str) -> Option<Kind> {
    Some(match table {
        "positions" => Kind::Position,
        "collisions" => Kind::Collision,
        "traffic_lights" => Kind::State,
        "vehicle_controls" => Kind::AnimVehicle,
        "walker_speeds" => Kind::AnimWalker,
        "vehicle_lights" => Kind::VehicleLight,
        "scene_lights" => Kind::SceneLight,
        "kinematics" => Kind::Kinematics,
        "bounding_boxes" => Kind::BoundingBox,
        "trigger_volumes" => Kind::TriggerVolume,
        "platform_times" => Kind::PlatformTime,
        "physics_controls" => Kind::PhysicsControl,
        "traffic_light_times" => Kind::TrafficLightTime,
        "wheels" => Kind::AnimVehicleWheels,
        "bikers" => Kind::AnimBiker,
        "doors" => Kind::VehicleDoor,
        "bones" => Kind::WalkerBones,
        "visual_times" => Kind::VisualTime,
        _ => return None,
    })
}

fn c(name: &str, ty: S, doc: &str) -> ColumnDef {
    ColumnDef::new(name, ColumnType::Scalar(ty), doc)
}

fn list(name: &str, ty: S, doc: &str) -> ColumnDef {
    ColumnDef::new(name, ColumnType::List(ty), doc)
}

fn xyz(cols: &mut Vec<ColumnDef>, prefix: &str, what: &str, unit: &str) {
    for a in ["x", "y", "z"] {
        cols.push(c(
            &format!("{prefix}{a}"),
            S::Float64,
            &format!("{what} {a}, {unit}"),
        ));
    }
}

fn rpy(cols: &mut Vec<ColumnDef>, what: &str) {
    for a in ["roll", "pitch", "yaw"] {
        cols.push(c(a, S::Float64, &format!("{what} {a}, degrees")));
    }
}

/// The definition of `table`, or `None` for an unknown name.
pub(crate) fn table_def(table: &str) -> Option<TableDef> {
    let mut cols = vec![
        c("frame", S::UInt64, "recorder frame id (1, 2, ...)"),
        c("elapsed", S::Float64, "seconds since the recording started"),
        c(
            "log_time",
            S::Timestamp,
            "recording date (header, 1 s resolution) + elapsed, UTC",
        ),
    ];
    let id = |doc: &str| c("actor_id", S::UInt32, doc);
    let (doc, per_chunk) = match table {
        "frames" => {
            cols.push(c(
                "duration",
                S::Float64,
                "frame duration, seconds (null when not recorded: -1 in the last frame)",
            ));
            cols.push(c(
                "visual_time",
                S::Float64,
                "episode game time, seconds (VisualTime packet, 0.9.14+; null when absent)",
            ));
            cols.push(c("platform_time", S::Float64, "wall-clock seconds since recording start (PlatformTime packet, additional data; null when absent)"));
            cols.push(c(
                "offset",
                S::UInt64,
                "file offset of the frame's first packet, bytes",
            ));
            cols.push(c(
                "bytes",
                S::UInt64,
                "bytes of the frame's packets (headers included)",
            ));
            cols.push(c("packets", S::UInt64, "number of packets in the frame"));
            ("one row per frame", true)
        }
        "actors" => {
            cols[0].doc = "frame in which the actor was added (EventAdd)".into();
            cols[1].doc = "spawn time, seconds since the recording started".into();
            cols[2].doc = "spawn time: recording date + elapsed, UTC".into();
            cols.push(id("actor id (database id)"));
            cols.push(c("actor_type", S::UInt8, "FCarlaActor::ActorType: 0 other, 1 vehicle, 2 walker, 3 traffic light, 4 traffic sign, 5 sensor (0.9.12+; INVALID in 0.9.10/0.9.11)"));
            cols.push(c("actor_type_name", S::Utf8, "actor_type as text"));
            cols.push(c(
                "blueprint",
                S::Utf8,
                "blueprint (description) id, e.g. vehicle.tesla.model3",
            ));
            cols.push(c(
                "uid",
                S::UInt32,
                "blueprint definition uid (0 for map actors)",
            ));
            cols.push(c(
                "role_name",
                S::Utf8,
                "the role_name attribute (null when absent)",
            ));
            cols.push(ColumnDef::new(
                "attributes",
                ColumnType::StringMap,
                "every attribute id -> value (text)",
            ));
            xyz(&mut cols, "", "spawn location", "metres");
            rpy(&mut cols, "spawn rotation");
            cols.push(c(
                "destroy_frame",
                S::UInt64,
                "frame of the EventDel (null if never destroyed)",
            ));
            cols.push(c(
                "destroy_elapsed",
                S::Float64,
                "destroy time, seconds since start (null if never)",
            ));
            cols.push(c(
                "destroy_time",
                S::Timestamp,
                "destroy time, UTC (null if never)",
            ));
            cols.push(c("parent_id", S::UInt32, "parent actor id from the last EventParent while alive (null: none recorded; attachments of pre-existing actors are not recorded)"));
            (
                "actors from EventAdd/EventDel/EventParent over the whole file, one row per EventAdd",
                false,
            )
        }
        "positions" => {
            cols.push(id("actor id"));
            xyz(&mut cols, "", "location", "metres (world)");
            rpy(&mut cols, "rotation");
            ("Position records: actor transforms per frame", true)
        }
        "collisions" => {
            cols.push(c(
                "collision_id",
                S::UInt32,
                "collision counter (gaps are normal)",
            ));
            cols.push(c(
                "actor1_id",
                S::UInt32,
                "actor carrying the collision sensor (parent)",
            ));
            cols.push(c(
                "actor2_id",
                S::UInt32,
                "other actor; 4294967295 = not a CARLA actor",
            ));
            cols.push(c(
                "actor1_is_hero",
                S::Boolean,
                "actor 1 has role_name hero",
            ));
            cols.push(c(
                "actor2_is_hero",
                S::Boolean,
                "actor 2 has role_name hero",
            ));
            ("Collision records", true)
        }
        "traffic_lights" => {
            cols.push(id("traffic light actor id"));
            cols.push(c("state", S::UInt8, "0 Red, 1 Yellow, 2 Green, 3 Off"));
            cols.push(c("state_name", S::Utf8, "state as text"));
            cols.push(c("is_frozen", S::Boolean, "light frozen"));
            cols.push(c(
                "elapsed_in_state",
                S::Float32,
                "seconds spent in the current state",
            ));
            ("State records: traffic-light states per frame", true)
        }
        "vehicle_controls" => {
            cols.push(id("vehicle actor id"));
            cols.push(c("steering", S::Float32, "steering, -1..1"));
            cols.push(c("throttle", S::Float32, "throttle, 0..1"));
            cols.push(c("brake", S::Float32, "brake, 0..1"));
            cols.push(c("handbrake", S::Boolean, "handbrake on"));
            cols.push(c("gear", S::Int32, "gear"));
            ("AnimVehicle records: vehicle controls per frame", true)
        }
        "walker_speeds" => {
            cols.push(id("walker actor id"));
            cols.push(c(
                "speed",
                S::Float64,
                "walker speed, m/s (stored cm/s, divided by 100)",
            ));
            ("AnimWalker records", true)
        }
        "vehicle_lights" => {
            cols.push(id("vehicle actor id"));
            cols.push(c("light_state", S::UInt32, "bit flags: Position 0x1, LowBeam 0x2, HighBeam 0x4, Brake 0x8, RightBlinker 0x10, LeftBlinker 0x20, Reverse 0x40, Fog 0x80, Interior 0x100, Special1 0x200, Special2 0x400"));
            cols.push(c(
                "lights",
                S::Utf8,
                "enabled lights, space separated (empty: none)",
            ));
            ("VehicleLight records", true)
        }
        "scene_lights" => {
            cols.push(c("light_id", S::Int32, "scene light id"));
            cols.push(c("intensity", S::Float32, "intensity as stored (UE units)"));
            for a in ["r", "g", "b", "a"] {
                cols.push(c(
                    &format!("color_{a}"),
                    S::Float32,
                    &format!("linear colour {a}, 0..1"),
                ));
            }
            cols.push(c("is_on", S::Boolean, "light on"));
            cols.push(c(
                "light_group",
                S::UInt8,
                "0 None, 1 Vehicle, 2 Street, 3 Building, 4 Other",
            ));
            cols.push(c("light_group_name", S::Utf8, "light_group as text"));
            (
                "SceneLight records (changes; frame 1 holds every light)",
                true,
            )
        }
        "kinematics" => {
            cols.push(id("actor id"));
            xyz(&mut cols, "linear_velocity_", "linear velocity", "m/s");
            xyz(
                &mut cols,
                "angular_velocity_",
                "angular velocity",
                "degrees/s",
            );
            ("Kinematics records (additional data)", true)
        }
        "bounding_boxes" | "trigger_volumes" => {
            cols.push(id("actor id"));
            let (what, d) = if table == "bounding_boxes" {
                (
                    "origin (actor-local)",
                    "BoundingBox records of actors created in the frame (NaN origin / -inf extent for actors without geometry)",
                )
            } else {
                (
                    "origin (world)",
                    "TriggerVolume records of signs/lights created in the frame",
                )
            };
            xyz(&mut cols, "origin_", what, "metres");
            xyz(&mut cols, "extent_", "half size", "metres");
            (d, true)
        }
        "platform_times" => {
            cols.push(c(
                "platform_time",
                S::Float64,
                "wall-clock seconds since recording start",
            ));
            ("PlatformTime packets (additional data)", true)
        }
        "events" => {
            cols.push(c(
                "event",
                S::Utf8,
                "add (EventAdd), del (EventDel) or parent (EventParent)",
            ));
            cols.push(id("actor id (the child for parent events)"));
            cols.push(c(
                "parent_id",
                S::UInt32,
                "parent actor id (parent events; null otherwise)",
            ));
            cols.push(c(
                "actor_type",
                S::UInt8,
                "FCarlaActor::ActorType (add events; null otherwise)",
            ));
            cols.push(c(
                "blueprint",
                S::Utf8,
                "blueprint id (add events; null otherwise)",
            ));
            (
                "actor events in file order: EventAdd, EventDel and EventParent records",
                true,
            )
        }
        "visual_times" => {
            cols.push(c("visual_time", S::Float64, "episode game time, seconds"));
            ("VisualTime packets (0.9.14+)", true)
        }
        "physics_controls" => {
            cols.push(id("vehicle actor id"));
            for (n, d) in [
                ("max_rpm", "max engine rpm"),
                ("moi", "engine moment of inertia, kg m^2"),
                (
                    "damping_rate_full_throttle",
                    "damping rate at full throttle",
                ),
                (
                    "damping_rate_zero_throttle_clutch_engaged",
                    "damping rate, zero throttle, clutch engaged",
                ),
                (
                    "damping_rate_zero_throttle_clutch_disengaged",
                    "damping rate, zero throttle, clutch disengaged",
                ),
            ] {
                cols.push(c(n, S::Float32, d));
            }
            cols.push(c("use_gear_autobox", S::Boolean, "automatic gear box"));
            for (n, d) in [
                ("clutch_strength", "clutch strength"),
                ("final_ratio", "final gear ratio"),
                ("mass", "mass, kg"),
                ("drag_coefficient", "drag coefficient"),
            ] {
                cols.push(c(n, S::Float32, d));
            }
            cols.push(ColumnDef::new(
                "center_of_mass",
                ColumnType::FixedList(S::Float64, 3),
                "centre of mass offset (x, y, z) as stored (FVehiclePhysicsControl::CenterOfMass)",
            ));
            cols.push(list(
                "torque_curve",
                S::Float32,
                "torque curve, flattened (rpm, torque Nm) pairs",
            ));
            cols.push(list(
                "forward_gears",
                S::Float32,
                "forward gears, flattened (ratio, down_ratio, up_ratio) triples",
            ));
            cols.push(list(
                "steering_curve",
                S::Float32,
                "steering curve, flattened (speed, steering factor) pairs",
            ));
            cols.push(list(
                "wheel_tire_friction",
                S::Float32,
                "per wheel: tire friction",
            ));
            cols.push(list(
                "wheel_damping_rate",
                S::Float32,
                "per wheel: damping rate",
            ));
            cols.push(list(
                "wheel_max_steer_angle",
                S::Float32,
                "per wheel: max steer angle, degrees",
            ));
            cols.push(list(
                "wheel_radius",
                S::Float64,
                "per wheel: radius, metres (stored cm)",
            ));
            cols.push(list(
                "wheel_max_brake_torque",
                S::Float32,
                "per wheel: max brake torque, Nm",
            ));
            cols.push(list(
                "wheel_max_handbrake_torque",
                S::Float32,
                "per wheel: max handbrake torque, Nm",
            ));
            cols.push(list(
                "wheel_lat_stiff_max_load",
                S::Float32,
                "per wheel: lateral stiffness max load (null in 0.9.10/0.9.11 files)",
            ));
            cols.push(list(
                "wheel_lat_stiff_value",
                S::Float32,
                "per wheel: lateral stiffness (null in 0.9.10/0.9.11 files)",
            ));
            cols.push(list(
                "wheel_long_stiff_value",
                S::Float32,
                "per wheel: longitudinal stiffness (null in 0.9.10/0.9.11 files)",
            ));
            cols.push(list(
                "wheel_position",
                S::Float64,
                "per wheel: world position, flattened (x, y, z) triples, metres",
            ));
            (
                "PhysicsControl records of vehicles created in the frame (additional data)",
                true,
            )
        }
        "traffic_light_times" => {
            cols.push(id("traffic light actor id"));
            cols.push(c("green_time", S::Float32, "green phase, seconds"));
            cols.push(c("yellow_time", S::Float32, "yellow phase, seconds"));
            cols.push(c("red_time", S::Float32, "red phase, seconds"));
            ("TrafficLightTime records (additional data)", true)
        }
        "wheels" => {
            cols.push(id("vehicle actor id"));
            cols.push(c(
                "wheel_index",
                S::UInt32,
                "position of the wheel in the record",
            ));
            cols.push(c(
                "wheel_location",
                S::UInt8,
                "0 FL, 1 FR, 2 BL, 3 BR, 4 ML, 5 MR (bikes: 0 front, 1 back)",
            ));
            cols.push(c("wheel_location_name", S::Utf8, "wheel_location as text"));
            cols.push(c("steering_angle", S::Float32, "steering angle, degrees"));
            cols.push(c("tire_rotation", S::Float32, "tire rotation, degrees"));
            (
                "AnimVehicleWheels records, one row per wheel (0.9.15+)",
                true,
            )
        }
        "bikers" => {
            cols.push(id("two-wheeled vehicle actor id"));
            cols.push(c(
                "forward_speed",
                S::Float64,
                "forward speed, m/s (stored cm/s, divided by 100)",
            ));
            cols.push(c("engine_rotation", S::Float32, "engine rpm / max rpm"));
            ("AnimBiker records (0.9.15+)", true)
        }
        "doors" => {
            cols.push(id("vehicle actor id"));
            cols.push(c(
                "door",
                S::UInt8,
                "0 FL, 1 FR, 2 RL, 3 RR, 4 Hood, 5 Trunk, 6 All",
            ));
            cols.push(c("door_name", S::Utf8, "door as text"));
            cols.push(c("is_open", S::Boolean, "opened (true) or closed"));
            (
                "VehicleDoor records (door opened/closed through the API)",
                true,
            )
        }
        "bones" => {
            cols.push(id("walker actor id"));
            cols.push(c(
                "bone_index",
                S::UInt32,
                "position of the bone in the record",
            ));
            cols.push(c("bone_name", S::Utf8, "bone name"));
            xyz(
                &mut cols,
                "",
                "location relative to the parent bone",
                "metres",
            );
            rpy(&mut cols, "rotation relative to the parent bone");
            (
                "WalkerBones records, one row per bone (additional data, 0.9.14+)",
                true,
            )
        }
        _ => return None,
    };
    Some(TableDef {
        name: table.to_string(),
        doc: doc.to_string(),
        columns: cols,
        per_chunk,
    })
}

const CM: f64 = 0.01;

/// Emits a row made of the frame prefix and `rest`, without allocating.
fn emit(receiver: &mut dyn RowReceiver, fr: &FrameCtx, rest: &[Value<'_>]) -> Flow {
    let mut cells = [Value::Null; 48];
    cells[0] = Value::U64(fr.id);
    cells[1] = Value::F64(fr.elapsed);
    cells[2] = Value::Time(fr.log_time);
    let n = rest.len().min(cells.len() - 3);
    cells[3..3 + n].copy_from_slice(&rest[..n]);
    receiver.row(&cells[..3 + n])
}

fn f(v: f32) -> Value<'static> {
    Value::F64(f64::from(v))
}

/// Decodes the records of one packet of `kind` into rows.
fn packet_rows(
    kind: Kind,
    p: &Packet<'_>,
    layout: &Layout,
    scratch: &mut String,
    receiver: &mut dyn RowReceiver,
) -> Option<Flow> {
    let fr = &p.frame;
    let mut c = Cur::new(p.body, layout.f64_vectors);
    match kind {
        Kind::PlatformTime | Kind::VisualTime => {
            let t = c.f64()?;
            return Some(emit(receiver, fr, &[Value::F64(t)]));
        }
        Kind::Position if !layout.f64_vectors => return positions_fast(p, receiver),
        _ => {}
    }
    let total = c.u16()?;
    for _ in 0..total {
        let flow = match kind {
            Kind::Position => {
                let (id, l, r) = (c.u32()?, c.vec3()?, c.vec3()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        Value::F64(l[0] * CM),
                        Value::F64(l[1] * CM),
                        Value::F64(l[2] * CM),
                        Value::F64(r[0]),
                        Value::F64(r[1]),
                        Value::F64(r[2]),
                    ],
                )
            }
            Kind::Collision => {
                let (id, a1, a2, h1, h2) = (c.u32()?, c.u32()?, c.u32()?, c.bool()?, c.bool()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        Value::U64(u64::from(a1)),
                        Value::U64(u64::from(a2)),
                        Value::Bool(h1),
                        Value::Bool(h2),
                    ],
                )
            }
            Kind::State => {
                let (id, frozen, t, s) = (c.u32()?, c.bool()?, c.f32()?, c.u8()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        Value::U64(u64::from(s)),
                        Value::Str(decode::light_state_name(s)),
                        Value::Bool(frozen),
                        f(t),
                    ],
                )
            }
            Kind::AnimVehicle => {
                let (id, st, th, br, hb, gear) =
                    (c.u32()?, c.f32()?, c.f32()?, c.f32()?, c.bool()?, c.i32()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        f(st),
                        f(th),
                        f(br),
                        Value::Bool(hb),
                        Value::I64(i64::from(gear)),
                    ],
                )
            }
            Kind::AnimWalker => {
                let (id, sp) = (c.u32()?, c.f32()?);
                emit(
                    receiver,
                    fr,
                    &[Value::U64(u64::from(id)), Value::F64(f64::from(sp) * CM)],
                )
            }
            Kind::VehicleLight => {
                let (id, st) = (c.u32()?, c.u32()?);
                decode::light_names(st, scratch);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        Value::U64(u64::from(st)),
                        Value::Str(scratch),
                    ],
                )
            }
            Kind::SceneLight => {
                let (id, inten) = (c.i32()?, c.f32()?);
                let (r, g, b, a) = (c.f32()?, c.f32()?, c.f32()?, c.f32()?);
                let (on, group) = (c.bool()?, c.u8()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::I64(i64::from(id)),
                        f(inten),
                        f(r),
                        f(g),
                        f(b),
                        f(a),
                        Value::Bool(on),
                        Value::U64(u64::from(group)),
                        Value::Str(decode::light_group_name(group)),
                    ],
                )
            }
            Kind::Kinematics => {
                let (id, l, a) = (c.u32()?, c.vec3()?, c.vec3()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        Value::F64(l[0]),
                        Value::F64(l[1]),
                        Value::F64(l[2]),
                        Value::F64(a[0]),
                        Value::F64(a[1]),
                        Value::F64(a[2]),
                    ],
                )
            }
            Kind::BoundingBox | Kind::TriggerVolume => {
                let (id, o, e) = (c.u32()?, c.vec3()?, c.vec3()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        Value::F64(o[0] * CM),
                        Value::F64(o[1] * CM),
                        Value::F64(o[2] * CM),
                        Value::F64(e[0] * CM),
                        Value::F64(e[1] * CM),
                        Value::F64(e[2] * CM),
                    ],
                )
            }
            Kind::TrafficLightTime => {
                let (id, g, y, r) = (c.u32()?, c.f32()?, c.f32()?, c.f32()?);
                emit(receiver, fr, &[Value::U64(u64::from(id)), f(g), f(y), f(r)])
            }
            Kind::AnimBiker => {
                let (id, sp, er) = (c.u32()?, c.f32()?, c.f32()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        Value::F64(f64::from(sp) * CM),
                        f(er),
                    ],
                )
            }
            Kind::VehicleDoor => {
                let (id, door, open) = (c.u32()?, c.u8()?, c.bool()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::U64(u64::from(id)),
                        Value::U64(u64::from(door)),
                        decode::door_name(door).map_or(Value::Null, Value::Str),
                        Value::Bool(open),
                    ],
                )
            }
            Kind::AnimVehicleWheels => {
                let id = c.u32()?;
                let n = c.u32()?;
                let mut flow = Flow::Continue;
                for i in 0..n {
                    let (loc, st, rot) = (c.u8()?, c.f32()?, c.f32()?);
                    flow = emit(
                        receiver,
                        fr,
                        &[
                            Value::U64(u64::from(id)),
                            Value::U64(u64::from(i)),
                            Value::U64(u64::from(loc)),
                            Value::Str(decode::wheel_location_name(loc)),
                            f(st),
                            f(rot),
                        ],
                    );
                    if flow == Flow::Stop {
                        break;
                    }
                }
                flow
            }
            Kind::WalkerBones => {
                let id = c.u32()?;
                let n = c.u16()?;
                let mut flow = Flow::Continue;
                for i in 0..n {
                    let b = Bone::parse(&mut c)?;
                    let name = decode::text(b.name);
                    flow = emit(
                        receiver,
                        fr,
                        &[
                            Value::U64(u64::from(id)),
                            Value::U64(u64::from(i)),
                            Value::Str(&name),
                            Value::F64(b.location[0] * CM),
                            Value::F64(b.location[1] * CM),
                            Value::F64(b.location[2] * CM),
                            Value::F64(b.rotation[0]),
                            Value::F64(b.rotation[1]),
                            Value::F64(b.rotation[2]),
                        ],
                    );
                    if flow == Flow::Stop {
                        break;
                    }
                }
                flow
            }
            Kind::PhysicsControl => {
                let pc = PhysicsControl::parse(&mut c, layout.wheel_physics_bytes)?;
                physics_row(receiver, fr, &pc)
            }
            _ => return Some(Flow::Continue),
        };
        if flow == Flow::Stop {
            return Some(Flow::Stop);
        }
    }
    Some(Flow::Continue)
}

/// Rows of the `events` table from one EventAdd/EventDel/EventParent packet.
fn event_rows(p: &Packet<'_>, layout: &Layout, receiver: &mut dyn RowReceiver) -> Option<Flow> {
    let fr = &p.frame;
    let mut c = Cur::new(p.body, layout.f64_vectors);
    let kind = layout.kind(p.raw)?;
    let n = c.u16()?;
    for _ in 0..n {
        let flow = match kind {
            Kind::EventAdd => {
                let a = decode::EventAdd::parse(&mut c)?;
                let bp = decode::text(a.blueprint);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::Str("add"),
                        Value::U64(u64::from(a.id)),
                        Value::Null,
                        Value::U64(u64::from(a.actor_type)),
                        Value::Str(&bp),
                    ],
                )
            }
            Kind::EventDel => {
                let id = c.u32()?;
                emit(
                    receiver,
                    fr,
                    &[
                        Value::Str("del"),
                        Value::U64(u64::from(id)),
                        Value::Null,
                        Value::Null,
                        Value::Null,
                    ],
                )
            }
            Kind::EventParent => {
                let (id, parent) = (c.u32()?, c.u32()?);
                emit(
                    receiver,
                    fr,
                    &[
                        Value::Str("parent"),
                        Value::U64(u64::from(id)),
                        Value::U64(u64::from(parent)),
                        Value::Null,
                        Value::Null,
                    ],
                )
            }
            _ => return Some(Flow::Continue),
        };
        if flow == Flow::Stop {
            return Some(Flow::Stop);
        }
    }
    Some(Flow::Continue)
}

/// Position records (f32 layout, 28 bytes each) decoded straight from the
/// packet with fixed-size reads: no allocation, no per-field bounds checks.
fn positions_fast(p: &Packet<'_>, receiver: &mut dyn RowReceiver) -> Option<Flow> {
    let body = p.body;
    let n = u16::from_le_bytes([*body.first()?, *body.get(1)?]) as usize;
    let recs = body.get(2..2 + n * 28)?;
    let fr = &p.frame;
    let mut cells = [Value::Null; 10];
    cells[0] = Value::U64(fr.id);
    cells[1] = Value::F64(fr.elapsed);
    cells[2] = Value::Time(fr.log_time);
    for r in recs.chunks_exact(28) {
        let w = |i: usize| [r[i], r[i + 1], r[i + 2], r[i + 3]];
        let fl = |i: usize| f64::from(f32::from_le_bytes(w(i)));
        cells[3] = Value::U64(u64::from(u32::from_le_bytes(w(0))));
        cells[4] = Value::F64(fl(4) * CM);
        cells[5] = Value::F64(fl(8) * CM);
        cells[6] = Value::F64(fl(12) * CM);
        cells[7] = Value::F64(fl(16));
        cells[8] = Value::F64(fl(20));
        cells[9] = Value::F64(fl(24));
        if receiver.row(&cells) == Flow::Stop {
            return Some(Flow::Stop);
        }
    }
    Some(Flow::Continue)
}

fn physics_row(receiver: &mut dyn RowReceiver, fr: &FrameCtx, pc: &PhysicsControl) -> Flow {
    let flat2: Vec<f32> = pc.torque_curve.iter().flatten().copied().collect();
    let gears: Vec<f32> = pc.forward_gears.iter().flatten().copied().collect();
    let steer: Vec<f32> = pc.steering_curve.iter().flatten().copied().collect();
    let w = &pc.wheels;
    let col = |g: fn(&decode::WheelPhysics) -> f32| w.iter().map(g).collect::<Vec<f32>>();
    let tf = col(|w| w.tire_friction);
    let dr = col(|w| w.damping_rate);
    let ms = col(|w| w.max_steer_angle);
    let radius: Vec<f64> = w.iter().map(|w| f64::from(w.radius) * CM).collect();
    let mb = col(|w| w.max_brake_torque);
    let mh = col(|w| w.max_handbrake_torque);
    let stiff = w.first().is_some_and(|w| w.lat_stiff_max_load.is_some());
    let l1 = col(|w| w.lat_stiff_max_load.unwrap_or(f32::NAN));
    let l2 = col(|w| w.lat_stiff_value.unwrap_or(f32::NAN));
    let l3 = col(|w| w.long_stiff_value.unwrap_or(f32::NAN));
    let pos: Vec<f64> = w.iter().flat_map(|w| w.position.map(|v| v * CM)).collect();
    fn opt(v: &[f32], keep: bool) -> Value<'_> {
        if keep { Value::F32s(v) } else { Value::Null }
    }
    let keep = stiff || w.is_empty();
    let e = &pc.engine;
    let m = &pc.misc;
    emit(
        receiver,
        fr,
        &[
            Value::U64(u64::from(pc.id)),
            f(e[0]),
            f(e[1]),
            f(e[2]),
            f(e[3]),
            f(e[4]),
            Value::Bool(pc.use_gear_autobox),
            f(m[0]),
            f(m[1]),
            f(m[2]),
            f(m[3]),
            Value::F64s(&pc.center_of_mass),
            Value::F32s(&flat2),
            Value::F32s(&gears),
            Value::F32s(&steer),
            Value::F32s(&tf),
            Value::F32s(&dr),
            Value::F32s(&ms),
            Value::F64s(&radius),
            Value::F32s(&mb),
            Value::F32s(&mh),
            opt(&l1, keep),
            opt(&l2, keep),
            opt(&l3, keep),
            Value::F64s(&pos),
        ],
    )
}

/// Per-frame accumulator of the `frames` table.
struct FrameRow {
    frame: FrameCtx,
    visual: Option<f64>,
    platform: Option<f64>,
    offset: u64,
    end: u64,
    packets: u64,
}

fn emit_frame(receiver: &mut dyn RowReceiver, r: &FrameRow) -> Flow {
    let opt = |v: Option<f64>| v.map_or(Value::Null, Value::F64);
    emit(
        receiver,
        &r.frame,
        &[
            if r.frame.duration < 0.0 {
                Value::Null
            } else {
                Value::F64(r.frame.duration)
            },
            opt(r.visual),
            opt(r.platform),
            Value::U64(r.offset),
            Value::U64(r.end - r.offset),
            Value::U64(r.packets),
        ],
    )
}

/// Rows of a per-chunk table in one chunk.
pub fn read_chunk(
    file: &dyn ReadAt,
    summary: &Summary,
    chunk: &ChunkMeta,
    table: &str,
    sel: &Selection,
    receiver: &mut dyn RowReceiver,
) -> Result<ChunkRead> {
    let ctx = ErrorContext::new(file.name(), "carla", file.size());
    let unsupported = || crate::Error::UnsupportedTable {
        format: "carla",
        table: table.to_string(),
    };
    let (index, _) = chunk::find(summary, chunk, &ctx)?;
    let layout = index.layout;
    if table == "frames" {
        let mut cur: Option<FrameRow> = None;
        let mut stopped_early = false;
        let w = chunk::for_each_packet(file, summary, chunk, sel, &|_| true, &mut |p| {
            let end = p.offset + PACKET_HEADER + p.body.len() as u64;
            let new_frame = cur
                .as_ref()
                .is_none_or(|c| c.frame.id != p.frame.id || p.raw == 0);
            if new_frame {
                if let Some(r) = cur.take()
                    && emit_frame(receiver, &r) == Flow::Stop
                {
                    stopped_early = true;
                    return Ok(Flow::Stop);
                }
                cur = Some(FrameRow {
                    frame: p.frame,
                    visual: None,
                    platform: None,
                    offset: p.offset,
                    end,
                    packets: 0,
                });
            }
            if let Some(r) = cur.as_mut() {
                r.packets += 1;
                r.end = end;
                let t = Cur::new(p.body, false).f64();
                match layout.kind(p.raw) {
                    Some(Kind::VisualTime) => r.visual = t,
                    Some(Kind::PlatformTime) => r.platform = t,
                    _ => {}
                }
            }
            Ok(Flow::Continue)
        })?;
        let mut stopped = w.stopped || stopped_early;
        if !stopped && let Some(r) = cur.take() {
            stopped = emit_frame(receiver, &r) == Flow::Stop;
        }
        return Ok(ChunkRead {
            messages: w.parsed,
            stopped,
            skipped: w.skipped,
            ..Default::default()
        });
    }
    if table == "events" {
        let raws = [
            layout.raw_id(Kind::EventAdd),
            layout.raw_id(Kind::EventDel),
            layout.raw_id(Kind::EventParent),
        ];
        let w = chunk::for_each_packet(
            file,
            summary,
            chunk,
            sel,
            &|r| raws.contains(&r),
            &mut |p| {
                event_rows(&p, &layout, receiver).ok_or_else(|| {
                    ctx.corrupt(
                    p.offset,
                    format!(
                        "event packet (id {}) of {} bytes does not hold the records it announces",
                        p.raw,
                        p.body.len()
                    ),
                )
                })
            },
        )?;
        return Ok(ChunkRead {
            messages: w.parsed,
            stopped: w.stopped,
            skipped: w.skipped,
            ..Default::default()
        });
    }
    let kind = table_kind(table).ok_or_else(unsupported)?;
    let raw = layout.raw_id(kind);
    let mut scratch = String::new();
    let w = chunk::for_each_packet(file, summary, chunk, sel, &|r| r == raw, &mut |p| {
        packet_rows(kind, &p, &layout, &mut scratch, receiver).ok_or_else(|| {
            ctx.corrupt(
                p.offset,
                format!(
                    "{} packet of {} bytes does not hold the records it announces",
                    kind.carla_name(),
                    p.body.len()
                ),
            )
        })
    })?;
    Ok(ChunkRead {
        messages: w.parsed,
        stopped: w.stopped,
        skipped: w.skipped,
        ..Default::default()
    })
}

/// One actor being collected.
struct Actor {
    frame: u64,
    elapsed: f64,
    id: u32,
    actor_type: u8,
    blueprint: String,
    uid: u32,
    attributes: Vec<(String, String)>,
    location: [f64; 3],
    rotation: [f64; 3],
    destroy: Option<(u64, f64)>,
    parent: Option<u32>,
}

/// Rows of a whole-file table (`actors`).
pub fn read_file(
    file: &dyn ReadAt,
    summary: &Summary,
    table: &str,
    receiver: &mut dyn RowReceiver,
) -> Result<()> {
    if table != "actors" {
        return Err(crate::Error::UnsupportedTable {
            format: "carla",
            table: table.to_string(),
        });
    }
    let ctx = ErrorContext::new(file.name(), "carla", file.size());
    let index = summary
        .private::<CarlaIndex>()
        .ok_or_else(|| ctx.corrupt(0, "summary is not a CARLA summary"))?;
    let layout = index.layout;
    let actors = collect_actors(file, &ctx, index)?;
    let has_sensor = layout.has_sensor_type();
    for a in &actors {
        let fr = FrameCtx {
            id: a.frame,
            elapsed: a.elapsed,
            duration: -1.0,
            log_time: index.log_time(a.elapsed),
        };
        let role = a
            .attributes
            .iter()
            .find(|(k, _)| k == "role_name")
            .map_or(Value::Null, |(_, v)| Value::Str(v));
        let (df, de, dt) = match a.destroy {
            Some((f, e)) => (Value::U64(f), Value::F64(e), Value::Time(index.log_time(e))),
            None => (Value::Null, Value::Null, Value::Null),
        };
        let flow = emit(
            receiver,
            &fr,
            &[
                Value::U64(u64::from(a.id)),
                Value::U64(u64::from(a.actor_type)),
                Value::Str(layout::actor_type_name(a.actor_type, has_sensor)),
                Value::Str(&a.blueprint),
                Value::U64(u64::from(a.uid)),
                role,
                Value::Pairs(&a.attributes),
                Value::F64(a.location[0] * CM),
                Value::F64(a.location[1] * CM),
                Value::F64(a.location[2] * CM),
                Value::F64(a.rotation[0]),
                Value::F64(a.rotation[1]),
                Value::F64(a.rotation[2]),
                df,
                de,
                dt,
                a.parent.map_or(Value::Null, |p| Value::U64(u64::from(p))),
            ],
        );
        if flow == Flow::Stop {
            break;
        }
    }
    Ok(())
}

/// Walks the file's event packets (every other body skipped by its size).
fn collect_actors(file: &dyn ReadAt, ctx: &ErrorContext, index: &CarlaIndex) -> Result<Vec<Actor>> {
    let layout = index.layout;
    let mut actors: Vec<Actor> = Vec::new();
    let mut alive: HashMap<u32, usize> = HashMap::new();
    let mut frame = FrameStart {
        id: 0,
        duration: -1.0,
        elapsed: 0.0,
    };
    let end = index.data_end.min(file.size());
    let mut rd = SequentialReader::new(file, index.header.end);
    while rd.position() < end {
        let pos = rd.position();
        let Some(h) = rd.take(PACKET_HEADER as usize).map_err(|e| ctx.io(e))? else {
            break;
        };
        let raw = h[0];
        let len = u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as u64;
        let body_at = pos + PACKET_HEADER;
        if body_at + len > end {
            break;
        }
        let kind = layout.kind(raw);
        if !matches!(
            kind,
            Some(Kind::FrameStart | Kind::EventAdd | Kind::EventDel | Kind::EventParent)
        ) {
            rd.seek(body_at + len);
            continue;
        }
        let Some(body) = rd.take(len as usize).map_err(|e| ctx.io(e))? else {
            break;
        };
        let bad = || {
            ctx.corrupt(
                pos,
                format!("{raw} packet of {len} bytes does not hold the records it announces"),
            )
        };
        let mut c = Cur::new(body, layout.f64_vectors);
        match kind {
            Some(Kind::FrameStart) => {
                frame = FrameStart::parse(body).ok_or_else(bad)?;
            }
            Some(Kind::EventAdd) => {
                let n = c.u16().ok_or_else(bad)?;
                for _ in 0..n {
                    let a = decode::EventAdd::parse(&mut c).ok_or_else(bad)?;
                    alive.insert(a.id, actors.len());
                    actors.push(Actor {
                        frame: frame.id,
                        elapsed: frame.elapsed,
                        id: a.id,
                        actor_type: a.actor_type,
                        blueprint: decode::text(a.blueprint).into_owned(),
                        uid: a.uid,
                        attributes: a
                            .attributes
                            .iter()
                            .map(|(_, k, v)| {
                                (decode::text(k).into_owned(), decode::text(v).into_owned())
                            })
                            .collect(),
                        location: a.location,
                        rotation: a.rotation,
                        destroy: None,
                        parent: None,
                    });
                }
            }
            Some(Kind::EventDel) => {
                let n = c.u16().ok_or_else(bad)?;
                for _ in 0..n {
                    let id = c.u32().ok_or_else(bad)?;
                    if let Some(i) = alive.remove(&id)
                        && let Some(a) = actors.get_mut(i)
                    {
                        a.destroy = Some((frame.id, frame.elapsed));
                    }
                }
            }
            Some(Kind::EventParent) => {
                let n = c.u16().ok_or_else(bad)?;
                for _ in 0..n {
                    let (child, parent) = (c.u32().ok_or_else(bad)?, c.u32().ok_or_else(bad)?);
                    if let Some(&i) = alive.get(&child)
                        && let Some(a) = actors.get_mut(i)
                    {
                        a.parent = Some(parent);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(actors)
}
