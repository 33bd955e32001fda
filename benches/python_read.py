#!/usr/bin/env python3
"""Reads an MCAP with the official Python reader, for benches/compare.sh.

  python_read.py FILE                      all messages (log-time order, indexed), prints "count bytes"
  python_read.py FILE --file-order         all messages in file order
  python_read.py FILE --topic T --start NS --end NS
                                           one topic, log_time in [start, end] (inclusive)
  python_read.py FILE --window PCT         prints "start end": the PCT% log_time window
                                           centred in the file's time span (inclusive ns bounds)
"""

import argparse

from mcap.reader import make_reader


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--topic")
    p.add_argument("--start", type=int)
    p.add_argument("--end", type=int)
    p.add_argument("--file-order", action="store_true")
    p.add_argument("--window", type=float)
    a = p.parse_args()
    with open(a.file, "rb") as f:
        reader = make_reader(f)
        if a.window is not None:
            stats = reader.get_summary().statistics
            lo, hi = stats.message_start_time, stats.message_end_time
            span = hi - lo
            w0 = lo + int(span * (50 - a.window / 2) / 100)
            w1 = lo + int(span * (50 + a.window / 2) / 100)
            print(w0, w1)
            return
        count = 0
        size = 0
        it = reader.iter_messages(
            topics=[a.topic] if a.topic else None,
            starting_at=a.start,
            ending_at=a.end,  # inclusive, like SQL BETWEEN
            log_time_order=not a.file_order,
        )
        for _schema, _channel, message in it:
            count += 1
            size += len(message.data)
        print(count, size)


if __name__ == "__main__":
    main()
