#!/usr/bin/env python3
"""threadmon.py — where each thread of a GPU test run ran, and how often it slept.

    test/gpu/threadmon.py OUT.json [NAME] &   # then run the jobs; kill -INT it

Why: with every event type on, NCCL's speed at 256 KiB-4 MiB depends on
its proxy thread (test/gpu/timed_plugin.c), and runs land in a fast or a
slow regime at random.  Whether the regime follows where the scheduler put
the proxy thread (next to the application thread, on a CPU another thread
keeps busy) or how often it went to sleep (each wake-up is an inter-
processor interrupt, slow in a virtual machine) can be read from /proc
without touching the job: this polls every process named NAME (default
collprof-gpu-app) every 20 ms and keeps, per thread, its name, the CPUs it
was seen on, and its last voluntary/involuntary context switches and CPU
time.  Each process is keyed by its COLLPROF_OUTPUT_DIR (overhead.sh gives
every run its own), so a run's threads can be matched with its results.
At SIGINT/SIGTERM it writes OUT.json: {run dir: {pid: {tid: {...}}}}.
"""
import json
import os
import signal
import sys
import time

out = sys.argv[1]
name = sys.argv[2] if len(sys.argv) > 2 else "collprof-gpu-app"
tick = os.sysconf("SC_CLK_TCK")
seen = {}      # pid -> {"run": dir, "threads": {tid: {...}}}
stop = False


def on_signal(*_):
    global stop
    stop = True


signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def run_of(pid):
    env = read(f"/proc/{pid}/environ")
    if env is None:
        return None
    for kv in env.split(b"\0"):
        if kv.startswith(b"COLLPROF_OUTPUT_DIR="):
            return kv.split(b"=", 1)[1].decode(errors="replace")
    return "?"


def poll():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        comm = read(f"/proc/{pid}/comm")
        if comm is None or comm.strip().decode(errors="replace") != name[:15]:
            continue
        p = seen.get(pid)
        if p is None:
            r = run_of(pid)
            if r is None:
                continue
            p = seen[pid] = {"run": r, "threads": {}}
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            stat = read(f"/proc/{pid}/task/{tid}/stat")
            status = read(f"/proc/{pid}/task/{tid}/status")
            if stat is None or status is None:
                continue
            s = stat.decode(errors="replace")
            tname = s[s.index("(") + 1:s.rindex(")")]
            f = s[s.rindex(")") + 2:].split()
            # fields after the name: f[0] is field 3 (state); utime 14, stime 15, processor 39
            t = p["threads"].setdefault(tid, {"name": tname, "cpus": [], "samples": 0})
            t["name"] = tname
            cpu = int(f[36])
            if cpu not in t["cpus"]:
                t["cpus"].append(cpu)
            t["samples"] += 1
            t["cpu_s"] = (int(f[11]) + int(f[12])) / tick
            for line in status.decode(errors="replace").splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    t["vcsw"] = int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    t["ivcsw"] = int(line.split()[1])


while not stop:
    poll()
    time.sleep(0.02)
by_run = {}
for pid, p in seen.items():
    by_run.setdefault(p["run"], {})[pid] = p["threads"]
with open(out, "w") as f:
    json.dump(by_run, f, indent=1)
