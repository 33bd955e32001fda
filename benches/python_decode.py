#!/usr/bin/env python3
"""Decode rate of the official Python MCAP decoders, for comparison with
`cargo bench --bench decode` (same files, same topics).

For each case, reads the topic's raw payloads once, then times decoding them
with the official decoder factory (`mcap_ros1`, `mcap_ros2`,
`mcap_protobuf`; `json.loads` for JSON), repeated to 10,000 messages, best of
5 runs. Prints one line per case: messages per second on one core.

Usage: python_decode.py DEMO_MCAP DECODE_FIXTURE_DIR
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


def main():
    demo, fixtures = sys.argv[1], sys.argv[2]
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
