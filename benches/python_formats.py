#!/usr/bin/env python3
"""Reads Apollo records, BDDF files and CARLA recordings in Python, for
benches/formats_compare.sh. Every mode prints one line.

Apollo (pip cyber_record 0.1.13):
  python_formats.py record FILE              Record(path).read_messages(): every message
                                             decoded into its protobuf class (the public
                                             API); prints "count bytes" (bytes = ByteSize()
                                             of the decoded messages)
  python_formats.py record FILE --raw        every message undecoded: cyber_record has no
                                             public raw mode, so this walks the chunk
                                             bodies with the reader's own internals
                                             (_get_chunk_body_indexs, read_chunk_body);
                                             prints "count bytes" (bytes = len(content))
  python_formats.py record FILE [--raw] --topic T --start NS --end NS
                                             one channel, time in [start, end] (inclusive,
                                             as cyber_record's filter is)
  python_formats.py record FILE --window PCT prints "start end": the PCT% window centred
                                             in the header's [begin_time, end_time]

BDDF (bosdyn.bddf from bosdyn-core, installed by bosdyn-client):
  python_formats.py bddf FILE                DataReader: every block of every series, by
                                             index (r.read(i, k)); prints "count bytes".
                                             DataReader does NOT verify the file's SHA1.
  python_formats.py bddf FILE --stream       StreamDataReader: every block in file order,
                                             hashing everything read, and checks the SHA1
                                             at the end (fails if it differs)
  python_formats.py bddf FILE --topic T --start NS --end NS
                                             one series (its bosdyn:channel value, or
                                             "type:k=v,..." like logsql's topic), blocks
                                             whose index timestamp is in [start, end]
  python_formats.py bddf FILE --window PCT   prints "start end" over all series' blocks

CARLA 0.9.16 recorder (no pip reader exists outside the simulator: a direct
struct decoder, written here, serves as the cross-check):
  python_formats.py carla FILE [--start NS --end NS]
                                             every Position record (f32 layout, 28 bytes),
                                             log_time = date + elapsed of the frame;
                                             prints "count sum_x_m sum_yaw_deg"
  python_formats.py carla FILE --window PCT  prints "start end" over the frames' log_time
"""

import argparse
import struct
import sys


def window(lo, hi, pct):
    span = hi - lo
    return lo + int(span * (50 - pct / 2) / 100), lo + int(span * (50 + pct / 2) / 100)


# ---- Apollo -------------------------------------------------------------------


def record(a):
    from cyber_record.record import Record

    rec = Record(a.file)
    if a.window is not None:
        print(*window(rec.get_start_time(), rec.get_end_time(), a.window))
        return
    topics = [a.topic] if a.topic else None
    n = size = 0
    if a.raw:
        rd = rec._reader  # pylint: disable=protected-access
        want = set(topics) if topics else None
        lo, hi = a.start, a.end
        for cbi in rd._get_chunk_body_indexs(lo, hi):  # pylint: disable=protected-access
            body = rd.read_chunk_body(cbi.position)
            if body is None:
                continue
            for m in body.messages:
                if want is not None and m.channel_name not in want:
                    continue
                if (lo is not None and m.time < lo) or (hi is not None and m.time > hi):
                    continue
                n += 1
                size += len(m.content)
    else:
        for _topic, msg, _t in rec.read_messages(topics, a.start, a.end):
            n += 1
            size += msg.ByteSize() if msg is not None else 0
    print(n, size)


# ---- BDDF ---------------------------------------------------------------------


def bddf_topic(desc):
    spec = dict(desc.series_identifier.spec)
    if "bosdyn:channel" in spec:
        return spec["bosdyn:channel"]
    kv = ",".join(f"{k}={spec[k]}" for k in sorted(spec, key=lambda s: s.encode()))
    return f"{desc.series_identifier.series_type}:{kv}"


def bddf(a):
    from bosdyn.bddf import DataReader, StreamDataReader

    n = size = 0
    with open(a.file, "rb") as f:
        if a.stream:
            r = StreamDataReader(f)
            try:
                while True:
                    _desc, _sdesc, data = r.read_data_block()
                    n += 1
                    size += len(data)
            except EOFError:
                pass  # a checksum mismatch raises ChecksumError instead
            if r.read_checksum is None or r.read_checksum != r.checksum:
                sys.exit(f"SHA1 not verified: read {r.read_checksum!r}, stored {r.checksum!r}")
            print(n, size)
            return
        r = DataReader(f)
        nseries = len(r.file_index.series_identifiers)
        if a.window is not None:
            times = [e.timestamp.ToNanoseconds()
                     for i in range(nseries) for e in r.series_block_index(i).block_entries]
            print(*window(min(times), max(times), a.window))
            return
        for i in range(nseries):
            if a.topic is not None and bddf_topic(r.series_descriptor(i)) != a.topic:
                continue
            entries = r.series_block_index(i).block_entries
            for k in range(len(entries)):
                if a.start is not None:
                    t = entries[k].timestamp.ToNanoseconds()
                    if t < a.start or t > a.end:
                        continue
                _desc, _t, data = r.read(i, k)
                n += 1
                size += len(data)
    print(n, size)


# ---- CARLA --------------------------------------------------------------------


def carla(a):
    with open(a.file, "rb") as f:
        buf = f.read()
    u16 = struct.Struct("<H").unpack_from
    pos = 2  # version
    ln = u16(buf, pos)[0]
    pos += 2 + ln  # magic
    (date,) = struct.unpack_from("<q", buf, pos)
    pos += 8
    ln = u16(buf, pos)[0]
    pos += 2 + ln  # map
    hdr = struct.Struct("<BI").unpack_from
    frame = struct.Struct("<Qdd").unpack_from
    rec = struct.Struct("<I6f")
    base = date * 1_000_000_000
    lo, hi = a.start, a.end
    n = 0
    sx = syaw = 0.0
    first = last = None
    keep = True
    end = len(buf)
    while pos + 5 <= end:
        kind, size = hdr(buf, pos)
        pos += 5
        if kind == 0:  # FrameStart
            _id, _dur, elapsed = frame(buf, pos)
            t = base + round(elapsed * 1e9)
            if first is None:
                first = t
            last = t
            keep = lo is None or lo <= t <= hi
        elif kind == 6 and keep and a.window is None:  # Position
            cnt = u16(buf, pos)[0]
            for _aid, x, _y, _z, _r, _p, yaw in rec.iter_unpack(buf[pos + 2:pos + 2 + cnt * 28]):
                sx += x * 0.01
                syaw += yaw
            n += cnt
        pos += size
    if a.window is not None:
        print(*window(first, last, a.window))
        return
    print(n, repr(sx), repr(syaw))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("format", choices=["record", "bddf", "carla"])
    p.add_argument("file")
    p.add_argument("--topic")
    p.add_argument("--start", type=int)
    p.add_argument("--end", type=int)
    p.add_argument("--window", type=float)
    p.add_argument("--raw", action="store_true")
    p.add_argument("--stream", action="store_true")
    a = p.parse_args()
    {"record": record, "bddf": bddf, "carla": carla}[a.format](a)


if __name__ == "__main__":
    main()
