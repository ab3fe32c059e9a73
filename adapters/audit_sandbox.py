"""Tenant SQL runs in a process of its own, over a database holding only the rows its reader may see.

DuckDB's `memory_limit` bounds its buffer manager, not the lists and strings a query builds (a one-line
`SELECT len(range(200000000))` takes gigabytes under a 256 MB limit), and an in-process query shares the
API's memory. So each query gets a child interpreter (`python -m adapters.audit_sandbox`, about 0.2 s to start: no fork
of the threaded API) that first limits its own address space (`RLIMIT_AS`) and CPU;
there a fresh in-memory DuckDB sets memory_limit, threads and max_temp_directory_size, loads the reader's
rows from a Parquet file the parent wrote, turns external access off and locks its configuration before
the tenant's SQL runs. A query past its memory fails in the child (or kills it), never in the API; a query
past its time is killed. The answer comes back pickled, refused when it is larger than `max_answer_bytes`.
"""

from __future__ import annotations

import math
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Limits:
    """What one audit query may use; `parallel` queries run at once (each in its own process)."""

    address_space: int = 1 << 30
    duckdb_memory: str = "256MB"
    threads: int = 1
    temp_space: str = "256MB"
    seconds: float = 10.0
    max_answer_bytes: int = 32 << 20
    parallel: int = 2


class SandboxFailed(Exception):
    """The query could not finish in its sandbox; `reason` is memory, time, size or error."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Sandbox:
    """Runs tenant SQL in child processes, at most `limits.parallel` at a time."""

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self._turns = threading.BoundedSemaphore(limits.parallel)

    def run(self, rows: Path, sql: str, max_rows: int) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self._turns:
            return self._run(rows, sql, max_rows)

    def _run(self, rows: Path, sql: str, max_rows: int) -> tuple[list[str], list[tuple[Any, ...]]]:
        request = pickle.dumps((str(rows), sql, self.limits, max_rows))
        with subprocess.Popen([sys.executable, "-m", "adapters.audit_sandbox"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}) as child:
            try:
                out, _ = child.communicate(request, timeout=self.limits.seconds)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
                raise SandboxFailed("time", f"the query ran past {self.limits.seconds:g}s and was stopped") from None
        if not out:
            raise SandboxFailed("memory", self._death(child.returncode))
        kind, *answer = pickle.loads(out)
        if kind != "ok":
            raise SandboxFailed(kind, answer[0])
        return answer[0], answer[1]

    def _death(self, code: int | None) -> str:
        return (f"the query was stopped by its limits ({self.limits.address_space >> 20} MiB of memory, "
                f"{self.limits.seconds:g}s of CPU) with exit code {code}")


def run_child(rows: str, sql: str, limits: Limits, max_rows: int) -> bytes:
    """In the child: limit the process, build the reader's database, run the SQL, pack one answer."""
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space, limits.address_space))
    cpu = math.ceil(limits.seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    try:
        answer = _answer(rows, sql, limits, max_rows)
    except (duckdb.OutOfMemoryException, MemoryError) as error:
        answer = ("memory", f"the query needs more memory than its limit ({limits.duckdb_memory} for DuckDB, "
                            f"{limits.address_space >> 20} MiB for the process): {_first_line(error)}")
    except duckdb.InterruptException:
        answer = ("time", f"the query ran past {limits.seconds:g}s and was stopped")
    except duckdb.Error as error:
        answer = ("error", f"the query failed: {error}")
    return _packed(answer, limits.max_answer_bytes)


def _answer(rows: str, sql: str, limits: Limits, max_rows: int) -> tuple[Any, ...]:
    with tempfile.TemporaryDirectory(prefix="roving-audit-query-") as spill:
        connection = duckdb.connect(":memory:")
        for setting in (f"SET memory_limit = '{limits.duckdb_memory}'", f"SET threads = {int(limits.threads)}",
                        f"SET temp_directory = {_literal(spill)}", f"SET max_temp_directory_size = '{limits.temp_space}'"):
            connection.execute(setting)
        connection.execute(f"CREATE TABLE audit AS SELECT * FROM read_parquet({_literal(rows)})")
        connection.execute("SET enable_external_access = false")
        connection.execute("SET lock_configuration = true")
        result = connection.execute(sql)
        columns = [d[0] for d in result.description]
        return "ok", columns, result.fetchmany(max_rows + 1)


def _packed(answer: tuple[Any, ...], limit: int) -> bytes:
    try:
        packed = pickle.dumps(answer)
    except (MemoryError, pickle.PicklingError, TypeError) as error:
        return pickle.dumps(("error", f"the answer cannot be sent back: {_first_line(error)}"))
    if len(packed) > limit:
        return pickle.dumps(("size", f"the answer is {len(packed):,} bytes, over the limit of {limit:,}: "
                                     "select fewer columns or rows"))
    return packed


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


if __name__ == "__main__":
    sys.stdout.buffer.write(run_child(*pickle.loads(sys.stdin.buffer.read())))
