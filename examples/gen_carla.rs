//! Writes a deterministic CARLA 0.9.16 recorder file (`.log`) like a busy town
//! recording, for benchmarks and manual testing.
//!
//! ```text
//! cargo run --release --example gen_carla -- OUT.log [--frames 10250] [--fps 20]
//!     [--vehicles 150] [--walkers 60] [--traffic-lights 40] [--seed 1]
//! ```
//!
//! Layout: the info header (version 1, "CARLA_RECORDER", date 1700000000, map
//! Town10HD_Opt), then per frame, in the order CARLA 0.9.16 writes them:
//! FrameStart (0), VisualTime (20), EventAdd (2), EventDel (3), EventParent (4),
//! Collision (5), VehicleDoor (23), Position (6), State (7), AnimVehicle (8),
//! AnimWalker (9), VehicleLight (10), AnimVehicleWheels (21), AnimBiker (22),
//! FrameEnd (1). Frame 1 adds every actor (spectator, traffic lights, vehicles
//! with every tenth one a bicycle, the hero's collision sensor, walkers and
//! their AI controllers); frame 2 attaches the sensor to the hero; a collision
//! every 100 frames, a door event every 250 frames; the last frame destroys
//! everything. Durations are f32 deltas summed in f64, like CARLA; the last
//! frame keeps duration -1. With the defaults the file is about 200 MB
//! (10,250 frames, 8 min 32 s at 20 Hz, about 19.5 kB per frame).
//!
//! The small test file `tests/data/demo.log` (98,411 bytes, 100 frames, one
//! collision) is written by `tests/data/regenerate.sh` with `--frames 100
//! --vehicles 6 --walkers 3 --traffic-lights 2`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn unit(&mut self) -> f32 {
        (self.next() % 1_000_000) as f32 / 1_000_000.0
    }
}

/// A packet body being built.
#[derive(Default)]
struct Body(Vec<u8>);

