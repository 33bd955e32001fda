#!/usr/bin/env python3
"""Interop test: camera images in recordings written by the official Python
writers, read back by logsql's ``read_images`` and compared with Pillow and
with numpy references of the documented conversions.

Writes four recordings holding the same images:

- an MCAP of ``foxglove.CompressedImage`` / ``foxglove.RawImage`` protobuf
  messages (``mcap-protobuf-support`` with ``foxglove-schemas-protobuf``);
- an MCAP of ROS 2 CDR ``sensor_msgs/msg/Image`` / ``CompressedImage``
  (``mcap-ros2-support``);
- a ROS1 bag and a ROS 2 .db3 (``rosbags`` writers).

The images: JPEG (colour and grey, written by Pillow), PNG (RGB, RGBA, 8 and
16-bit grey, written by Pillow) and a raw image of every encoding
``read_images`` handles, with padded rows (and big-endian 16-bit and float
samples where the message has ``is_bigendian``). Checks:

- encoding, width and height equal Pillow's for compressed images, the
  message's for raw ones;
- PNG pixels equal Pillow's decode exactly; JPEG pixels within PSNR >= 40 dB
  of Pillow's decode;
- raw pixels (as rgb8, mono8 and mono16) equal a numpy implementation of the
  conversions docs/images.md states (bilinear Bayer, BT.601 YUV, luma);
- ``image_thumbnail`` PNGs have the documented size; ``image_encode`` PNGs
  decode (with Pillow) to the same pixels (a PNG comes back as recorded).

Usage: images_interop.py --logsql PATH/TO/logsql [--keep DIR]
"""

import argparse
import io
import math
import os
import sys
import tempfile

import numpy as np
from PIL import Image

from common import Checks, Logsql

BASE = 1_700_000_000_000_000_000
W, H, PAD = 10, 6, 3

RAW = ["rgb8", "bgr8", "rgba8", "bgra8", "mono8", "8UC1", "mono16", "16UC1", "32FC1",
       "bayer_rggb8", "bayer_bggr8", "bayer_gbrg8", "bayer_grbg8", "yuv422", "uyvy", "yuyv"]
BYTES = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1, "8UC1": 1, "mono16": 2,
         "16UC1": 2, "32FC1": 4, "yuv422": 2, "uyvy": 2, "yuyv": 2}


# ---------------------------------------------------------------- references

def luma(rgb):
    r, g, b = (rgb[..., i].astype(np.uint32) for i in range(3))
    return ((19595 * r + 38470 * g + 7471 * b + 32768) >> 16).astype(np.uint8)


def demosaic(raw, pattern):
    """Bilinear, mirrored borders (numpy 'reflect' excludes the edge)."""
    h, w = raw.shape
    p = np.pad(raw.astype(np.int64), 1, mode="reflect")
    at = lambda dx, dy: p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
    across = (at(-1, 0) + at(1, 0) + 1) // 2
    updown = (at(0, -1) + at(0, 1) + 1) // 2
    edges = (at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1) + 2) // 4
    corners = (at(-1, -1) + at(1, -1) + at(-1, 1) + at(1, 1) + 2) // 4
    own = raw.astype(np.int64)
    cell = {"rggb": "RGGB", "bggr": "BGGR", "gbrg": "GBRG", "grbg": "GRBG"}[pattern]
    ys, xs = np.mgrid[0:h, 0:w]
    colour = np.array(list(cell)).reshape(2, 2)[ys % 2, xs % 2]
    row_colour = np.array(list(cell)).reshape(2, 2)[ys % 2, (xs + 1) % 2]
    out = np.zeros((h, w, 3), dtype=np.int64)
    for c, i in (("R", 0), ("B", 2)):
        m = colour == c
        out[..., i][m] = own[m]
        out[..., 1][m] = edges[m]
        out[..., 2 - i][m] = corners[m]
    g = colour == "G"
    red_row = g & (row_colour == "R")
    blue_row = g & (row_colour == "B")
    out[..., 1][g] = own[g]
    out[..., 0][red_row] = across[red_row]
    out[..., 2][red_row] = updown[red_row]
    out[..., 2][blue_row] = across[blue_row]
    out[..., 0][blue_row] = updown[blue_row]
    return out.astype(np.uint8)


