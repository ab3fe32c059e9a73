"""Roving beside Slurm in one run: the same trivial workloads on a local Slurm peer and on `roving up`, with ratios.

Slurm 22.05 (Debian `slurm-wlm`, munge) runs 2 slurmd nodes x 4 CPUs on localhost, as Roving's stack runs 2 local
nodes x 4 cores. The bench starts munged and the daemons (`slurmctld -c; slurmd -N n1; slurmd -N n2`, the conf below
written to /tmp/slurm/slurm.conf unless `--slurm-conf` names one), or reuses a peer already answering `scontrol ping`,
and stops only what it started. Missing Slurm is installed with apt-get when run as root; otherwise it says what to
install. Each side runs, in turn: N one-job workflows (`sbatch --wrap true`) submitted from 4 threads (jobs/s from the
first submit to the last end, and submits/s), an N-task array at concurrency 8 (`--array=1-N%8`), and a 20-job
chain (`--dependency=afterok:PREVIOUS`). Roving's side is ops/bench/e2e.py's `run_workloads`, once per layout of the
log named in `--layouts` (default r1): r1 is `roving up`'s embedded server; r3 three bare nats-servers of its own
(adapters.nats_cluster, every stream R3); r3-secure the shipped secure layout (adapters.nats_shipped_cluster: TLS
for clients and routes, per-role users, encrypted store, R3), given to Roving as the admin guide says. Each layout is
reported beside the others (`roving_<layout>`, `ratio_<layout>`), its `cpu_seconds.nats` being all its servers'.
`--nats-cluster 3` is `--layouts r1,r3`, `--secure` adds r3-secure.

Slurm's end times are slurmctld's own: each job's EndTime as `squeue -h -t all -o %i|%T|%e` shows it, polled every
0.5 s while the workload runs (accounting is off in the conf, so no `sacct`; MinJobAge=30 keeps an ended job listed for
30 s, longer than a poll). EndTime is in whole seconds, cut down, which can only flatter Slurm. Roving's end times are
its server's too (a workflow's last event). One JSON line:

    .venv/bin/python ops/bench/slurm_peer.py [--jobs 200] [--chain 20] [--layouts r1,r3,r3-secure] [--budget 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import e2e  # noqa: E402 - ops/bench, beside this file

RUN = Path("/tmp/slurm")
MUNGE_RUN = Path("/run/munge")
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo")
INSTALL = "as root: `apt-get install slurm-wlm munge` (Debian packages), then run the bench again"
SLURM_ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
               "PREEMPTED")
POLL = 0.5
TARGETS = {"one_job_jobs_per_s": 20.0, "task_array_tasks_per_s": 20.0, "chain_jobs_per_s": 60.0,
           "one_job_submits_per_s": 1.0}  # issue 43's, Roving/Slurm; submits must be ahead of sbatch's
CONF = f"""ClusterName=peer
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={RUN}/state
SlurmdSpoolDir={RUN}/spool/%n
SlurmctldPidFile={RUN}/slurmctld.pid
SlurmdPidFile={RUN}/slurmd-%n.pid
SlurmctldLogFile={RUN}/log/slurmctld.log
SlurmdLogFile={RUN}/log/slurmd-%n.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
MinJobAge=30
MaxJobCount=100000
NodeName=n1 NodeHostname=localhost Port=17001 CPUs=4 RealMemory=8000 State=UNKNOWN
NodeName=n2 NodeHostname=localhost Port=17002 CPUs=4 RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
"""


class PeerError(RuntimeError):
    """The Slurm peer is not installed or did not come up; the message says what to do."""


class SlurmPeer:
    """munged, slurmctld and two slurmds on localhost: started here, or reused when already running."""

    def __init__(self, conf: Path | None) -> None:
        self.conf = conf or RUN / "slurm.conf"
        self.written = conf is None
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), "PATH": SBIN}
        self.started_munge = self.started_slurm = False

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=60)
        if check and done.returncode:
            raise PeerError(f"`{' '.join(command)}` exited {done.returncode}: {done.stderr.strip()[-500:]}")
        return done

    def start(self) -> None:
        installed()
        if self.written and not (self.conf.is_file() and self.conf.read_text() == CONF):
            (RUN / "log").mkdir(parents=True, exist_ok=True)
            self.conf.write_text(CONF)
        if not self.conf.is_file():
            raise PeerError(f"--slurm-conf {self.conf}: no such file")
        self.started_munge = self._munge()
        if self.run("scontrol", "ping", check=False).returncode == 0:
            return
        root_only("start slurmctld and slurmd")
        for sub in ("state", "spool", "log"):
            (RUN / sub).mkdir(parents=True, exist_ok=True)
        self.run("slurmctld", "-c")
        self.started_slurm = True
        for node in ("n1", "n2"):
            self.run("slurmd", "-N", node)
        self._wait_idle(2, 60)

    def _munge(self) -> bool:
        """munged, if none answers; whether it was started here."""
        if self.run("munge", "-n", check=False).returncode == 0:
            return False
        root_only("start munged")
        MUNGE_RUN.mkdir(parents=True, exist_ok=True)
        shutil.chown(MUNGE_RUN, "munge", "munge")
        self.run("runuser", "-u", "munge", "--", "munged")
        return True

    def _wait_idle(self, nodes: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout.split("\n")
            if sum(line.endswith(" idle") for line in states) >= nodes:
                return
            time.sleep(0.5)
        raise PeerError(f"Slurm's {nodes} nodes were not idle in {timeout:.0f}s; see {RUN}/log")

    def stop(self) -> None:
        """What this run started, nothing else. `scontrol shutdown` stops slurmctld, which is meant to stop the
        slurmds too; some outlived it here, so each daemon left is sent SIGTERM by the pid its file names."""
        if self.started_slurm:
            files = [RUN / "slurmctld.pid", RUN / "slurmd-n1.pid", RUN / "slurmd-n2.pid"]
            pids = [pid for path in files if (pid := read_pid(path, "slurm"))]
            self.run("scontrol", "shutdown", check=False)
            end(pids, grace=10)
        if self.started_munge and (pid := read_pid(MUNGE_RUN / "munged.pid", "munged")):
            end([pid], grace=0)


def installed() -> None:
    """Slurm's and munge's programs, installed with apt-get when missing and run as root."""
    if all(shutil.which(tool, path=SBIN) for tool in TOOLS):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise PeerError(f"Slurm is not installed ({', '.join(t for t in TOOLS if not shutil.which(t, path=SBIN))} "
                        f"missing): {INSTALL}")
    done = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "slurm-wlm", "munge"],
                          env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, capture_output=True, text=True)
    if done.returncode or not all(shutil.which(tool, path=SBIN) for tool in TOOLS):
        raise PeerError(f"apt-get could not install slurm-wlm and munge ({done.stderr.strip()[-300:]}): {INSTALL}")


def root_only(what: str) -> None:
    if os.geteuid() != 0:
        raise PeerError(f"no Slurm peer is running and only root can {what} (the conf runs them as root): "
                        f"run the bench as root, or start the peer and pass --slurm-conf")


def read_pid(path: Path, program: str) -> int | None:
    """The pid a daemon's file names, if that process runs `program` (not a reused pid)."""
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if program in e2e._cmdline(pid) else None


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still running after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        time.sleep(0.2)
        pids = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    return pids


