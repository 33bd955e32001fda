//! Tolerant little-endian slice parsing and the record layouts of each packet.
//!
//! Every read is checked; a short slice gives `None`, never a panic.

/// A forward cursor over a byte slice.
#[derive(Debug, Clone, Copy)]
pub struct Cur<'a> {
    /// The bytes.
    pub b: &'a [u8],
    /// Next unread position.
    pub p: usize,
    /// Whether vectors are 3 × f64 (UE5).
    pub(crate) f64v: bool,
}

impl<'a> Cur<'a> {
    /// A cursor at the start of `b`.
    pub fn new(b: &'a [u8], f64v: bool) -> Self {
        Self { b, p: 0, f64v }
    }

    /// Bytes left.
    pub fn left(&self) -> usize {
        self.b.len().saturating_sub(self.p)
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.p.checked_add(n)?;
        let s = self.b.get(self.p..end)?;
        self.p = end;
        Some(s)
    }

    fn arr<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }

    /// A `u8`.
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.arr::<1>()?[0])
    }
    /// A `bool` (any non-zero byte is true).
    pub fn bool(&mut self) -> Option<bool> {
        Some(self.u8()? != 0)
    }
    /// A `u16`.
    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.arr()?))
    }
    /// A `u32`.
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.arr()?))
    }
    /// An `i32`.
    pub fn i32(&mut self) -> Option<i32> {
        Some(i32::from_le_bytes(self.arr()?))
    }
    /// A `u64`.
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.arr()?))
    }
    /// An `i64`.
    pub fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.arr()?))
    }
    /// An `f32`.
    pub fn f32(&mut self) -> Option<f32> {
        Some(f32::from_le_bytes(self.arr()?))
    }
    /// An `f64`.
    pub fn f64(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.arr()?))
    }
    /// An `FVector` (3 × f32, or 3 × f64 in UE5 files), widened to f64.
    pub(crate) fn vec3(&mut self) -> Option<[f64; 3]> {
        if self.f64v {
            Some([self.f64()?, self.f64()?, self.f64()?])
        } else {
            Some([
                f64::from(self.f32()?),
                f64::from(self.f32()?),
                f64::from(self.f32()?),
            ])
        }
    }
    /// A CARLA string: `u16` length + UTF-8 bytes (invalid UTF-8 is replaced lossily by callers).
    pub fn str(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()? as usize;
        self.bytes(n)
    }
}

/// Text of a CARLA string (lossy for invalid UTF-8).
pub fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// `FrameStart` body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameStart {
    /// Recorder frame counter (1, 2, ...).
    pub id: u64,
    /// This frame's duration (s), -1 when never patched (last frame).
    pub duration: f64,
    /// Seconds since recording start.
    pub elapsed: f64,
}

impl FrameStart {
    /// Parses a FrameStart body (at least 24 bytes).
    pub fn parse(b: &[u8]) -> Option<Self> {
        let mut c = Cur::new(b, false);
        Some(Self {
            id: c.u64()?,
            duration: c.f64()?,
            elapsed: c.f64()?,
        })
    }
}

/// One `EventAdd` record, borrowed from the packet.
#[derive(Debug, Clone)]
pub struct EventAdd<'a> {
    /// Actor id.
    pub id: u32,
    /// `FCarlaActor::ActorType`.
    pub actor_type: u8,
    /// Location (cm).
    pub location: [f64; 3],
    /// Rotation (roll, pitch, yaw) in degrees.
    pub rotation: [f64; 3],
    /// Blueprint definition uid.
    pub(crate) uid: u32,
    /// Blueprint id.
    pub blueprint: &'a [u8],
    /// Attributes: (type, id, value).
    pub attributes: Vec<(u8, &'a [u8], &'a [u8])>,
}

impl<'a> EventAdd<'a> {
    /// Parses one record at the cursor.
    pub fn parse(c: &mut Cur<'a>) -> Option<Self> {
        let id = c.u32()?;
        let actor_type = c.u8()?;
        let location = c.vec3()?;
        let rotation = c.vec3()?;
        let uid = c.u32()?;
        let blueprint = c.str()?;
        let n = c.u16()? as usize;
        // Each attribute takes at least 5 bytes: bound the allocation by what is left.
        let mut attributes = Vec::with_capacity(n.min(c.left() / 5));
        for _ in 0..n {
            let ty = c.u8()?;
            let k = c.str()?;
            let v = c.str()?;
            attributes.push((ty, k, v));
        }
        Some(Self {
            id,
            actor_type,
            location,
            rotation,
            uid,
            blueprint,
            attributes,
        })
    }
}

