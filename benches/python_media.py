"""The Python side of benches/media_compare.sh: a camera recording, and the jobs
users write today with the official reader, Pillow and PyAV.

    python python_media.py gen OUT.mcap SECONDS
        a 640x480, 30 fps camera topic /camera/front (ros1
        sensor_msgs/CompressedImage, JPEG quality 85, written by the official
        `mcap` writer with zstd chunks) of a moving scene (a gradient, a square
        and noise); deterministic; prints the frame count
    python python_media.py thumbs IN.mcap SIZE
        every image of /camera/front as a PNG thumbnail of SIZE pixels on its
        longer side (mcap reader, Pillow decode, Image.thumbnail, PNG encode);
        prints "count total_png_bytes"
    python python_media.py video IN.mcap OUT.mp4
        /camera/front as an H.264 MP4 with PyAV (libx264, baseline profile,
        constant quantizer 19: logsql's default quality; preset ultrafast),
        one frame per message at its log time (variable frame rate, 90 kHz
        time base); prints the frame count
    python python_media.py frames OUT.mp4
        the frames and their times in seconds of an MP4 (the checks)
"""

import io
import struct
import sys

TOPIC = "/camera/front"
WIDTH, HEIGHT, FPS = 640, 480, 30
DEFINITION = """std_msgs/Header header
string format
uint8[] data
================================================================================
MSG: std_msgs/Header
uint32 seq
time stamp
string frame_id
"""


def ros1_compressed_image(seq, t_ns, jpeg):
    frame = b"camera_front"
    fmt = b"jpeg"
    return b"".join([
        struct.pack("<III", seq, t_ns // 1_000_000_000, t_ns % 1_000_000_000),
        struct.pack("<I", len(frame)), frame,
        struct.pack("<I", len(fmt)), fmt,
        struct.pack("<I", len(jpeg)), jpeg,
    ])


def ros1_image_data(payload):
    """The JPEG bytes of a ros1 sensor_msgs/CompressedImage."""
    at = 12
    (n,) = struct.unpack_from("<I", payload, at)
    at += 4 + n
    (n,) = struct.unpack_from("<I", payload, at)
    at += 4 + n
    (n,) = struct.unpack_from("<I", payload, at)
    return payload[at + 4: at + 4 + n]


def gen(out, seconds):
    import numpy as np
    from mcap.writer import CompressionType, Writer
    from PIL import Image

    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH]
    noise = rng.integers(0, 8, size=(HEIGHT, WIDTH, 3), dtype=np.uint8)
    start = 1_700_000_000_000_000_000
    n = int(seconds * FPS)
    with open(out, "wb") as f:
        w = Writer(f, compression=CompressionType.ZSTD)
        w.start(profile="ros1", library="logsql benches/python_media.py")
        schema = w.register_schema("sensor_msgs/CompressedImage", "ros1msg", DEFINITION.encode())
        channel = w.register_channel(TOPIC, "ros1", schema)
        for i in range(n):
            img = np.empty((HEIGHT, WIDTH, 3), dtype=np.uint8)
            img[..., 0] = (xx + 3 * i) % 256
            img[..., 1] = (yy + 2 * i) % 256
            img[..., 2] = ((xx + yy) // 2 + i) % 256
            x0 = (7 * i) % (WIDTH - 80)
            img[200:280, x0:x0 + 80] = (255, 255, 255)
            img = img + np.roll(noise, i, axis=1)
            buf = io.BytesIO()
            Image.fromarray(img).save(buf, "JPEG", quality=85)
            t = start + i * 1_000_000_000 // FPS
            w.add_message(channel, log_time=t, publish_time=t, sequence=i,
                          data=ros1_compressed_image(i, t, buf.getvalue()))
        w.finish()
    print(n)


def images(path):
    from mcap.reader import make_reader

    with open(path, "rb") as f:
        for _, _, m in make_reader(f).iter_messages(topics=[TOPIC], log_time_order=True):
            yield m.log_time, ros1_image_data(m.data)


def thumbs(path, size):
    from PIL import Image

    count = total = 0
    for _, jpeg in images(path):
        img = Image.open(io.BytesIO(jpeg))
        img.thumbnail((size, size))
        buf = io.BytesIO()
        img.save(buf, "PNG")
        count += 1
        total += len(buf.getvalue())
    print(count, total)


def video(path, out):
    from fractions import Fraction

    import av
    import numpy as np
    from PIL import Image

    frames = 0
    first = None
    with av.open(out, "w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height = WIDTH, HEIGHT
        stream.pix_fmt = "yuv420p"
        stream.time_base = Fraction(1, 90_000)
        stream.codec_context.options = {"profile": "baseline", "qp": "19", "preset": "ultrafast"}
        for t, jpeg in images(path):
            rgb = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            first = t if first is None else first
            frame.pts = (t - first) * 90_000 // 1_000_000_000
            frame.time_base = stream.time_base
            for packet in stream.encode(frame):
                container.mux(packet)
            frames += 1
        for packet in stream.encode():
            container.mux(packet)
    print(frames)


def frames(path):
    import av

    with av.open(path) as c:
        times = [f.time for f in c.decode(video=0)]
    print(len(times), " ".join(f"{t:.4f}" for t in times[:5]))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "gen":
        gen(args[0], float(args[1]))
    elif cmd == "thumbs":
        thumbs(args[0], int(args[1]))
    elif cmd == "video":
        video(args[0], args[1])
    elif cmd == "frames":
        frames(args[0])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
