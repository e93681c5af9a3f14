#!/usr/bin/env python3
"""node-race-analyze.py - the node race's per-run table from what tools/bench/node-race-runs.sh
recorded (tools/bench/node-race.sh runs it; rerun it alone to re-analyse).

  node-race-analyze.py OUTDIR CONFIG:THRESHOLD_MI...

OUTDIR/CONFIG/ holds one configuration's boot (meta.tsv, sampler-stamped.log, watch.log,
kubelet.log, evictd.log, console.log); THRESHOLD_MI is the memory.available threshold of that
configuration's actor (evictd's shipped 500Mi; the kubelet's 100Mi), whose crossing starts the
clock. Writes OUTDIR/runs.tsv (one line a run) and OUTDIR/summary.md (one row per configuration
and rate).

Clocks: the guest stamps each sample with its CLOCK_REALTIME, the host stamps each sample line
when it reads it from the serial port's file; per run the offset is the least (host - guest)
over the run's samples (the serial path's latency is >= 0, so this is the offset plus the
fastest line's latency). Guest times (samples, the kubelet's klog, containerd's CRI log stamps
of evictd's lines) are moved to the host's clock with it; the API's times (the watch) are the
host's own.
"""
import calendar
import os
import re
import statistics
import sys
import time

MI = 1048576


def fnum(x, fmt="%.2f"):
    return "NA" if x is None else fmt % x


def load_samples(path):
    out = []
    for line in open(path, errors="replace"):
        p = line.split()
        if len(p) != 6 or p[1] != "S":
            continue
        try:
            out.append((float(p[0]), float(p[2]), int(p[3]), int(p[4]), int(p[5])))
        except ValueError:
            continue
    return out  # (host, guest, avail, memavail, oom)


def klog_time(line, year):
    m = re.match(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)", line)
    if not m:
        return None
    mo, d, h, mi, s, frac = m.groups()
    return calendar.timegm((year, int(mo), int(d), int(h), int(mi), int(s))) + float("0." + frac)


def cri_time(ts):
    # 2026-11-28T20:15:01.123456789Z
    m = re.match(r"^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)(\.\d+)?Z", ts)
    if not m:
        return None
    y, mo, d, h, mi, s, frac = m.groups()
    return calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(s))) + float(frac or 0)


def text(path):
    """A log's text; a boot stopped early may lack it."""
    return open(path, errors="replace").read() if os.path.exists(path) else ""


