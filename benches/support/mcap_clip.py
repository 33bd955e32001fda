"""A window of an MCAP recording cut with the official Python `mcap` reader and writer.

    python mcap_clip.py clip SRC OUT START_NS END_NS   # every message with START <= log_time <= END
    python mcap_clip.py chunks SRC START_NS END_NS     # "chunks bytes tail": the chunks whose
                                                        # time range overlaps the window, their
                                                        # record bytes, and the bytes after the
                                                        # last chunk (the summary section)
    python mcap_clip.py sums FILE                      # "count log_time_sum payload_bytes"
    python mcap_clip.py span FILE                      # "start_ns end_ns" of the statistics

`clip` is what a script without logsql writes to cut a window: the indexed reader
(`iter_messages` with a time range reads only the chunks that overlap it), the channels and
schemas of the messages it wrote, and the source's metadata records, in log-time order.
"""

import sys

from mcap.reader import make_reader
from mcap.writer import Writer


def copy_messages(writer, messages):
    """Writes the (schema, channel, message) triples of an mcap reader's `iter_messages`
    with `writer`, each schema and channel registered before its first message as the
    source had it; the messages written. (benches/python_mcap_write.py's window too.)"""
    schemas, channels = {}, {}
    n = 0
    for schema, channel, message in messages:
        if channel.id not in channels:
            sid = 0
            if schema is not None:
                if schema.id not in schemas:
                    schemas[schema.id] = writer.register_schema(
                        schema.name, schema.encoding, schema.data
                    )
                sid = schemas[schema.id]
            channels[channel.id] = writer.register_channel(
                channel.topic, channel.message_encoding, sid, channel.metadata
            )
        writer.add_message(
            channels[channel.id],
            log_time=message.log_time,
            data=message.data,
            publish_time=message.publish_time,
            sequence=message.sequence,
        )
        n += 1
    return n


def clip(src, out, start, end):
    with open(src, "rb") as f, open(out, "wb") as o:
        reader = make_reader(f)
        header = reader.get_header()
        writer = Writer(o)
        writer.start(profile=header.profile, library="mcap python clip")
        n = copy_messages(
            writer, reader.iter_messages(starting_at=start, ending_at=end, log_time_order=True)
        )
        for metadata in reader.iter_metadata():
            writer.add_metadata(metadata.name, metadata.metadata)
        writer.finish()
    print(n)


def chunks(src, start, end):
    with open(src, "rb") as f:
        summary = make_reader(f).get_summary()
        size = f.seek(0, 2)
    overlapping = [
        c
        for c in summary.chunk_indexes
        if c.message_start_time <= end and c.message_end_time >= start
    ]
    # What follows the last chunk: its message indexes, the summary section, the footer.
    last = max(c.chunk_start_offset + c.chunk_length for c in summary.chunk_indexes)
    print(len(overlapping), sum(c.chunk_length for c in overlapping), size - last)


def sums(path):
    n = t = b = 0
    with open(path, "rb") as f:
        for _, _, message in make_reader(f).iter_messages(log_time_order=False):
            n += 1
            t += message.log_time % 1000000007
            b += len(message.data)
    print(n, t, b)


def span(path):
    with open(path, "rb") as f:
        stats = make_reader(f).get_summary().statistics
    print(stats.message_start_time, stats.message_end_time)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "clip":
        clip(args[0], args[1], int(args[2]), int(args[3]))
    elif cmd == "chunks":
        chunks(args[0], int(args[1]), int(args[2]))
    elif cmd == "sums":
        sums(args[0])
    elif cmd == "span":
        span(args[0])
    else:
        sys.exit(f"unknown command {cmd}")
