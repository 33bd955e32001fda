#!/usr/bin/env python3
"""Decode rate of the official Python MCAP decoders, for comparison with
`cargo bench --bench decode` (same files, same topics).

For each case, reads the topic's raw payloads once, then times decoding them
with the official decoder factory (`mcap_ros1`, `mcap_ros2`,
`mcap_protobuf`; `json.loads` for JSON), repeated to 10,000 messages, best of
5 runs. Prints one line per case: messages per second on one core.

`protobuf_imu` decodes the IMU-shaped protobuf messages `cargo bench --bench
decode` writes to target/bench-data/imu_pb.{fds,bin}, with the `protobuf`
package (upb backend): parsing alone (upb builds Python objects lazily) and
parsing plus reading every field, which is what logsql's decoders do when
they fill typed columns.

Usage: python_decode.py DEMO_MCAP DECODE_FIXTURE_DIR [BENCH_DATA_DIR]
"""

import json
import sys
import time

from mcap.reader import make_reader

BATCH = 10_000


def payloads(path, topic):
    with open(path, "rb") as f:
        reader = make_reader(f)
        out = []
        schema = channel = None
        for s, c, m in reader.iter_messages(topics=[topic]):
            schema, channel = s, c
            out.append(m.data)
    return schema, channel, out


def decoder(schema, channel):
    enc = channel.message_encoding
    if enc == "ros1":
        from mcap_ros1.decoder import DecoderFactory
    elif enc == "cdr":
        from mcap_ros2.decoder import DecoderFactory
    elif enc == "protobuf":
        from mcap_protobuf.decoder import DecoderFactory
    elif enc == "json":
        return json.loads
    else:
        raise SystemExit(f"no decoder for {enc}")
    return DecoderFactory().decoder_for(enc, schema)


def read_all_fields(msg):
    """Touches every set field (recursively), as filling columns does."""
    n = 0
    for field, value in msg.ListFields():
        repeated = getattr(field, "is_repeated", None)
        if repeated is None:  # protobuf < 5
            repeated = field.label == field.LABEL_REPEATED
        if field.type == field.TYPE_MESSAGE:
            if repeated:
                for v in value:
                    n += read_all_fields(v)
            else:
                n += read_all_fields(value)
        elif repeated:
            n += len(list(value))
        else:
            n += 1
    return n


def protobuf_imu(data_dir):
    import struct

    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    with open(f"{data_dir}/imu_pb.fds", "rb") as f:
        fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file in fds.file:
        pool.Add(file)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Imu"))
    with open(f"{data_dir}/imu_pb.bin", "rb") as f:
        raw = f.read()
    data, off = [], 0
    while off < len(raw):
        (n,) = struct.unpack_from("<I", raw, off)
        data.append(raw[off + 4 : off + 4 + n])
        off += 4 + n
    batch = [data[i % len(data)] for i in range(BATCH)]
    for label, work in [
        ("parse only", lambda p: cls.FromString(p)),
        ("parse + read every field", lambda p: read_all_fields(cls.FromString(p))),
    ]:
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for p in batch:
                work(p)
            best = min(best, time.perf_counter() - t0)
        print(f"protobuf_imu ({label})\t{BATCH / best:.0f} msg/s\t({best * 1e3:.1f} ms per {BATCH})")


def main():
    demo, fixtures = sys.argv[1], sys.argv[2]
    data_dir = sys.argv[3] if len(sys.argv) > 3 else None
    if data_dir:
        protobuf_imu(data_dir)
    cases = [
        ("ros1_imu", demo, "/imu"),
        ("cdr_imu", f"{fixtures}/ros2.mcap", "/imu"),
        ("protobuf_pose", f"{fixtures}/protobuf.mcap", "/fixture/pose"),
        ("json_state", f"{fixtures}/json.mcap", "/state"),
    ]
    for name, path, topic in cases:
        schema, channel, data = payloads(path, topic)
        batch = [data[i % len(data)] for i in range(BATCH)]
        decode = decoder(schema, channel)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for p in batch:
                decode(p)
            best = min(best, time.perf_counter() - t0)
        print(f"{name}\t{BATCH / best:.0f} msg/s\t({best * 1e3:.1f} ms per {BATCH})")


if __name__ == "__main__":
    main()