def end(pids: list[int], grace: float) -> None:
    """Gone within `grace` seconds on their own, else within 10 after SIGTERM, else killed."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        for pid in wait_gone(pids, wait):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    wait_gone(pids, 5)


class SlurmWatch:
    """Ended jobs and their EndTime, as `squeue -t all` lists them; kept across polls (Slurm forgets after MinJobAge)."""

    def __init__(self, peer: SlurmPeer) -> None:
        self.peer = peer
        self.ended: dict[str, tuple[str, float]] = {}

    def poll(self) -> None:
        listing = self.peer.run("squeue", "-h", "-t", "all", "-o", "%i|%T|%e", check=False).stdout
        for line in listing.splitlines():
            job, state, end = (line.split("|") + ["", ""])[:3]
            if state in SLURM_ENDED and job not in self.ended:
                self.ended[job] = (state, datetime.strptime(end, "%Y-%m-%dT%H:%M:%S").timestamp())

    def wait(self, ids: list[str], budget: float) -> tuple[dict[str, tuple[str, float]], bool]:
        """The jobs' states and end times once all ended (False) or when the budget ran out (True)."""
        deadline = time.monotonic() + budget
        while True:
            self.poll()
            found = {job: self.ended[job] for job in ids if job in self.ended}
            if len(found) == len(ids):
                return found, False
            if time.monotonic() > deadline:
                return found, True
            time.sleep(POLL)


def sbatch(peer: SlurmPeer, *options: str) -> str:
    """One `sbatch --wrap true`, as a user types it; the job's id."""
    return peer.run("sbatch", "--parsable", "-o", "/dev/null", "--chdir", tempfile.gettempdir(), *options,
                    "--wrap", "true").stdout.strip().split(";")[0]


def figures(found: dict[str, tuple[str, float]], count: int, began: float, timed_out: bool) -> dict:
    last = max((end for _, end in found.values()), default=time.time())
    return {"jobs": count, "ended": len(found), "failed": sum(state != "COMPLETED" for state, _ in found.values()),
            "per_s": round(len(found) / max(last - began, 1e-9), 2), "seconds": round(last - began, 1),
            "timed_out": timed_out}


def slurm_singles(peer: SlurmPeer, count: int, threads: int, budget: float) -> dict:
    began = time.time()
    with ThreadPoolExecutor(threads) as pool:
        ids = list(pool.map(lambda _: sbatch(peer), range(count)))
    submitted = time.time() - began
    found, timed_out = SlurmWatch(peer).wait(ids, budget)
    return {**figures(found, count, began, timed_out), "submits_per_s": round(count / submitted, 1)}


def slurm_array(peer: SlurmPeer, tasks: int, budget: float) -> dict:
    began = time.time()
    job = sbatch(peer, f"--array=1-{tasks}%8")
    found, timed_out = SlurmWatch(peer).wait([f"{job}_{k}" for k in range(1, tasks + 1)], budget)
    return figures(found, tasks, began, timed_out)