/// Parses every EventAdd record of a packet body; `None` when it does not parse exactly.
pub(crate) fn parse_event_adds(body: &[u8], f64v: bool) -> Option<Vec<EventAdd<'_>>> {
    let mut c = Cur::new(body, f64v);
    let n = c.u16()? as usize;
    let mut out = Vec::with_capacity(n.min(body.len() / 8));
    for _ in 0..n {
        out.push(EventAdd::parse(&mut c)?);
    }
    (c.left() == 0).then_some(out)
}

/// One `WheelPhysicsControl`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct WheelPhysics {
    /// Tire friction.
    pub(crate) tire_friction: f32,
    /// Damping rate.
    pub(crate) damping_rate: f32,
    /// Max steer angle (deg).
    pub(crate) max_steer_angle: f32,
    /// Radius (cm).
    pub radius: f32,
    /// Max brake torque (Nm).
    pub(crate) max_brake_torque: f32,
    /// Max handbrake torque (Nm).
    pub(crate) max_handbrake_torque: f32,
    /// Lateral stiffness max load (0.9.12+).
    pub(crate) lat_stiff_max_load: Option<f32>,
    /// Lateral stiffness value (0.9.12+).
    pub(crate) lat_stiff_value: Option<f32>,
    /// Longitudinal stiffness value (0.9.12+).
    pub(crate) long_stiff_value: Option<f32>,
    /// Position (world, cm).
    pub position: [f64; 3],
}

/// One `PhysicsControl` record.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PhysicsControl {
    /// Actor id.
    pub id: u32,
    /// max_rpm, moi, damping full throttle, damping zero throttle clutch engaged / disengaged.
    pub engine: [f32; 5],
    /// Automatic gear box.
    pub(crate) use_gear_autobox: bool,
    /// clutch_strength, final_ratio, mass, drag_coefficient.
    pub(crate) misc: [f32; 4],
    /// Centre of mass (as stored).
    pub(crate) center_of_mass: [f64; 3],
    /// Torque curve, (rpm, torque) pairs.
    pub(crate) torque_curve: Vec<[f32; 2]>,
    /// Forward gears (ratio, down_ratio, up_ratio).
    pub(crate) forward_gears: Vec<[f32; 3]>,
    /// Steering curve (speed, steer) pairs.
    pub(crate) steering_curve: Vec<[f32; 2]>,
    /// Wheels.
    pub wheels: Vec<WheelPhysics>,
}

impl PhysicsControl {
    /// Parses one record; `wheel_bytes` is 48 or 36.
    pub(crate) fn parse(c: &mut Cur<'_>, wheel_bytes: usize) -> Option<Self> {
        let id = c.u32()?;
        let engine = [c.f32()?, c.f32()?, c.f32()?, c.f32()?, c.f32()?];
        let use_gear_autobox = c.bool()?;
        let misc = [c.f32()?, c.f32()?, c.f32()?, c.f32()?];
        let center_of_mass = c.vec3()?;
        let mut pc = Self {
            id,
            engine,
            use_gear_autobox,
            misc,
            center_of_mass,
            ..Default::default()
        };
        let n = c.u32()? as usize;
        let n = if n.checked_mul(8)? <= c.left() {
            n
        } else {
            return None;
        };
        for _ in 0..n {
            pc.torque_curve.push([c.f32()?, c.f32()?]);
        }
        let n = c.u32()? as usize;
        let n = if n.checked_mul(12)? <= c.left() {
            n
        } else {
            return None;
        };
        for _ in 0..n {
            pc.forward_gears.push([c.f32()?, c.f32()?, c.f32()?]);
        }
        let n = c.u32()? as usize;
        let n = if n.checked_mul(8)? <= c.left() {
            n
        } else {
            return None;
        };
        for _ in 0..n {
            pc.steering_curve.push([c.f32()?, c.f32()?]);
        }
        let n = c.u32()? as usize;
        let n = if n.checked_mul(wheel_bytes)? <= c.left() {
            n
        } else {
            return None;
        };
        for _ in 0..n {
            let mut w = WheelPhysics {
                tire_friction: c.f32()?,
                damping_rate: c.f32()?,
                max_steer_angle: c.f32()?,
                radius: c.f32()?,
                max_brake_torque: c.f32()?,
                max_handbrake_torque: c.f32()?,
                ..Default::default()
            };
            if wheel_bytes >= 48 {
                w.lat_stiff_max_load = Some(c.f32()?);
                w.lat_stiff_value = Some(c.f32()?);
                w.long_stiff_value = Some(c.f32()?);
            }
            w.position = c.vec3()?;
            pc.wheels.push(w);
        }
        Some(pc)
    }
}