def analyse(outdir, config, thr_mi):
    d = os.path.join(outdir, config)
    thr = thr_mi * MI
    samples = load_samples(os.path.join(d, "sampler-stamped.log"))
    watch = []
    for line in open(os.path.join(d, "watch.log"), errors="replace"):
        host, _, rest = line.rstrip("\n").partition(" ")
        f = rest.split("|")
        if len(f) >= 8:
            watch.append((float(host), f))
    klines = text(os.path.join(d, "kubelet.log")).splitlines()
    elines = text(os.path.join(d, "evictd.log")).splitlines()
    # "Out of memory: Killed process PID (NAME)", one per kernel OOM kill (/proc/vmstat oom_kill
    # counts each; the same process may be chosen twice by OOM kills racing on two CPUs)
    victims = ["%s[%s]" % (m.group(2), m.group(1)) for m in re.finditer(
        r"Out of memory: Killed process (\d+) \(([^)]*)\)", text(os.path.join(d, "console.log")))]
    # memhog's own progress lines ("memhog: pid=N allocated=M MiB rate=R MiB/s", its average
    # since it started): the last one per pod
    memhog = {}
    if os.path.exists(os.path.join(d, "hog.log")):
        for line in open(os.path.join(d, "hog.log"), errors="replace"):
            m = re.search(r"rate=([0-9.]+) MiB/s", line)
            pm = re.match(r"^[^_]*_([^_]*)_", line)
            if m and pm:
                memhog[pm.group(1)] = float(m.group(1))
    rows = []
    for meta in open(os.path.join(d, "meta.tsv")):
        f = meta.rstrip("\n").split("\t")
        rid, rate, hog, uid = f[0], int(f[1]), f[2], f[3]
        t_apply, t_run, t_end = float(f[4]), float(f[5]), float(f[6])
        end, before, after = f[7], f[8], f[9]
        year = time.gmtime(t_run).tm_year
        win = [s for s in samples if t_apply - 2 <= s[0] <= t_end + 2]
        if not win:
            rows.append(dict(config=config, rate=rate, run=rid, hog=hog, first="NA", end=end))
            continue
        off = min(s[0] - s[1] for s in win)
        ser = [(s[1] + off, s[2], s[4]) for s in win]  # host-clock time, avail, oom
        run_ser = [s for s in ser if s[0] >= t_run]
        # crossing: the first fall below a threshold after Running, interpolated
        def crossing(level):
            for i in range(1, len(run_ser)):
                (t0, a0, _), (t1, a1, _) = run_ser[i - 1], run_ser[i]
                if a0 >= level > a1:
                    return t0 + (a0 - level) / (a0 - a1) * (t1 - t0)
            return None
        cross = crossing(thr)
        # the same clock for every configuration: from 500Mi (evictd's shipped threshold)
        cross500 = crossing(500 * MI)
        until_end = [s for s in run_ser if s[0] <= t_end + 2]
        min_avail = min(s[1] for s in until_end) / MI if until_end else None
        oom0, oom1 = ser[0][2], ser[-1][2]
        kernel_t = next((s[0] for s in run_ser if s[2] > oom0), None)
        # achieved rate: from 100 MiB to 500 MiB below the memory.available at Running
        rate_got = None
        if run_ser:
            base = run_ser[0][1]
            # least squares over the samples from 100 to 500 MiB below it (the samples'
            # spacing is uneven under load)
            i1 = next((i for i, s in enumerate(run_ser) if s[1] < base - 100 * MI), None)
            i2 = next((i for i, s in enumerate(run_ser) if s[1] < base - 500 * MI), None)
            if i1 is not None and i2 is not None and i2 - i1 >= 2:
                pts = run_ser[i1:i2 + 1]
                mt = statistics.fmean(p[0] for p in pts)
                ma = statistics.fmean(p[1] for p in pts)
                den = sum((p[0] - mt) ** 2 for p in pts)
                if den > 0:
                    rate_got = -sum((p[0] - mt) * (p[1] - ma) for p in pts) / den / MI
        # the kubelet's eviction manager: its "Evicting pod" line (eviction_manager.go evictPod,
        # just before killPodFunc)
        kubelet_t = None
        for line in klines:
            if "Evicting pod" in line and hog in line:
                t = klog_time(line, year)
                if t is not None and t + off >= t_run:
                    kubelet_t = t + off
                    break
        # evictd: its own log stamps (guest CLOCK_REALTIME, ms; containerd's CRI stamp comes
        # later): the decision ("decision: hard ... victim=NS/POD") and the cgroup.kill ("kill:
        # PATH empty X ms after the kill", less X; user/act/executor.c)
        evictd_t = decision_t = None
        for line in elines:
            p = line.split(" ", 5)
            if len(p) < 6:
                continue
            t = cri_time(p[4])
            if t is None:
                continue
            if decision_t is None and "decision: " in p[5] and \
                    re.search(r"victim=[^ ]*/%s\b" % re.escape(hog), p[5]) and t + off >= t_run:
                decision_t = t + off
            if uid not in p[5] and uid.replace("-", "_") not in p[5]:
                continue
            m = re.search(r"empty ([0-9.]+) ms after the kill", p[5])
            if m and evictd_t is None:
                evictd_t = t + off - float(m.group(1)) / 1000
        # evictd read memory.available below its threshold at its decision: where the sampler
        # (one sample every ~0.1-0.5 s) saw no crossing, that reading is the crossing's bound
        crossed = "yes" if cross is not None else "no"
        if cross is None and decision_t is not None and thr_mi == 500:
            cross, crossed = decision_t, "evictd's reading"
        if cross500 is None and decision_t is not None:
            cross500 = decision_t
        acts = [(t, who) for t, who in ((evictd_t, "evictd"), (kubelet_t, "kubelet"), (kernel_t, "kernel OOM"))
                if t is not None]
        first, t_kill = (min(acts)[1], min(acts)[0]) if acts else ("none", None)
        failed_t = next((h for h, w in watch if w[0] == hog and w[2] == "Failed" and h >= t_run), None)
        repl_t = next((h for h, w in watch if w[0].startswith("hog-%s-" % rid) and w[0] != hog and h >= t_run), None)
        lost = sum(1 for a, b in zip(sorted(before.split(",")), sorted(after.split(","))) if a != b)
        rows.append(dict(
            config=config, rate=rate, run=rid, hog=hog, first=first, end=end,
            achieved=memhog.get(hog, rate_got), avail_rate=rate_got, cross_kill=(t_kill - cross) if cross is not None and t_kill is not None else None,
            cross_failed=(failed_t - cross) if cross is not None and failed_t is not None else None,
            cross_repl=(repl_t - cross) if cross is not None and repl_t is not None else None,
            min_avail=min_avail, oom=oom1 - oom0, lost=lost, offset_ms=off * 1000,
            crossed=crossed,
            cross500_kill=(t_kill - cross500) if cross500 is not None and t_kill is not None else None,
            cross_decision=(decision_t - cross) if cross is not None and decision_t is not None else None,
            victims=",".join(victims[oom0 - samples[0][4]:oom1 - samples[0][4]]) or "-"))
    return rows