impl Body {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn f32(&mut self, v: f32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn f64(&mut self, v: f64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn vec(&mut self, v: [f32; 3]) -> &mut Self {
        self.f32(v[0]).f32(v[1]).f32(v[2])
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u16(s.len() as u16);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
}

#[derive(Clone)]
struct Actor {
    id: u32,
    ty: u8,
    blueprint: &'static str,
    attributes: Vec<(u8, &'static str, String)>,
    /// Circle centre, radius (cm), phase, angular speed (rad/s).
    centre: [f32; 2],
    radius: f32,
    phase: f32,
    omega: f32,
    bike: bool,
}

impl Actor {
    fn at(&self, t: f64) -> ([f32; 3], [f32; 3]) {
        let a = self.phase + (self.omega as f64 * t) as f32;
        let (s, c) = a.sin_cos();
        let z = if self.ty == 2 { 95.0 } else { 0.0 };
        (
            [
                self.centre[0] + self.radius * c,
                self.centre[1] + self.radius * s,
                z,
            ],
            [0.0, 0.0, a.to_degrees() + 90.0],
        )
    }
}

struct Writer<W: Write> {
    out: W,
    bytes: u64,
}

impl<W: Write> Writer<W> {
    fn raw(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.bytes += b.len() as u64;
        self.out.write_all(b)
    }
    fn packet(&mut self, id: u8, body: &Body) -> std::io::Result<()> {
        self.raw(&[id])?;
        self.raw(&(body.0.len() as u32).to_le_bytes())?;
        self.raw(&body.0)
    }
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first().filter(|a| !a.starts_with("--")) else {
        eprintln!(
            "usage: gen_carla OUT.log [--frames 10250] [--fps 20] [--vehicles 150] [--walkers 60] [--traffic-lights 40] [--seed 1]"
        );
        return ExitCode::from(2);
    };
    let frames: u64 = arg(&args, "--frames", 10_250);
    let fps: f32 = arg(&args, "--fps", 20.0);
    let n_veh: u32 = arg(&args, "--vehicles", 150);
    let n_walk: u32 = arg(&args, "--walkers", 60);
    let n_lights: u32 = arg(&args, "--traffic-lights", 40);
    let seed: u64 = arg(&args, "--seed", 1);
    match run(path, frames, fps, n_veh, n_walk, n_lights, seed) {
        Ok(bytes) => {
            eprintln!("wrote {path}: {frames} frames, {bytes} bytes");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_carla: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    path: &str,
    frames: u64,
    fps: f32,
    n_veh: u32,
    n_walk: u32,
    n_lights: u32,
    seed: u64,
) -> std::io::Result<u64> {
    let mut rng = Rng(seed);
    let mut w = Writer {
        out: BufWriter::with_capacity(1 << 20, File::create(path)?),
        bytes: 0,
    };
    let mut h = Body::default();
    h.u16(1)
        .str("CARLA_RECORDER")
        .u64(1_700_000_000)
        .str("Town10HD_Opt");
    w.raw(&h.0)?;

    // Actors.
    let mut next_id = 1u32;
    let mut id = || {
        let i = next_id;
        next_id += 1;
        i
    };
    let spectator = Actor {
        id: id(),
        ty: 0,
        blueprint: "spectator",
        attributes: vec![],
        centre: [542.5, 4236.7],
        radius: 0.0,
        phase: 0.0,
        omega: 0.0,
        bike: false,
    };
    let lights: Vec<u32> = (0..n_lights).map(|_| id()).collect();
    let light_pos: Vec<[f32; 3]> = lights
        .iter()
        .map(|_| {
            [
                rng.unit() * 40_000.0 - 20_000.0,
                rng.unit() * 40_000.0 - 20_000.0,
                10.3,
            ]
        })
        .collect();
    let mut vehicles = Vec::new();
    for i in 0..n_veh {
        let bike = i % 10 == 9;
        let role = if i == 0 { "hero" } else { "autopilot" };
        vehicles.push(Actor {
            id: id(),
            ty: 1,
            blueprint: if bike {
                "vehicle.bh.crossbike"
            } else {
                "vehicle.tesla.model3"
            },
            attributes: vec![
                (1, "number_of_wheels", if bike { "2" } else { "4" }.into()),
                (
                    4,
                    "color",
                    format!(
                        "{},{},{}",
                        rng.next() % 256,
                        rng.next() % 256,
                        rng.next() % 256
                    ),
                ),
                (3, "role_name", role.into()),
            ],
            centre: [
                rng.unit() * 30_000.0 - 15_000.0,
                rng.unit() * 30_000.0 - 15_000.0,
            ],
            radius: 2_000.0 + rng.unit() * 5_000.0,
            phase: rng.unit() * std::f32::consts::TAU,
            omega: 0.05 + rng.unit() * 0.2,
            bike,
        });
    }
    let sensor = id();
    let mut walkers = Vec::new();
    let mut controllers = Vec::new();
    for _ in 0..n_walk {
        let a = Actor {
            id: id(),
            ty: 2,
            blueprint: "walker.pedestrian.0010",
            attributes: vec![(3, "role_name", "pedestrian".into())],
            centre: [
                rng.unit() * 30_000.0 - 15_000.0,
                rng.unit() * 30_000.0 - 15_000.0,
            ],
            radius: 500.0 + rng.unit() * 1_000.0,
            phase: rng.unit() * std::f32::consts::TAU,
            omega: 0.1 + rng.unit() * 0.1,
            bike: false,
        };
        let mut c = a.clone();
        c.id = id();
        c.ty = 0;
        c.blueprint = "controller.ai.walker";
        c.attributes = vec![(3, "role_name", String::new())];
        walkers.push(a);
        controllers.push(c);
    }
    let moving: Vec<&Actor> = std::iter::once(&spectator)
        .chain(&vehicles)
        .chain(&walkers)
        .chain(&controllers)
        .collect();

    let dt = 1.0f32 / fps;
    let mut elapsed = 0f64;
    let mut b = Body::default();
    for frame in 1..=frames {
        let last = frame == frames;
        let t = elapsed;
        b.0.clear();
        b.u64(frame)
            .f64(if last { -1.0 } else { f64::from(dt) })
            .f64(t);
        w.packet(0, &b)?;
        b.0.clear();
        b.f64(t + 12.5);
        w.packet(20, &b)?;
        // EventAdd.
        b.0.clear();
        if frame == 1 {
            let total = 1 + lights.len() + vehicles.len() + 1 + walkers.len() * 2;
            b.u16(total as u16);
            let add = |b: &mut Body,
                       id: u32,
                       ty: u8,
                       bp: &str,
                       loc: [f32; 3],
                       rot: [f32; 3],
                       attrs: &[(u8, &str, String)]| {
                b.u32(id)
                    .u8(ty)
                    .vec(loc)
                    .vec(rot)
                    .u32(if bp == "spectator" || bp.starts_with("traffic.") {
                        0
                    } else {
                        100 + u32::from(ty)
                    })
                    .str(bp);
                b.u16(attrs.len() as u16);
                for (ty, k, v) in attrs {
                    b.u8(*ty).str(k).str(v);
                }
            };
            let (l, r) = spectator.at(0.0);
            add(&mut b, spectator.id, 0, "spectator", l, r, &[]);
            for (i, p) in lights.iter().zip(&light_pos) {
                add(&mut b, *i, 3, "traffic.traffic_light", *p, [0.0; 3], &[]);
            }
            for v in &vehicles {
                let (l, r) = v.at(0.0);
                add(&mut b, v.id, 1, v.blueprint, l, r, &v.attributes);
            }
            let (l, r) = vehicles.first().map_or(([0.0; 3], [0.0; 3]), |v| v.at(0.0));
            add(
                &mut b,
                sensor,
                5,
                "sensor.other.collision",
                l,
                r,
                &[(3, "role_name", "front".into())],
            );
            for a in walkers.iter().chain(&controllers) {
                let (l, r) = a.at(0.0);
                add(&mut b, a.id, a.ty, a.blueprint, l, r, &a.attributes);
            }
        } else {
            b.u16(0);
        }
        w.packet(2, &b)?;
        // EventDel: everything in the last frame.
        b.0.clear();
        if last && frames > 1 {
            let ids: Vec<u32> = std::iter::once(spectator.id)
                .chain(lights.iter().copied())
                .chain(vehicles.iter().map(|v| v.id))
                .chain([sensor])
                .chain(walkers.iter().chain(&controllers).map(|a| a.id))
                .collect();
            b.u16(ids.len() as u16);
            for i in ids {
                b.u32(i);
            }
        } else {
            b.u16(0);
        }
        w.packet(3, &b)?;
        // EventParent: the sensor is attached to the hero in frame 2.
        b.0.clear();
        if frame == 2 && !vehicles.is_empty() {
            b.u16(1).u32(sensor).u32(vehicles[0].id);
        } else {
            b.u16(0);
        }
        w.packet(4, &b)?;
        // Collision every 100 frames.
        b.0.clear();
        if frame % 100 == 0 && vehicles.len() > 1 {
            b.u16(1)
                .u32(frame as u32 / 100)
                .u32(vehicles[0].id)
                .u32(vehicles[1].id)
                .u8(1)
                .u8(0);
        } else {
            b.u16(0);
        }
        w.packet(5, &b)?;
        if last {
            // Everything is destroyed: empty per-actor packets, like CARLA.
            for id in [23u8, 6, 7, 8, 9, 10, 21, 22] {
                b.0.clear();
                b.u16(0);
                w.packet(id, &b)?;
            }
            w.packet(1, &Body::default())?;
            break;
        }
        // VehicleDoor every 250 frames.
        b.0.clear();
        if frame % 250 == 0 && !vehicles.is_empty() {
            let v = &vehicles[(frame / 250) as usize % vehicles.len()];
            b.u16(1).u32(v.id).u8((frame / 250 % 7) as u8).u8(1);
        } else {
            b.u16(0);
        }
        w.packet(23, &b)?;
        // Position.
        b.0.clear();
        b.u16(moving.len() as u16);
        for a in &moving {
            let (l, r) = a.at(t);
            b.u32(a.id).vec(l).vec(r);
        }
        w.packet(6, &b)?;
        // State.
        b.0.clear();
        b.u16(lights.len() as u16);
        for (k, l) in lights.iter().enumerate() {
            let cycle = (t + k as f64 * 1.7) % 15.0;
            let (state, into) = if cycle < 10.0 {
                (2u8, cycle)
            } else if cycle < 13.0 {
                (1, cycle - 10.0)
            } else {
                (0, cycle - 13.0)
            };
            b.u32(*l).u8(0).f32(into as f32).u8(state);
        }
        w.packet(7, &b)?;
        // AnimVehicle.
        b.0.clear();
        b.u16(vehicles.len() as u16);
        for v in &vehicles {
            b.u32(v.id)
                .f32(0.1 * ((t as f32) * v.omega).sin())
                .f32(0.5)
                .f32(0.0)
                .u8(0)
                .i32(3);
        }
        w.packet(8, &b)?;
        // AnimWalker (cm/s).
        b.0.clear();
        b.u16(walkers.len() as u16);
        for a in &walkers {
            b.u32(a.id).f32(a.radius * a.omega);
        }
        w.packet(9, &b)?;
        // VehicleLight.
        b.0.clear();
        b.u16(vehicles.len() as u16);
        for (k, v) in vehicles.iter().enumerate() {
            let brake = if (frame + k as u64) % 40 < 5 { 0x8 } else { 0 };
            b.u32(v.id).u32(0x3 | brake);
        }
        w.packet(10, &b)?;
        // AnimVehicleWheels.
        b.0.clear();
        b.u16(vehicles.len() as u16);
        for v in &vehicles {
            let n = if v.bike { 2u32 } else { 4 };
            b.u32(v.id).u32(n);
            for wl in 0..n {
                let steer = if wl < 2 { 5.0 } else { 0.0 };
                b.u8(wl as u8).f32(steer).f32(((t * 360.0) % 360.0) as f32);
            }
        }
        w.packet(21, &b)?;
        // AnimBiker.
        b.0.clear();
        let bikes: Vec<&Actor> = vehicles.iter().filter(|v| v.bike).collect();
        b.u16(bikes.len() as u16);
        for v in bikes {
            b.u32(v.id).f32(v.radius * v.omega).f32(0.3);
        }
        w.packet(22, &b)?;
        w.packet(1, &Body::default())?;
        elapsed += f64::from(dt);
    }
    w.out.flush()?;
    Ok(w.bytes)
}