/// Parses a whole PhysicsControl packet body; `None` unless it parses exactly.
pub(crate) fn parse_physics(
    body: &[u8],
    f64v: bool,
    wheel_bytes: usize,
) -> Option<Vec<PhysicsControl>> {
    let mut c = Cur::new(body, f64v);
    let n = c.u16()? as usize;
    let mut out = Vec::with_capacity(n.min(body.len() / 53));
    for _ in 0..n {
        out.push(PhysicsControl::parse(&mut c, wheel_bytes)?);
    }
    (c.left() == 0).then_some(out)
}

/// Wheel size that makes a PhysicsControl body parse exactly: 48, else 36.
pub(crate) fn detect_wheel_bytes(body: &[u8], f64v: bool) -> Option<usize> {
    [48usize, 36]
        .into_iter()
        .find(|&w| parse_physics(body, f64v, w).is_some())
}

/// One bone of a `WalkerBones` record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bone<'a> {
    /// Bone name.
    pub name: &'a [u8],
    /// Location relative to the parent bone (cm).
    pub location: [f64; 3],
    /// Rotation relative to the parent bone (roll, pitch, yaw, deg).
    pub rotation: [f64; 3],
}

impl<'a> Bone<'a> {
    /// Parses one bone.
    pub(crate) fn parse(c: &mut Cur<'a>) -> Option<Self> {
        Some(Self {
            name: c.str()?,
            location: c.vec3()?,
            rotation: c.vec3()?,
        })
    }
}

/// Light flag names in CARLA's query order (bit, name).
pub(crate) const LIGHT_FLAGS: [(u32, &str); 11] = [
    (0x1, "Position"),
    (0x2, "LowBeam"),
    (0x4, "HighBeam"),
    (0x8, "Brake"),
    (0x10, "RightBlinker"),
    (0x20, "LeftBlinker"),
    (0x40, "Reverse"),
    (0x100, "Interior"),
    (0x80, "Fog"),
    (0x200, "Special1"),
    (0x400, "Special2"),
];

/// Writes the enabled light names of `state`, space separated, into `out` (cleared first).
pub(crate) fn light_names(state: u32, out: &mut String) {
    out.clear();
    for (bit, name) in LIGHT_FLAGS {
        if state & bit != 0 {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(name);
        }
    }
}

/// Door names (`EVehicleDoor`).
pub(crate) fn door_name(d: u8) -> Option<&'static str> {
    Some(match d {
        0 => "Front Left",
        1 => "Front Right",
        2 => "Rear Left",
        3 => "Rear Right",
        4 => "Hood",
        5 => "Trunk",
        6 => "All",
        _ => return None,
    })
}

/// Traffic light state names.
pub(crate) fn light_state_name(s: u8) -> &'static str {
    match s {
        0 => "Red",
        1 => "Yellow",
        2 => "Green",
        3 => "Off",
        _ => "Unknown",
    }
}

/// Scene light group names.
pub(crate) fn light_group_name(g: u8) -> &'static str {
    match g {
        0 => "None",
        1 => "Vehicle",
        2 => "Street",
        3 => "Building",
        4 => "Other",
        _ => "Unknown",
    }
}

/// Wheel location names (`EVehicleWheelLocation`).
pub(crate) fn wheel_location_name(w: u8) -> &'static str {
    match w {
        0 => "FL",
        1 => "FR",
        2 => "BL",
        3 => "BR",
        4 => "ML",
        5 => "MR",
        _ => "unknown",
    }
}