def yuv_rgb(y, u, v):
    y = np.maximum(y.astype(np.int64) - 16, 0) * 1_220_945 + (1 << 19)
    u = u.astype(np.int64) - 128
    v = v.astype(np.int64) - 128
    c = lambda x: np.clip(x >> 20, 0, 255).astype(np.uint8)
    return np.stack([c(y + 1_673_555 * v), c(y - 410_793 * u - 852_458 * v), c(y + 2_115_221 * u)], axis=-1)


def raw_image(enc, rng, big_endian):
    """(data with padded rows, step, {format: expected bytes})."""
    if enc == "32FC1":
        f = rng.uniform(-0.2, 1.2, size=(H, W)).astype(np.float32)
        f[0, 0] = np.nan
        rows = f.astype(">f4" if big_endian else "<f4").view(np.uint8).reshape(H, W * 4)
        prod = (np.clip(np.nan_to_num(f, nan=0.0), 0, 1).astype(np.float32) * np.float32(65535)).astype(np.float64)
        v16 = np.floor(prod + 0.5).astype(np.uint16)
        v16[0, 0] = 0
    elif enc in ("mono16", "16UC1"):
        v16 = rng.integers(0, 65536, size=(H, W), dtype=np.uint16)
        rows = v16.astype(">u2" if big_endian else "<u2").view(np.uint8).reshape(H, W * 2)
    else:
        n = BYTES.get(enc, 1)
        rows = rng.integers(0, 256, size=(H, W * n), dtype=np.uint8)
    step = rows.shape[1] + PAD
    padded = np.full((H, step), 0xEE, dtype=np.uint8)
    padded[:, :rows.shape[1]] = rows
    if enc in ("mono16", "16UC1", "32FC1"):
        mono16 = v16
        rgb = np.repeat((v16 >> 8).astype(np.uint8)[..., None], 3, axis=-1)
        mono8 = (v16 >> 8).astype(np.uint8)
    elif enc in ("mono8", "8UC1"):
        mono8 = rows
        rgb = np.repeat(rows[..., None], 3, axis=-1)
        mono16 = rows.astype(np.uint16) * 257
    else:
        px = rows.reshape(H, W, -1) if not enc.startswith(("bayer", "yuv", "uyvy", "yuyv")) else None
        if enc == "rgb8":
            rgb = px
        elif enc == "bgr8":
            rgb = px[..., ::-1]
        elif enc == "rgba8":
            rgb = px[..., :3]
        elif enc == "bgra8":
            rgb = px[..., 2::-1]
        elif enc.startswith("bayer"):
            rgb = demosaic(rows, enc[6:10])
        else:
            q = rows.reshape(H, W // 2, 4)
            if enc == "yuyv":
                y0, u, y1, v = (q[..., i] for i in range(4))
            else:
                u, y0, v, y1 = (q[..., i] for i in range(4))
            rgb = np.stack([yuv_rgb(y0, u, v), yuv_rgb(y1, u, v)], axis=2).reshape(H, W, 3)
        mono8 = luma(rgb)
        mono16 = mono8.astype(np.uint16) * 257
    expected = {
        "rgb8": np.ascontiguousarray(rgb).astype(np.uint8).tobytes(),
        "mono8": np.ascontiguousarray(mono8).astype(np.uint8).tobytes(),
        "mono16": np.ascontiguousarray(mono16).astype("<u2").tobytes(),
    }
    return padded.tobytes(), step, expected


def compressed_images(rng):
    """(name, format, bytes) of Pillow-written JPEGs and PNGs."""
    ys, xs = np.mgrid[0:48, 0:64]
    smooth = np.stack([xs * 4, ys * 5, (xs + ys) * 2], axis=-1).clip(0, 255).astype(np.uint8)
    out = []
    for name, img, fmt, kw in [
        ("jpeg_rgb", Image.fromarray(smooth, "RGB"), "JPEG", {"quality": 92}),
        ("jpeg_grey", Image.fromarray(smooth[..., 1], "L"), "JPEG", {"quality": 92}),
        ("png_rgb", Image.fromarray(rng.integers(0, 256, (17, 23, 3), dtype=np.uint8), "RGB"), "PNG", {}),
        ("png_rgba", Image.fromarray(rng.integers(0, 256, (9, 31, 4), dtype=np.uint8), "RGBA"), "PNG", {}),
        ("png_grey", Image.fromarray(rng.integers(0, 256, (12, 5), dtype=np.uint8), "L"), "PNG", {}),
        ("png_grey16", Image.fromarray(rng.integers(0, 65536, (7, 13), dtype=np.uint16)), "PNG", {}),
    ]:
        b = io.BytesIO()
        img.save(b, fmt, **kw)
        out.append((name, fmt.lower(), b.getvalue()))
    return out


# ---------------------------------------------------------------- writers

ROS2_HEADER = "================================================================================\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n================================================================================\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
ROS2_IMAGE = "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n" + ROS2_HEADER
ROS2_COMPRESSED = "std_msgs/Header header\nstring format\nuint8[] data\n" + ROS2_HEADER


def messages(big_endian):
    """(topic, kind, fields, expected) of every image, the same in each recording."""
    rng = np.random.default_rng(7)
    out = []
    for name, fmt, data in compressed_images(rng):
        out.append((f"/cam/{name}", "compressed", {"format": fmt, "data": data}, None))
    for enc in RAW:
        data, step, expected = raw_image(enc, rng, big_endian and enc in ("mono16", "32FC1"))
        fields = {"encoding": enc, "width": W, "height": H, "step": step, "data": data,
                  "is_bigendian": int(big_endian and enc in ("mono16", "32FC1"))}
        out.append((f"/cam/raw/{enc}", "raw", fields, expected))
    return out


def write_foxglove(path, msgs):
    from foxglove_schemas_protobuf.CompressedImage_pb2 import CompressedImage
    from foxglove_schemas_protobuf.RawImage_pb2 import RawImage
    from mcap_protobuf.writer import Writer

    with open(path, "wb") as f:
        w = Writer(f)
        for i, (topic, kind, m, _) in enumerate(msgs):
            t = BASE + i * 1000
            if kind == "compressed":
                msg = CompressedImage(frame_id="cam", format=m["format"], data=m["data"])
            else:
                msg = RawImage(frame_id="cam", width=m["width"], height=m["height"], encoding=m["encoding"],
                               step=m["step"], data=m["data"])
            msg.timestamp.FromNanoseconds(t)
            w.write_message(topic, msg, log_time=t, publish_time=t)
        w.finish()


def write_ros2_mcap(path, msgs):
    from mcap_ros2.writer import Writer

    with open(path, "wb") as f:
        w = Writer(f)
        image = w.register_msgdef("sensor_msgs/msg/Image", ROS2_IMAGE)
        compressed = w.register_msgdef("sensor_msgs/msg/CompressedImage", ROS2_COMPRESSED)
        for i, (topic, kind, m, _) in enumerate(msgs):
            t = BASE + i * 1000
            header = {"stamp": {"sec": t // 10**9, "nanosec": t % 10**9}, "frame_id": "cam"}
            schema = compressed if kind == "compressed" else image
            w.write_message(topic, schema, {"header": header, **m}, log_time=t, publish_time=t)
        w.finish()


def rosbags_message(ts, kind, m, t, ros1):
    Header = ts.types["std_msgs/msg/Header"]
    Time = ts.types["builtin_interfaces/msg/Time"]
    stamp = Time(sec=t // 10**9, nanosec=t % 10**9)
    header = Header(seq=0, stamp=stamp, frame_id="cam") if ros1 else Header(stamp=stamp, frame_id="cam")
    data = np.frombuffer(m["data"], dtype=np.uint8)
    if kind == "compressed":
        return "sensor_msgs/msg/CompressedImage", ts.types["sensor_msgs/msg/CompressedImage"](
            header=header, format=m["format"], data=data)
    return "sensor_msgs/msg/Image", ts.types["sensor_msgs/msg/Image"](
        header=header, height=m["height"], width=m["width"], encoding=m["encoding"],
        is_bigendian=m["is_bigendian"], step=m["step"], data=data)


def write_bag(path, msgs):
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS1_NOETIC)
    with Writer(path) as w:
        conns = {}
        for i, (topic, kind, m, _) in enumerate(msgs):
            t = BASE + i * 1000
            msgtype, msg = rosbags_message(ts, kind, m, t, True)
            if topic not in conns:
                conns[topic] = w.add_connection(topic, msgtype, typestore=ts)
            w.write(conns[topic], t, bytes(ts.serialize_ros1(msg, msgtype)))


def write_db3(path, msgs):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    with Writer(path, version=8, storage_plugin=StoragePlugin.SQLITE3) as w:
        conns = {}
        for i, (topic, kind, m, _) in enumerate(msgs):
            t = BASE + i * 1000
            msgtype, msg = rosbags_message(ts, kind, m, t, False)
            if topic not in conns:
                conns[topic] = w.add_connection(topic, msgtype, typestore=ts)
            w.write(conns[topic], t, bytes(ts.serialize_cdr(msg, msgtype)))


# ---------------------------------------------------------------- checks

def thumb_size(w, h, side):
    long = max(w, h)
    if long <= side:
        return w, h
    scale = lambda s: max(1, (s * side * 2 + long) // (2 * long))
    return (side, scale(h)) if w >= h else (scale(w), side)


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return math.inf if mse == 0 else 10 * math.log10(255 * 255 / mse)


def check_recording(ls, checks, name, path, msgs):
    for topic, kind, m, expected in msgs:
        def row(sql, topic=topic):
            rows = ls.query(sql.format(path=path, topic=topic))
            if len(rows) != 1:
                raise AssertionError(f"{len(rows)} rows")
            return rows[0]

        if kind == "compressed":
            def compressed(m=m):
                r = row("SELECT encoding, width, height, frame_id, encode(image_pixels(image, 'rgb8'), 'hex') AS rgb, "
                        "encode(image_pixels(image, 'mono16'), 'hex') AS m16, encode(image_pixels(image, 'mono8'), 'hex') AS m8, "
                        "encode(image_thumbnail(image, 8), 'hex') AS thumb, encode(image_encode(image, 'png'), 'hex') AS png "
                        "FROM read_images('{path}', '{topic}')")
                pil = Image.open(io.BytesIO(m["data"]))
                want = (pil.format.lower(), pil.size[0], pil.size[1], "cam")
                got = (r["encoding"], int(r["width"]), int(r["height"]), r["frame_id"])
                if got != want:
                    return f"{got} != Pillow's {want}"
                w, h = pil.size
                if pil.mode in ("I;16", "I;16B", "I"):
                    ours = np.frombuffer(bytes.fromhex(r["m16"]), dtype="<u2").reshape(h, w)
                    theirs = np.array(pil).astype(np.uint16)
                elif pil.mode == "L":
                    ours = np.frombuffer(bytes.fromhex(r["m8"]), dtype=np.uint8).reshape(h, w)
                    theirs = np.array(pil)
                else:
                    ours = np.frombuffer(bytes.fromhex(r["rgb"]), dtype=np.uint8).reshape(h, w, 3)
                    theirs = np.array(pil.convert("RGB"))
                if m["format"] == "png":
                    if not np.array_equal(ours, theirs):
                        return f"pixels differ from Pillow's at {np.argwhere(ours != theirs)[:3].tolist()}"
                    # A PNG asked for as PNG comes back as recorded (alpha and all).
                    back = np.array(Image.open(io.BytesIO(bytes.fromhex(r["png"]))))
                    if not np.array_equal(back.astype(np.int64), np.array(pil).astype(np.int64)):
                        return "image_encode(png) does not decode to the same pixels"
                elif psnr(ours, theirs) < 40:
                    return f"PSNR {psnr(ours, theirs):.1f} dB against Pillow's decode"
                t = Image.open(io.BytesIO(bytes.fromhex(r["thumb"])))
                if t.size != thumb_size(w, h, 8):
                    return f"thumbnail {t.size} != {thumb_size(w, h, 8)}"
                return None

            checks.check(f"{name} {topic}", compressed)
        else:
            def raw(m=m, expected=expected):
                r = row("SELECT encoding, width, height, image['step'] AS step, "
                        "encode(image_pixels(image, 'rgb8'), 'hex') AS rgb8, "
                        "encode(image_pixels(image, 'mono8'), 'hex') AS mono8, "
                        "encode(image_pixels(image, 'mono16'), 'hex') AS mono16, "
                        "encode(image_thumbnail(image, 4), 'hex') AS thumb "
                        "FROM read_images('{path}', '{topic}')")
                got = (r["encoding"], int(r["width"]), int(r["height"]), int(r["step"]))
                want = (m["encoding"], W, H, m["step"])
                if got != want:
                    return f"{got} != {want}"
                for fmt, exp in expected.items():
                    ours = bytes.fromhex(r[fmt])
                    if ours != exp:
                        diff = [i for i, (a, b) in enumerate(zip(ours, exp)) if a != b][:5]
                        return f"{fmt}: {len(ours)} vs {len(exp)} bytes, first differences at {diff}"
                t = Image.open(io.BytesIO(bytes.fromhex(r["thumb"])))
                if t.size != thumb_size(W, H, 4):
                    return f"thumbnail {t.size} != {thumb_size(W, H, 4)}"
                return None

            checks.check(f"{name} {topic}", raw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    ls = Logsql(args.logsql)
    checks = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or tmp
        os.makedirs(out, exist_ok=True)
        recordings = [
            # foxglove.RawImage has no is_bigendian: little-endian samples.
            ("foxglove protobuf mcap", os.path.join(out, "images_foxglove.mcap"), write_foxglove, False),
            ("ros2 cdr mcap", os.path.join(out, "images_ros2.mcap"), write_ros2_mcap, True),
            ("ros1 bag", os.path.join(out, "images.bag"), write_bag, True),
            ("ros2 db3", os.path.join(out, "images_db3"), write_db3, True),
        ]
        for name, path, write, big_endian in recordings:
            msgs = messages(big_endian)
            if os.path.exists(path) and os.path.isdir(path):
                import shutil
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
            write(path, msgs)
            check_recording(ls, checks, name, path, msgs)
    check_qoi(ls, checks)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


def check_qoi(ls, checks):
    """The QOI frame of qoi_image_transport's own test bag (a Spot hand camera,
    tests/public/qoi_image_transport/): rosbags reads the message, Pillow
    decodes its QOI stream, and logsql's pixels equal Pillow's and the raw bag's."""
    from rosbags.highlevel import AnyReader
    from pathlib import Path

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bag = os.path.join(repo, "tests", "public", "qoi_image_transport", "compressed.bag")
    topic = "/spot/camera/hand_color/image/qoi"

    def pixels():
        with AnyReader([Path(bag)]) as reader:
            conns = [c for c in reader.connections if c.topic == topic]
            msgs = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages(connections=conns)]
        if len(msgs) != 1 or not msgs[0].format.startswith("qoi"):
            return f"{len(msgs)} messages, format {msgs[0].format if msgs else None}"
        pil = np.asarray(Image.open(io.BytesIO(bytes(msgs[0].data)), formats=["QOI"]).convert("RGB"))
        rows = ls.query(f"SELECT encoding, width, height, encode(image_pixels(image, 'rgb8'), 'hex') AS p "
                       f"FROM read_images('{bag}', '{topic}')")
        got = np.frombuffer(bytes.fromhex(rows[0]["p"]), dtype=np.uint8).reshape(pil.shape)
        if (rows[0]["encoding"], rows[0]["width"], rows[0]["height"]) != ("qoi", pil.shape[1], pil.shape[0]):
            return f"header {rows[0]['encoding']} {rows[0]['width']}x{rows[0]['height']}, Pillow {pil.shape}"
        return None if np.array_equal(got, pil) else f"{int((got != pil).sum())} samples differ from Pillow's"

    checks.check("qoi_image_transport's QOI frame: logsql's pixels equal Pillow's decode", pixels)


if __name__ == "__main__":
    main()
