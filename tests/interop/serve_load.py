"""The bounded load part of the ``serve`` interop suite: 32 concurrent
clients on loopback run a fixed number of rounds each of mixed queries
(per-topic counts, ``read_topic`` aggregates, windows, ASOF JOIN, over
Postgres wire with psycopg and, when the binary has it, Flight SQL with
ADBC), cancels of a running query, and disconnects in the middle of a
streaming answer. Every answer must equal the CLI's, the server must live
through it and answer afterwards, and its resident memory (``VmRSS`` of
/proc/PID/status, sampled all along) must stay below a bound."""

import contextlib
import threading
import time

import psycopg

CLIENTS = 32
ROUNDS = 6
# The bound on the server's resident memory over the whole run.
RSS_LIMIT_MIB = 1536


def rss_mib(pid):
    """The resident memory of process ``pid`` in MiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0


def queries(demo):
    """The mixed queries, each with the CLI's answer filled in by ``prepare``."""
    return [
        "SELECT topic, count(*) AS n FROM demo GROUP BY topic ORDER BY topic",
        f"SELECT count(*) AS n, round(avg(linear_acceleration['z']), 6) AS z "
        f"FROM read_topic('{demo}', '/imu')",
        "SELECT topic, CAST(date_bin(INTERVAL '1 second', log_time) AS BIGINT) AS s, "
        "count(*) AS n FROM demo GROUP BY topic, s ORDER BY n DESC, topic, s LIMIT 5",
        f"SELECT count(*) AS n, count(i.log_time) AS matched "
        f"FROM (SELECT log_time FROM '{demo}' WHERE topic = '/tf') t "
        f"ASOF JOIN (SELECT log_time FROM '{demo}' WHERE topic = '/imu') i "
        f"MATCH_CONDITION (t.log_time >= i.log_time)",
    ]


def prepare(cli, demo):
    """Each query with the CLI's rows (as tuples)."""
    out = []
    for sql in queries(demo):
        rows = cli.query(sql.replace("FROM demo", f"FROM '{demo}'"))
        out.append((sql, [tuple(r.values()) for r in rows]))
    return out


def same(got, want):
    """Rows equal, floats to 1e-9."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if len(g) != len(w):
            return False
        for a, b in zip(g, w):
            if isinstance(a, (float, int)) and isinstance(b, (float, int)) and not isinstance(a, bool):
                if abs(float(a) - float(b)) > 1e-9:
                    return False
            elif a != b:
                return False
    return True


# A query that runs for minutes (17.8 billion joined rows), and one that
# streams 6.8 million rows.
ENDLESS_COUNT = "SELECT max(a.sequence + b.sequence + c.sequence) FROM demo a, demo b, demo c"
ENDLESS_ROWS = "SELECT a.topic, b.sequence FROM demo a, demo b"


@contextlib.contextmanager
def cancelling(conn):
    """Sends ``conn`` a cancel request every 0.3 s until the block ends: as
    in Postgres, a cancel that arrives before the server reads the query
    does nothing, and a busy loopback server may read it late."""
    done = threading.Event()

    def cancel():
        while not done.wait(0.3):
            conn.cancel()

    canceller = threading.Thread(target=cancel)
    canceller.start()
    try:
        yield
    finally:
        done.set()
        canceller.join()


def client(n, port, fport, work, failures):
    """Client ``n``: ``ROUNDS`` rounds of its share of the work."""
    for r in range(ROUNDS):
        kind = (n + r) % 6
        try:
            if kind == 4:
                # A cancel of a running query.
                with psycopg.connect(host="127.0.0.1", port=port, user="logsql", dbname="logsql") as conn:
                    with cancelling(conn):
                        try:
                            conn.execute(ENDLESS_COUNT).fetchall()
                            failures.append(f"client {n} round {r}: the cancelled query finished")
                        except psycopg.errors.QueryCanceled:
                            pass
            elif kind == 5:
                # A disconnect in the middle of a streaming answer: the query
                # is sent, some of its rows read, then the socket closes.
                conn = psycopg.connect(host="127.0.0.1", port=port, user="logsql", dbname="logsql")
                conn.pgconn.send_query(ENDLESS_ROWS.encode())
                time.sleep(0.3)
                conn.pgconn.consume_input()
                conn.pgconn.finish()
            else:
                sql, want = work[(kind + n) % len(work)]
                if fport and n % 2:
                    import serve_flight

                    conn = serve_flight.adbc_connect(fport)
                    try:
                        got = serve_flight.rows(serve_flight.adbc_table(conn, sql))
                    finally:
                        conn.close()
                else:
                    with psycopg.connect(host="127.0.0.1", port=port, user="logsql", dbname="logsql") as conn:
                        got = [tuple(row) for row in conn.execute(sql).fetchall()]
                if not same(got, want):
                    failures.append(f"client {n} round {r}: {sql[:50]}: {got} != {want}")
        except Exception as e:  # noqa: BLE001 - every client error is a failure
            failures.append(f"client {n} round {r} ({kind}): {type(e).__name__}: {e}")


def run(checks, cli, proc, port, fport, demo):
    """The load run against a started server (``proc``)."""
    work = prepare(cli, demo)
    failures = []
    peak = [rss_mib(proc.pid)]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mib(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    threads = [threading.Thread(target=client, args=(n, port, fport, work, failures)) for n in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    stop.set()
    sampler.join()
    hung = sum(t.is_alive() for t in threads)

    checks.check(
        f"load: {CLIENTS} clients x {ROUNDS} rounds (queries, cancels, mid-stream disconnects): every answer right",
        lambda: None if not failures and not hung else f"{hung} hung; " + "; ".join(failures[:5]),
    )
    checks.check(
        "load: the server lives through it and answers afterwards",
        lambda: after(proc, port, work),
    )
    checks.check(
        f"load: the server's resident memory stays below {RSS_LIMIT_MIB} MiB",
        lambda: None if 0 < peak[0] < RSS_LIMIT_MIB else f"peak {peak[0]:.0f} MiB",
    )
    print(f"load: peak server RSS {peak[0]:.0f} MiB")


def after(proc, port, work):
    if proc.poll() is not None:
        return f"the server ended ({proc.returncode})"
    sql, want = work[0]
    with psycopg.connect(host="127.0.0.1", port=port, user="logsql", dbname="logsql") as conn:
        got = [tuple(row) for row in conn.execute(sql).fetchall()]
    return None if same(got, want) else f"{got} != {want}"