def slurm_chain(peer: SlurmPeer, length: int, budget: float) -> dict:
    began = time.time()
    ids = [sbatch(peer)]
    for _ in range(length - 1):
        ids.append(sbatch(peer, f"--dependency=afterok:{ids[-1]}"))
    found, timed_out = SlurmWatch(peer).wait(ids, budget)
    return figures(found, length, began, timed_out)


def slurm_workloads(peer: SlurmPeer, args: argparse.Namespace) -> dict:
    return {"one_job": slurm_singles(peer, args.jobs, 4, args.slurm_budget),
            "task_array": slurm_array(peer, args.jobs, args.slurm_budget),
            "chain": slurm_chain(peer, args.chain, args.slurm_budget)}


def roving_workloads(args: argparse.Namespace, layout: str) -> dict:
    """e2e.py's workloads on `layout` (e2e.LAYOUTS), its nats-servers' CPU counted over the same window as the rest."""
    run = argparse.Namespace(budget=args.budget, singles=0, jobs=args.jobs, chain=args.chain, nats=layout)
    return e2e.on_layout(run, {})


def ratios(roving: dict, slurm: dict) -> dict:
    """Roving/Slurm (above 1: Roving faster), and whether each meets issue 43's target."""
    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 2) if a and b else None
    found = {"one_job_jobs_per_s": ratio(roving["one_job_workflows"]["jobs_per_s"], slurm["one_job"]["per_s"]),
             "one_job_submits_per_s": ratio(roving["one_job_workflows"]["submits_per_s"],
                                            slurm["one_job"]["submits_per_s"]),
             "task_array_tasks_per_s": ratio(roving["task_array"]["tasks_per_s"], slurm["task_array"]["per_s"]),
             "chain_jobs_per_s": ratio(roving["chain"]["jobs_per_s"], slurm["chain"]["per_s"])}
    met = {name: value is not None and (value > 1 if name == "one_job_submits_per_s" else value >= TARGETS[name])
           for name, value in found.items()}
    return {**found, "targets_met": met}


def summary(roving: dict) -> dict:
    """A layout's rates, and its CPU a job (the three workloads' jobs together), in one row beside the others."""
    cpu = roving["cpu_seconds"]
    jobs = roving["one_job_workflows"]["ended"] + roving["task_array"]["ended"] + roving["chain"]["ended"]
    return {"one_job_jobs_per_s": roving["one_job_workflows"]["jobs_per_s"],
            "one_job_submits_per_s": roving["one_job_workflows"]["submits_per_s"],
            "task_array_tasks_per_s": roving["task_array"]["tasks_per_s"],
            "chain_jobs_per_s": roving["chain"]["jobs_per_s"],
            "cpu_ms_per_job": {who: round(seconds * 1000 / max(jobs, 1), 1) for who, seconds in cpu.items()},
            "cpu_ms_per_job_total": round(sum(cpu.values()) * 1000 / max(jobs, 1), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200, help="one-job workflows, and tasks of the array (default 200)")
    parser.add_argument("--chain", type=int, default=20, help="jobs in the dependency chain (default 20)")
    parser.add_argument("--layouts", type=e2e.layout_list, default=["r1"],
                        help=f"the logs Roving runs on, in order, comma-separated ({','.join(e2e.LAYOUTS)}; default r1)")
    parser.add_argument("--nats-cluster", type=int, default=0, choices=(0, 3),
                        help="3: Roving also on a three-server R3 NATS cluster, beside the embedded R1 server")
    parser.add_argument("--secure", action="store_true",
                        help="Roving also on the shipped secure R3 layout (TLS, users, encrypted store)")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds each Roving workload may take (default 60)")
    parser.add_argument("--slurm-budget", type=float, default=300.0,
                        help="seconds each Slurm workload may take (default 300)")
    parser.add_argument("--slurm-conf", type=Path, help="a Slurm peer's conf instead of the one written to /tmp/slurm")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.chain < 1:
        parser.error("--jobs and --chain: at least 1")
    wanted = args.layouts + ["r3"] * bool(args.nats_cluster) + ["r3-secure"] * args.secure
    args.layouts = list(dict.fromkeys(wanted))
    peer = SlurmPeer(args.slurm_conf.resolve() if args.slurm_conf else None)
    result: dict = {"bench": "slurm_peer", "nodes": "2x4", "jobs": args.jobs, "chain_length": args.chain,
                    "loadavg_at_start": round(os.getloadavg()[0], 2)}
    try:
        peer.start()
        result["slurm_reused"] = not peer.started_slurm
        result["slurm"] = slurm_workloads(peer, args)
    except PeerError as error:
        print(f"slurm_peer: {error}", file=sys.stderr)
        return 2
    finally:
        peer.stop()
    for layout in args.layouts:
        key = layout.replace("-", "_")
        result[f"roving_{key}"] = roving = roving_workloads(args, layout)
        result[f"ratio_{key}"] = ratios(roving, result["slurm"])
    result["by_layout"] = {layout: summary(result[f"roving_{layout.replace('-', '_')}"]) for layout in args.layouts}
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
