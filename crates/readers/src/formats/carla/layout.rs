//! Packet kinds, the per-file packet-id layout and its detection.
//!
//! CARLA numbers its packets with a `u8` enum whose tail changed between
//! releases (see the module docs of [`super`]): ids 21..23 mean different
//! packets in 0.9.15, in ue4-dev builds of Nov 2023 – Mar 2025 and in 0.9.16,
//! UE5 builds write `f64` vectors, and 0.9.10/0.9.11 store 36-byte wheel physics
//! instead of 48. [`Layout`] records what was found in the file itself.

/// One kind of packet. The discriminant is the kind's id in CARLA 0.9.16 (the
/// synthetic channel id); [`Layout::kind`] maps a file's raw ids to kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    /// `FrameStart`: frame id, duration, elapsed.
    FrameStart = 0,
    /// `FrameEnd`: empty.
    FrameEnd = 1,
    /// `EventAdd`: actors created.
    EventAdd = 2,
    /// `EventDel`: actors destroyed.
    EventDel = 3,
    /// `EventParent`: attachments.
    EventParent = 4,
    /// `Collision`.
    Collision = 5,
    /// `Position`: actor transforms.
    Position = 6,
    /// `State`: traffic-light states.
    State = 7,
    /// `AnimVehicle`: vehicle controls.
    AnimVehicle = 8,
    /// `AnimWalker`: walker speeds.
    AnimWalker = 9,
    /// `VehicleLight`: vehicle light flags.
    VehicleLight = 10,
    /// `SceneLight`: street/building lights.
    SceneLight = 11,
    /// `Kinematics`: velocities (additional data).
    Kinematics = 12,
    /// `BoundingBox` (additional data).
    BoundingBox = 13,
    /// `PlatformTime`: wall-clock seconds since start (additional data).
    PlatformTime = 14,
    /// `PhysicsControl`: vehicle physics (additional data).
    PhysicsControl = 15,
    /// `TrafficLightTime`: light phase durations (additional data).
    TrafficLightTime = 16,
    /// `TriggerVolume` (additional data).
    TriggerVolume = 17,
    /// `FrameCounter` (defined, never written to files).
    FrameCounter = 18,
    /// `WalkerBones` (additional data, 0.9.14+).
    WalkerBones = 19,
    /// `VisualTime` (0.9.14+).
    VisualTime = 20,
    /// `AnimVehicleWheels` (0.9.15+).
    AnimVehicleWheels = 21,
    /// `AnimBiker` (0.9.15+).
    AnimBiker = 22,
    /// `VehicleDoor` (ue4-dev 2024: id 21; 0.9.16: id 23).
    VehicleDoor = 23,
    /// `Weather` (ue4-dev 2026; layout not decoded).
    Weather = 24,
}

/// Every kind, in canonical id order.
pub const KINDS: [Kind; 25] = [
    Kind::FrameStart,
    Kind::FrameEnd,
    Kind::EventAdd,
    Kind::EventDel,
    Kind::EventParent,
    Kind::Collision,
    Kind::Position,
    Kind::State,
    Kind::AnimVehicle,
    Kind::AnimWalker,
    Kind::VehicleLight,
    Kind::SceneLight,
    Kind::Kinematics,
    Kind::BoundingBox,
    Kind::PlatformTime,
    Kind::PhysicsControl,
    Kind::TrafficLightTime,
    Kind::TriggerVolume,
    Kind::FrameCounter,
    Kind::WalkerBones,
    Kind::VisualTime,
    Kind::AnimVehicleWheels,
    Kind::AnimBiker,
    Kind::VehicleDoor,
    Kind::Weather,
];

impl Kind {
    /// The channel topic (snake case).
    pub fn topic(self) -> &'static str {
        match self {
            Kind::FrameStart => "frame_start",
            Kind::FrameEnd => "frame_end",
            Kind::EventAdd => "event_add",
            Kind::EventDel => "event_del",
            Kind::EventParent => "event_parent",
            Kind::Collision => "collision",
            Kind::Position => "position",
            Kind::State => "traffic_light",
            Kind::AnimVehicle => "vehicle_animation",
            Kind::AnimWalker => "walker_animation",
            Kind::VehicleLight => "vehicle_light",
            Kind::SceneLight => "scene_light",
            Kind::Kinematics => "kinematics",
            Kind::BoundingBox => "bounding_box",
            Kind::PlatformTime => "platform_time",
            Kind::PhysicsControl => "physics_control",
            Kind::TrafficLightTime => "traffic_light_time",
            Kind::TriggerVolume => "trigger_volume",
            Kind::FrameCounter => "frame_counter",
            Kind::WalkerBones => "bones",
            Kind::VisualTime => "visual_time",
            Kind::AnimVehicleWheels => "wheels",
            Kind::AnimBiker => "biker",
            Kind::VehicleDoor => "door",
            Kind::Weather => "weather",
        }
    }

    /// CARLA's own packet name (`carla.<name>` is the message type).
    pub(crate) fn carla_name(self) -> &'static str {
        match self {
            Kind::FrameStart => "FrameStart",
            Kind::FrameEnd => "FrameEnd",
            Kind::EventAdd => "EventAdd",
            Kind::EventDel => "EventDel",
            Kind::EventParent => "EventParent",
            Kind::Collision => "Collision",
            Kind::Position => "Position",
            Kind::State => "State",
            Kind::AnimVehicle => "AnimVehicle",
            Kind::AnimWalker => "AnimWalker",
            Kind::VehicleLight => "VehicleLight",
            Kind::SceneLight => "SceneLight",
            Kind::Kinematics => "Kinematics",
            Kind::BoundingBox => "BoundingBox",
            Kind::PlatformTime => "PlatformTime",
            Kind::PhysicsControl => "PhysicsControl",
            Kind::TrafficLightTime => "TrafficLightTime",
            Kind::TriggerVolume => "TriggerVolume",
            Kind::FrameCounter => "FrameCounter",
            Kind::WalkerBones => "WalkerBones",
            Kind::VisualTime => "VisualTime",
            Kind::AnimVehicleWheels => "AnimVehicleWheels",
            Kind::AnimBiker => "AnimBiker",
            Kind::VehicleDoor => "VehicleDoor",
            Kind::Weather => "Weather",
        }
    }

    /// The synthetic channel id of this kind (its 0.9.16 packet id).
    pub fn channel_id(self) -> u64 {
        self as u64
    }
}

