//! An IMU-sized protobuf message for decode benchmarks and tests: the shape
//! of sensor_msgs/Imu (header with a `google.protobuf.Timestamp`, frame id and
//! sequence; a quaternion; two vectors; three 9-element covariances; ~330
//! bytes), built from descriptors at run time so no `.proto` file is needed.
//! Used by `benches/decode.rs` and `tests/it/decode_protobuf.rs`.

use prost::Message as _;
use prost_reflect::prost_types::field_descriptor_proto::{Label, Type};
use prost_reflect::prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use prost_reflect::{DescriptorPool, DynamicMessage, Value as PValue};

/// A field descriptor.
pub fn field(
    name: &str,
    number: i32,
    ty: Type,
    label: Label,
    type_name: &str,
) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(label as i32),
        r#type: Some(ty as i32),
        type_name: (!type_name.is_empty()).then(|| type_name.into()),
        ..Default::default()
    }
}

/// An optional (singular) field descriptor.
pub fn opt(name: &str, number: i32, ty: Type, type_name: &str) -> FieldDescriptorProto {
    field(name, number, ty, Label::Optional, type_name)
}

/// A repeated field descriptor.
pub fn rep(name: &str, number: i32, ty: Type, type_name: &str) -> FieldDescriptorProto {
    field(name, number, ty, Label::Repeated, type_name)
}

/// An IMU message like sensor_msgs/Imu: header (stamp, frame_id, seq),
/// quaternion, two vectors and three 9-element covariances (~330 bytes).
pub fn imu_pool() -> DescriptorPool {
    let dbl = |n: &str, i| opt(n, i, Type::Double, "");
    let msg = |name: &str, field: Vec<FieldDescriptorProto>| DescriptorProto {
        name: Some(name.into()),
        field,
        ..Default::default()
    };
    let file = FileDescriptorProto {
        name: Some("imu.proto".into()),
        package: Some("bench".into()),
        dependency: vec!["google/protobuf/timestamp.proto".into()],
        message_type: vec![
            msg(
                "Header",
                vec![
                    opt("stamp", 1, Type::Message, ".google.protobuf.Timestamp"),
                    opt("frame_id", 2, Type::String, ""),
                    opt("seq", 3, Type::Uint32, ""),
                ],
            ),
            msg(
                "Quaternion",
                vec![dbl("x", 1), dbl("y", 2), dbl("z", 3), dbl("w", 4)],
            ),
            msg("Vector3", vec![dbl("x", 1), dbl("y", 2), dbl("z", 3)]),
            msg(
                "Imu",
                vec![
                    opt("header", 1, Type::Message, ".bench.Header"),
                    opt("orientation", 2, Type::Message, ".bench.Quaternion"),
                    rep("orientation_covariance", 3, Type::Double, ""),
                    opt("angular_velocity", 4, Type::Message, ".bench.Vector3"),
                    rep("angular_velocity_covariance", 5, Type::Double, ""),
                    opt("linear_acceleration", 6, Type::Message, ".bench.Vector3"),
                    rep("linear_acceleration_covariance", 7, Type::Double, ""),
                ],
            ),
        ],
        syntax: Some("proto3".into()),
        ..Default::default()
    };
    let mut pool = DescriptorPool::global();
    pool.add_file_descriptor_proto(file).unwrap();
    pool
}

/// The IMU payload number `i`.
pub fn imu_payload(pool: &DescriptorPool, i: u32) -> Vec<u8> {
    let m = |name: &str, values: &[(&str, PValue)]| {
        let mut m = DynamicMessage::new(pool.get_message_by_name(name).unwrap());
        for (k, v) in values {
            m.set_field_by_name(k, v.clone());
        }
        PValue::Message(m)
    };
    let f = f64::from(i);
    let v3 = |a: f64| {
        m(
            "bench.Vector3",
            &[
                ("x", PValue::F64(a + 0.1)),
                ("y", PValue::F64(a - 0.2)),
                ("z", PValue::F64(9.81 + a * 1e-3)),
            ],
        )
    };
    let cov = |s: f64| {
        PValue::List(
            (0..9)
                .map(|k| PValue::F64(s * f64::from(k) + 0.01))
                .collect(),
        )
    };
    let ts = m(
        "google.protobuf.Timestamp",
        &[
            ("seconds", PValue::I64(1_700_000_000 + i64::from(i / 100))),
            ("nanos", PValue::I32((i % 100) as i32 * 10_000_000 + 12345)),
        ],
    );
    let header = m(
        "bench.Header",
        &[
            ("stamp", ts),
            ("frame_id", PValue::String("imu_link".into())),
            ("seq", PValue::U32(i)),
        ],
    );
    let PValue::Message(imu) = m(
        "bench.Imu",
        &[
            ("header", header),
            (
                "orientation",
                m(
                    "bench.Quaternion",
                    &[
                        ("x", PValue::F64(0.01 * f)),
                        ("y", PValue::F64(-0.02)),
                        ("z", PValue::F64(0.7)),
                        ("w", PValue::F64(0.71)),
                    ],
                ),
            ),
            ("orientation_covariance", cov(0.5)),
            ("angular_velocity", v3(f * 1e-3)),
            ("angular_velocity_covariance", cov(0.25)),
            ("linear_acceleration", v3(-f * 1e-3)),
            ("linear_acceleration_covariance", cov(0.125)),
        ],
    ) else {
        unreachable!()
    };
    imu.encode_to_vec()
}
