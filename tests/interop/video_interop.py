#!/usr/bin/env python3
"""Interop test: the H.264 MP4 files of logsql's video encoder
(``logsql_media::video::Mp4Encoder``) decoded by PyAV (FFmpeg's decoders).

The ``encode_video`` example of ``logsql-media`` (built by ``cargo test``
beside the logsql binary, in ``examples/``) encodes generated 640x480 camera
frames at irregular times (about 30 fps with jitter and a 200 ms gap) and
writes the source frames raw beside the MP4. Checks:

- PyAV opens the file: one H.264 video stream of the frames' size;
- one decoded frame per source frame;
- each frame's time (``frame.time``) equals its source time, relative to the
  first frame, within 1 ms (variable frame rate);
- every frame's PSNR against its source frame is at least 30 dB at the
  default quality (and the mean is printed);
- a lower quality gives a smaller file;
- the CLI's ``logsql export tests/data/images.mcap clip.mp4 --topic /cam/jpeg``, and
  ``COPY (... read_images ...) TO 'clip.mp4' OPTIONS (fps '20')``:
  PyAV decodes one frame per message at its log time (within 1 ms), at least
  30 dB PSNR against the recorded JPEGs;
- a camera of sensor noise (640x480, the ``gen_robot`` example with
  ``--noise``), which OpenH264 cannot fit at the default quality: the export
  succeeds with a warning naming the lowered quality, and PyAV decodes every
  frame at its log time, closer to its source than to another noise frame.

Usage: video_interop.py --logsql PATH/TO/logsql [--encoder PATH] [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import av
import numpy as np

from common import Checks

WIDTH, HEIGHT, COUNT = 640, 480, 48


def encode(encoder, out, raw, quality=None):
    args = [encoder, out, raw, str(COUNT), str(WIDTH), str(HEIGHT)]
    if quality is not None:
        args.append(str(quality))
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{args} failed ({proc.returncode}):\n{proc.stderr.strip()}")
    lines = proc.stdout.split()
    times = [int(v) for v in proc.stdout.splitlines() if v.strip().isdigit()]
    ms = lines[-1]
    return times, ms, proc.stderr


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--encoder")
    ap.add_argument("--keep")
    args = ap.parse_args()
    encoder = args.encoder or os.path.join(os.path.dirname(os.path.abspath(args.logsql)), "examples", "encode_video")
    checks = Checks()
    tmp_obj = None
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        tmp = args.keep
    else:
        tmp_obj = tempfile.TemporaryDirectory(prefix="logsql-video-")
        tmp = tmp_obj.name
    if not os.path.isfile(encoder):
        checks.check("encoder present", lambda: f"{encoder} not found: build it with cargo test (or cargo build -p logsql-media --example encode_video)")
        print(f"{checks.passed} passed, {checks.failed} failed")
        sys.exit(1)

    mp4 = os.path.join(tmp, "clip.mp4")
    raw = os.path.join(tmp, "clip.rgb")
    times, ms, stderr = encode(encoder, mp4, raw)
    print(f"info encoder ({os.path.basename(os.path.dirname(os.path.dirname(encoder)))} build): {ms} ms per {WIDTH}x{HEIGHT} frame")
    checks.check("the encoder writes nothing to stderr", lambda: stderr.strip() or None)
    source = np.fromfile(raw, dtype=np.uint8).reshape(COUNT, HEIGHT, WIDTH, 3)

    decoded = []

    def opens():
        with av.open(mp4) as c:
            streams = c.streams.video
            if len(streams) != 1:
                return f"{len(streams)} video streams"
            s = streams[0]
            if s.codec_context.name != "h264" or (s.width, s.height) != (WIDTH, HEIGHT):
                return f"stream {s.codec_context.name} {s.width}x{s.height}"
            for frame in c.decode(s):
                decoded.append((frame.time, frame.to_ndarray(format="rgb24")))
        return None

    checks.check("PyAV opens an H.264 stream of the frames' size", opens)
    checks.check(
        "one decoded frame per source frame",
        lambda: None if len(decoded) == COUNT else f"{len(decoded)} frames, expected {COUNT}",
    )

    def frame_times():
        for i, ((t, _), src) in enumerate(zip(decoded, times)):
            want = (src - times[0]) / 1e9
            if t is None or abs(t - want) > 0.001:
                return f"frame {i} at {t} s, expected {want:.6f} s"
        return None

    checks.check("each frame's time within 1 ms of its source time", frame_times)

    def quality():
        values = [psnr(img, source[i]) for i, (_, img) in enumerate(decoded)]
        # The ceiling: the first frame through 4:2:0 and back, without coding.
        plain = av.VideoFrame.from_ndarray(source[0], format="rgb24").reformat(format="yuv420p")
        ceiling = psnr(plain.to_ndarray(format="rgb24"), source[0])
        print(f"info PSNR: mean {np.mean(values):.1f} dB, lowest {min(values):.1f} dB (4:2:0 alone: {ceiling:.1f} dB)")
        worst = int(np.argmin(values))
        return None if values and min(values) >= 30 else f"frame {worst}: {values[worst]:.1f} dB"

    checks.check("every frame at least 30 dB PSNR at the default quality", quality)

    def smaller():
        low = os.path.join(tmp, "low.mp4")
        encode(encoder, low, os.path.join(tmp, "low.rgb"), quality=20)
        a, b = os.path.getsize(low), os.path.getsize(mp4)
        return None if a < b else f"quality 20: {a} bytes, default: {b} bytes"

    checks.check("a lower quality gives a smaller file", smaller)

    # The CLI's own export: `logsql export images.mcap clip.mp4 --topic /cam/jpeg`
    # (three 32x24 JPEGs 100 ms apart, tests/data/images.mcap), decoded by PyAV
    # and compared with Pillow's decoding of the recorded JPEGs.
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    images = os.path.join(repo, "tests", "data", "images.mcap")

    def sources():
        from PIL import Image
        import io
        import json

        q = subprocess.run(
            [args.logsql, "--format", "ndjson",
             f"SELECT encode(image_encode(image, 'png'), 'hex') AS png FROM read_images('{images}', '/cam/jpeg') ORDER BY log_time"],
            capture_output=True, text=True, timeout=300,
        )
        if q.returncode != 0:
            raise RuntimeError(f"query failed: {q.stderr.strip()}")
        return [
            np.asarray(Image.open(io.BytesIO(bytes.fromhex(json.loads(line)["png"]))).convert("RGB"))
            for line in q.stdout.splitlines() if line.strip()
        ]

    def cli_video(command, clip, want, shown):
        """Runs `command`, decodes `clip` with PyAV: frames at `want` s,
        frame i showing recorded image `shown[i]`, at least 30 dB."""
        proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return f"{command[1]} failed: {proc.stderr.strip()}"
        with av.open(clip) as c:
            frames = [(f.time, f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]
        times = [t for t, _ in frames]
        if len(times) != len(want) or any(t is None or abs(t - w) > 0.001 for t, w in zip(times, want)):
            return f"frames at {times} s, expected {want}"
        src = sources()
        values = [psnr(img, src[i]) for (_, img), i in zip(frames, shown)]
        print(f"info {command[1].split()[0]} PSNR: {', '.join(f'{v:.1f}' for v in values)} dB")
        return None if min(values) >= 30 else f"PSNR {values}"

    def cli_export():
        clip = os.path.join(tmp, "cli.mp4")
        command = [args.logsql, "export", images, clip, "--topic", "/cam/jpeg"]
        return cli_video(command, clip, [0.0, 0.1, 0.2], [0, 1, 2])

    def sql_copy():
        clip = os.path.join(tmp, "copy.mp4")
        sql = (f"COPY (SELECT log_time, image FROM read_images('{images}', '/cam/jpeg')) "
               f"TO '{clip}' OPTIONS (fps '20')")
        return cli_video([args.logsql, sql], clip, [0.0, 0.05, 0.1, 0.15, 0.2], [0, 0, 1, 1, 2])

    def noise():
        gen = os.path.join(os.path.dirname(os.path.abspath(args.logsql)), "examples", "gen_robot")
        rec = os.path.join(tmp, "noise.mcap")
        subprocess.run([gen, rec, "--seconds", "0.3", "--width", "640", "--height", "480", "--noise"],
                       check=True, capture_output=True, timeout=300)
        clip = os.path.join(tmp, "noise.mp4")
        proc = subprocess.run([args.logsql, "export", rec, clip, "--topic", "/camera/front"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return f"export failed: {proc.stderr.strip()}"
        if "could not fit the frame at quality 75" not in proc.stderr:
            return f"no warning of the lowered quality: {proc.stderr!r}"
        q = subprocess.run(
            [args.logsql, "--format", "ndjson",
             f"SELECT encode(image_pixels(image, 'rgb8'), 'hex') AS p FROM read_images('{rec}', '/camera/front') ORDER BY log_time"],
            capture_output=True, text=True, timeout=300, check=True)
        import json
        src = [np.frombuffer(bytes.fromhex(json.loads(l)["p"]), dtype=np.uint8).reshape(480, 640, 3)
               for l in q.stdout.splitlines() if l.strip()]
        with av.open(clip) as c:
            frames = [(f.time, f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]
        if len(frames) != len(src):
            return f"{len(frames)} frames decoded, {len(src)} recorded"
        want = [i / 30 for i in range(len(src))]
        if any(t is None or abs(t - w) > 0.002 for (t, _), w in zip(frames, want)):
            return f"frames at {[t for t, _ in frames]} s"
        own = [psnr(img, src[i]) for i, (_, img) in enumerate(frames)]
        other = [psnr(img, src[(i + 1) % len(src)]) for i, (_, img) in enumerate(frames)]
        print(f"info noise PSNR: own frame {min(own):.1f}..{max(own):.1f} dB, the next frame {max(other):.1f} dB")
        return None if min(own) > max(other) + 1 else f"own {own}, other {other}"

    checks.check("a camera of sensor noise: exported at a lower quality with a warning, every frame decodes at its time", noise)
    checks.check("logsql export clip.mp4: PyAV decodes one frame per message at its log_time, at least 30 dB", cli_export)
    checks.check("COPY ... TO 'clip.mp4' OPTIONS (fps '20'): PyAV decodes a frame every 50 ms showing the latest image, at least 30 dB", sql_copy)
    if tmp_obj:
        tmp_obj.cleanup()
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
