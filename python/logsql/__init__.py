"""logsql: SQL over robot and simulator log files (MCAP, ROS1 bag, Apollo Cyber RT
record, Boston Dynamics BDDF, CARLA recorder), with Apache DataFusion.

Two ways in:

* With datafusion-python (the same DataFusion major, 55), log files become tables
  of your own session; projection, time and topic filters and LIMIT reach
  logsql's scan, which runs in parallel::

      import datafusion, logsql
      ctx = datafusion.SessionContext()
      ctx.register_table("run", logsql.table("run.mcap"))
      ctx.register_table("imu", logsql.topic_table("run.mcap", "/imu"))
      ctx.sql("SELECT topic, count(*) FROM run GROUP BY topic").to_pandas()

* Without it, logsql runs the SQL itself and returns a ``pyarrow.Table``
  (batches handed over through the Arrow C stream interface, not copied)::

      df = logsql.sql("SELECT * FROM read_topic('run.mcap', '/imu')").to_pandas()
      pl = polars.from_arrow(logsql.sql("SELECT topic, count(*) FROM 'logs/' GROUP BY topic"))

Paths are files, directories or globs of any mix of formats (detected from
content), or object-store URLs (``s3://``, ``gs://``, ``az://``, ``http(s)://``;
credentials from the usual environment variables). ``options`` set logsql's
session options: ``{"on_error": "warn"}`` is ``SET logsql.on_error = 'warn'``;
keys with a dot (``"datafusion.execution.target_partitions"``) are set as given.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Union

from . import _native

__all__ = ["table", "topic_table", "sql", "info", "index", "catalog", "Catalog", "QueryError",
           "DATAFUSION_MAJOR", "__version__"]

__version__: str = _native.__version__

#: The DataFusion major version logsql is built on. datafusion-python accepts
#: logsql's tables only when its own major is the same.
DATAFUSION_MAJOR: int = _native.datafusion_major()

PathLike = Union[str, "os.PathLike[str]"]


def _options(options: Optional[Mapping[str, Any]]) -> Optional[dict]:
    if not options:
        return None
    out = {}
    for key, value in options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        out[str(key)] = str(value)
    return out


def _check_datafusion() -> None:
    """Fails clearly when the installed datafusion-python has another major."""
    try:
        import datafusion
    except ImportError:
        return
    version = str(getattr(datafusion, "__version__", ""))
    major = version.split(".", 1)[0]
    if major.isdigit() and int(major) != DATAFUSION_MAJOR:
        raise ImportError(
            f"logsql {__version__} is built on DataFusion {DATAFUSION_MAJOR}, but datafusion-python "
            f"{version} is installed: tables cross between the two only when the DataFusion major "
            f"versions are equal. Install a matching one (pip install 'datafusion>={DATAFUSION_MAJOR},"
            f"<{DATAFUSION_MAJOR + 1}'), or use logsql.sql(), which needs no datafusion-python."
        )


def table(path: PathLike, options: Optional[Mapping[str, Any]] = None) -> "_native.LogTable":
    """Every message of the log files at ``path``, as a datafusion-python table.

    Columns: ``topic``, ``log_time``, ``publish_time``, ``sequence``,
    ``message_type``, ``message_encoding``, ``data``, ``file`` (plus hive partition
    columns of directories like ``robot=r7/``, and format-specific ones).
    Register it with ``SessionContext.register_table(name, table)``.
    """
    _check_datafusion()
    return _native.table(os.fspath(path), _options(options))


def topic_table(
    path: PathLike,
    topic: str,
    flatten: bool = False,
    options: Optional[Mapping[str, Any]] = None,
) -> "_native.LogTable":
    """One topic's messages decoded into typed columns (SQL ``read_topic``):
    ``log_time``, ``publish_time``, every message field (nested structs, or with
    ``flatten=True`` dotted columns like ``linear_acceleration.x``), ``file``."""
    _check_datafusion()
    return _native.topic_table(os.fspath(path), topic, flatten, _options(options))


class QueryError(RuntimeError):
    """A query that failed after delivering rows (a damaged file under
    ``on_error`` ``auto`` or ``error``): the message names the file, the byte
    offset and the cause, and ``partial`` is a ``pyarrow.Table`` of every row the
    query returned before the error (with a damaged file: every row computed
    from its readable messages)."""

    def __init__(self, message: str, partial: Any):
        super().__init__(message)
        #: The rows delivered before the error, as a ``pyarrow.Table``.
        self.partial = partial


def sql(query: str, options: Optional[Mapping[str, Any]] = None):
    """Runs one SQL statement with logsql's session and returns a ``pyarrow.Table``.

    Every logsql table is available: ``FROM 'run.mcap'``, ``read_topic(...)``,
    ``topics(...)``, typed tables (``positions('town.log')``), and all of
    DataFusion's functions; ``ASOF JOIN`` in both spellings
    (``MATCH_CONDITION (a.t >= b.t)`` and DuckDB's ``ASOF [LEFT] JOIN ... ON``). An unfinished recording (a file that ends early)
    gives every complete message and logs a warning. A corrupt file raises
    :class:`QueryError`, naming the file, the byte offset and the cause, with the
    rows computed from every readable message in ``partial``
    (``options={"on_error": "warn"}`` only logs damage; ``"error"`` also raises
    for unfinished recordings). Planning errors raise as before (no rows).
    """
    import pyarrow

    reader = pyarrow.RecordBatchReader.from_stream(_native.sql(query, _options(options)))
    batches = []
    try:
        for batch in reader:
            batches.append(batch)
    except Exception as e:  # the stream's error: raised after its rows
        partial = pyarrow.Table.from_batches(batches, schema=reader.schema)
        raise QueryError(str(e), partial) from e
    return pyarrow.Table.from_batches(batches, schema=reader.schema)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def info(path: PathLike) -> dict:
    """The summary of one local log file as a dict: ``format``, ``size``,
    ``indexed``, ``message_count``, ``start_time_ns``/``end_time_ns``,
    ``chunks`` and ``chunk_compression``, ``channels``, ``metadata``,
    ``properties``, ``damage`` (or ``None``), and ``topics`` (message counts and
    time ranges per topic, counted from message headers where the file states none)."""
    path = os.fspath(path)
    summary = _native.summary(path)
    summary["topics"] = sql(
        "SELECT topic, message_type, message_encoding, message_count, "
        "CAST(start_time AS BIGINT) AS start_time_ns, CAST(end_time AS BIGINT) AS end_time_ns "
        f"FROM topics({_literal(path)}) ORDER BY topic, message_type"
    ).to_pylist()
    return summary


def index(
    sources,
    catalog: str,
    dry_run: bool = False,
    device_key: Optional[str] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> dict:
    """``logsql index SOURCE... --catalog CATALOG``: the fleet catalog at
    ``catalog`` (a directory or an object-store prefix) brought up to date with
    the recordings ``sources`` (paths, globs or URLs; one or a list) list: new
    and changed recordings are read (summaries and indexes only), deleted ones
    dropped. Returns what changed: ``added``, ``changed``, ``removed`` (lists of
    locations), ``unchanged``, ``unreadable`` and ``damaged`` (location, reason),
    ``generation`` (``None`` when nothing was written), ``recordings``."""
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    return _native.index([os.fspath(s) for s in sources], os.fspath(catalog), dry_run, device_key,
                         _options(options))


class Catalog:
    """A fleet catalog ``logsql index`` wrote (see :func:`catalog`)."""

    def __init__(self, location: str, options: Optional[Mapping[str, Any]] = None):
        self.location = os.fspath(location)
        self._options = dict(options or {})

    def sql(self, query: str, options: Optional[Mapping[str, Any]] = None):
        """Runs ``query`` with this catalog as ``logsql.catalog``: ``recordings``
        and ``topics`` are its tables, and scans of catalogued recordings are
        pruned by it before any is opened. Returns a ``pyarrow.Table``."""
        return sql(query, {**self._options, **dict(options or {}), "catalog": self.location})

    def recordings(self):
        """One row per recording (location, format, size, times, counts, device,
        metadata, health, ...), as a ``pyarrow.Table``."""
        return sql(f"SELECT * FROM recordings({_literal(self.location)})", self._options)

    def topics(self):
        """One row per recording and topic (type, count, times, rate, largest gap, ...)."""
        return sql(f"SELECT * FROM catalog_topics({_literal(self.location)})", self._options)

    def chunks(self):
        """Each recording's chunk index, as the catalog keeps it."""
        return sql(f"SELECT * FROM catalog_chunks({_literal(self.location)})", self._options)

    def events(self):
        """The events kept with the catalog (``CAT/events/``: id, device,
        recording, start and end time, type, properties, created_at), oldest
        first; ``sql("INSERT INTO events ...")`` appends."""
        return self.sql("SELECT * FROM events ORDER BY start_time, end_time, id")

    def __repr__(self) -> str:
        return f"logsql.Catalog({self.location!r})"


def catalog(location: PathLike, options: Optional[Mapping[str, Any]] = None) -> Catalog:
    """The fleet catalog at ``location`` (a directory or an object-store
    prefix ``logsql index`` wrote): its ``recordings()``, ``topics()`` and
    ``chunks()`` tables, and ``sql()`` with the catalog set::

        fleet = logsql.catalog("catalog/")
        fleet.sql("SELECT device, count(*) FROM recordings GROUP BY device")
        fleet.sql("SELECT file, count(*) FROM 'fleet/' WHERE log_time BETWEEN ... GROUP BY file")
    """
    return Catalog(os.fspath(location), options)