def med_range(vals, fmt="%.2f"):
    v = [x for x in vals if x is not None]
    if not v:
        return "—"
    s = fmt % statistics.median(v)
    if len(v) > 1:
        s += " (%s–%s)" % (fmt % min(v), fmt % max(v))
    return s


def main():
    outdir = sys.argv[1]
    allrows = []
    labels = {}
    for spec in sys.argv[2:]:
        config, thr = spec.split(":")
        if not os.path.exists(os.path.join(outdir, config, "meta.tsv")):
            continue
        labels[config] = int(thr)
        allrows += analyse(outdir, config, int(thr))
    cols = ["config", "rate", "run", "hog", "first", "achieved", "avail_rate", "crossed", "cross_decision", "cross_kill", "cross500_kill", "cross_failed",
            "cross_repl", "min_avail", "oom", "victims", "lost", "offset_ms", "end"]
    with open(os.path.join(outdir, "runs.tsv"), "w") as fh:
        fh.write("\t".join(cols) + "\n")
        for r in allrows:
            fh.write("\t".join(
                fnum(r.get(c)) if isinstance(r.get(c), float) or r.get(c) is None else str(r.get(c))
                for c in cols) + "\n")
    with open(os.path.join(outdir, "summary.md"), "w") as fh:
        fh.write("| configuration | hog rate (achieved MiB/s) | runs | acted first: evictd / kubelet / kernel OOM / none "
                 "| crossing → evictd's decision s | crossing → kill s | 500Mi crossing → kill s | crossing → pod Failed in the API s | crossing → replacement created s "
                 "| min memory.available MiB | kernel OOM kills (victims) | other pods lost | clock offset ms |\n")
        fh.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        # a configuration's second boot is CONFIG@WHAT (another rate, say): one label
        for config in labels:
            for rate in sorted({r["rate"] for r in allrows if r["config"] == config}):
                rs = [r for r in allrows if r["config"] == config and r["rate"] == rate]
                cnt = {w: sum(1 for r in rs if r["first"] == w) for w in ("evictd", "kubelet", "kernel OOM", "none", "NA")}
                procs = {v for r in rs for v in r.get("victims", "-").split(",") if v != "-"}
                names = sorted({v.split("[")[0] for v in procs})
                vict = ["%d processes: %s" % (len(procs), ", ".join(names))] if procs else []
                ncross = sum(1 for r in rs if r.get("crossed") != "no")
                fh.write("| %s (threshold %dMi) | %d (%s) | %d | %d / %d / %d / %d | %s | %s | %s | %s | %s | %s | %d%s | %d | %s |\n" % (
                    config.split("@")[0], labels[config], rate, med_range([r.get("achieved") for r in rs], "%.0f"), len(rs),
                    cnt["evictd"], cnt["kubelet"], cnt["kernel OOM"], cnt["none"] + cnt["NA"],
                    med_range([r.get("cross_decision") for r in rs]), med_range([r.get("cross_kill") for r in rs]),
                    med_range([r.get("cross500_kill") for r in rs]), med_range([r.get("cross_failed") for r in rs]),
                    med_range([r.get("cross_repl") for r in rs]),
                    med_range([r.get("min_avail") for r in rs], "%.0f") + ("" if ncross == len(rs) else
                                                                            ", crossed in %d of %d" % (ncross, len(rs))),
                    sum(r.get("oom", 0) for r in rs), " (%s)" % ", ".join(vict) if vict else "",
                    sum(r.get("lost", 0) for r in rs),
                    med_range([r.get("offset_ms") for r in rs], "%.0f")))
    print(open(os.path.join(outdir, "summary.md")).read())


if __name__ == "__main__":
    main()