/// Synthetic channel id of a packet id that no known kind uses: 256 + id.
pub(crate) fn unknown_channel_id(raw: u8) -> u64 {
    256 + u64::from(raw)
}

/// Which packets ids 21, 22 and 23 are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailIds {
    /// No packet with id 21..23 in the file (0.9.14 and older): read as 0.9.16.
    None,
    /// 0.9.15: 21 wheels, 22 biker (no door packet).
    V0915,
    /// ue4-dev builds of Nov 2023 – Mar 2025: 21 door, 22 wheels, 23 biker.
    Ue4Dev2024,
    /// 0.9.16: 21 wheels, 22 biker, 23 door.
    V0916,
}

/// What the file's own bytes say about its layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Meaning of ids 21..23.
    pub tail: TailIds,
    /// `true`: vectors are 3 × f64 (UE5, CARLA 0.10.x); else 3 × f32.
    pub f64_vectors: bool,
    /// Size of one `WheelPhysicsControl` in PhysicsControl packets (48, or 36 for 0.9.10/0.9.11).
    pub wheel_physics_bytes: usize,
    /// Whether the wheel physics size was seen (a PhysicsControl packet parsed exactly).
    pub wheel_physics_known: bool,
    /// Whether the file has VisualTime packets (0.9.14+).
    pub(crate) has_visual_time: bool,
}

impl Default for Layout {
    fn default() -> Self {
        Self {
            tail: TailIds::None,
            f64_vectors: false,
            wheel_physics_bytes: 48,
            wheel_physics_known: false,
            has_visual_time: false,
        }
    }
}

impl Layout {
    /// The kind of raw packet id `raw` in this file, `None` for unknown ids.
    pub fn kind(&self, raw: u8) -> Option<Kind> {
        match raw {
            0..=20 => KINDS.get(raw as usize).copied(),
            21 => Some(match self.tail {
                TailIds::Ue4Dev2024 => Kind::VehicleDoor,
                _ => Kind::AnimVehicleWheels,
            }),
            22 => Some(match self.tail {
                TailIds::Ue4Dev2024 => Kind::AnimVehicleWheels,
                _ => Kind::AnimBiker,
            }),
            23 => Some(match self.tail {
                TailIds::Ue4Dev2024 => Kind::AnimBiker,
                _ => Kind::VehicleDoor,
            }),
            24 => Some(Kind::Weather),
            _ => None,
        }
    }

    /// The raw id of `kind` in this file.
    pub(crate) fn raw_id(&self, kind: Kind) -> u8 {
        match (self.tail, kind) {
            (TailIds::Ue4Dev2024, Kind::VehicleDoor) => 21,
            (TailIds::Ue4Dev2024, Kind::AnimVehicleWheels) => 22,
            (TailIds::Ue4Dev2024, Kind::AnimBiker) => 23,
            _ => kind as u8,
        }
    }

    /// Whether 0.9.15+ query wording applies ("Rotation:" and "Brake:" with colons).
    pub(crate) fn query_colons(&self) -> bool {
        !matches!(self.tail, TailIds::None) || self.f64_vectors
    }

    /// Whether actor type 5 means Sensor (0.9.12+) rather than INVALID (0.9.10/0.9.11).
    pub(crate) fn has_sensor_type(&self) -> bool {
        !(self.wheel_physics_known && self.wheel_physics_bytes == 36)
    }

    /// The CARLA release(s) this layout matches, for `logsql info`.
    pub(crate) fn version_label(&self) -> &'static str {
        if self.f64_vectors {
            return "0.10.x (UE5)";
        }
        match self.tail {
            TailIds::V0916 => "0.9.16",
            TailIds::Ue4Dev2024 => "ue4-dev (Nov 2023 - Mar 2025)",
            TailIds::V0915 => "0.9.15",
            TailIds::None if self.has_visual_time => "0.9.14",
            TailIds::None if self.wheel_physics_known && self.wheel_physics_bytes == 36 => {
                "0.9.10/0.9.11"
            }
            TailIds::None if self.wheel_physics_known => "0.9.12/0.9.13",
            TailIds::None => "0.9.10-0.9.13",
        }
    }

    /// The id assignment of 21..23 as text, for `logsql info`.
    pub(crate) fn tail_label(&self) -> &'static str {
        match self.tail {
            TailIds::None => "none",
            TailIds::V0915 => "21=wheels 22=biker",
            TailIds::Ue4Dev2024 => "21=door 22=wheels 23=biker",
            TailIds::V0916 => "21=wheels 22=biker 23=door",
        }
    }
}

/// Actor type names (`FCarlaActor::ActorType`).
pub(crate) fn actor_type_name(ty: u8, has_sensor: bool) -> &'static str {
    match (ty, has_sensor) {
        (0, _) => "other",
        (1, _) => "vehicle",
        (2, _) => "walker",
        (3, _) => "traffic_light",
        (4, _) => "traffic_sign",
        (5, true) => "sensor",
        (5, false) | (6, true) => "invalid",
        _ => "unknown",
    }
}
