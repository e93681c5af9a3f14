#!/usr/bin/env python3
"""The fleet benchmark's measurements (tools/bench/fleet.sh): kube-apiserver's own /metrics.

  fleet_metrics.py scrape --api URL --ca F --cert F --key F --out FILE [--every S]
      one scrape (or one every S seconds until SIGTERM), each a JSON line appended to FILE;
      a failed scrape (the server down) is a line with "ok": false
  fleet_metrics.py analyze --series FILE --marks FILE
      the "fleet EVENT WHO: ..." lines of every window in the marks file
  fleet_metrics.py table RAW
      the bench/results.md section from RAW's "fleet ..." lines

What a scrape keeps (sums over every other label):
  list, watch   apiserver_request_total{verb=LIST|WATCH, resource=pods}: requests COMPLETED
                (the apiserver counts a request when its handler returns: a watch when it ends;
                a watch cut by a SIGKILL is never counted)
  open          apiserver_longrunning_requests{verb=WATCH, resource=pods}: watches open now
  term          apiserver_request_terminations_total{resource=pods}: requests the filters ended
                before the handler (APF's 429, timeouts)
  rejected      apiserver_flowcontrol_rejected_requests_total, all; by priority level
  dispatched    apiserver_flowcontrol_dispatched_requests_total by flow schema
  cpu, rss, start   process_cpu_seconds_total, process_resident_memory_bytes,
                process_start_time_seconds of kube-apiserver
Requests STARTED in a window = LIST + WATCH completed + (open at its end - open at its start)
+ terminations, per apiserver process: a restart starts every counter at 0 again, so each
process's part is counted from its own first value (0 for the one started in the window).

The marks file: "T WHO EVENT begin|end|ready" (T: time.time()), and
"T WHO EVENT client KEY=VALUE ..." (the fleet's own counters at the window's end).
"""
import argparse
import json
import math
import re
import signal
import ssl
import sys
import time
import http.client
from urllib.parse import urlparse

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    want = {
        'apiserver_request_total', 'apiserver_longrunning_requests',
        'apiserver_request_terminations_total', 'apiserver_flowcontrol_rejected_requests_total',
        'apiserver_flowcontrol_dispatched_requests_total', 'process_cpu_seconds_total',
        'process_resident_memory_bytes', 'process_start_time_seconds',
    }
    s = {'ok': True, 'list': 0, 'watch': 0, 'open': 0, 'term': 0, 'rejected': 0,
         'rejected_by': {}, 'dispatched': {}, 'list_codes': {}, 'watch_codes': {}}
    for line in text.splitlines():
        if not line or line[0] == '#':
            continue
        m = LINE.match(line)
        if not m or m.group(1) not in want:
            continue
        name, labels, value = m.group(1), dict(LABEL.findall(m.group(3) or '')), float(m.group(4))
        pods = labels.get('resource') == 'pods' and labels.get('subresource', '') == ''
        verb = labels.get('verb')
        if name == 'apiserver_request_total' and pods and verb in ('LIST', 'WATCH'):
            key = verb.lower()
            s[key] += value
            codes = s[key + '_codes']
            codes[labels.get('code', '?')] = codes.get(labels.get('code', '?'), 0) + value
        elif name == 'apiserver_longrunning_requests' and pods and verb == 'WATCH':
            s['open'] += value
        elif name == 'apiserver_request_terminations_total' and pods and verb in ('LIST', 'WATCH'):
            s['term'] += value
        elif name == 'apiserver_flowcontrol_rejected_requests_total':
            s['rejected'] += value
            pl = labels.get('priority_level', '?')
            s['rejected_by'][pl] = s['rejected_by'].get(pl, 0) + value
        elif name == 'apiserver_flowcontrol_dispatched_requests_total':
            fs = labels.get('flow_schema', '?')
            s['dispatched'][fs] = s['dispatched'].get(fs, 0) + value
        elif name == 'process_cpu_seconds_total':
            s['cpu'] = value
        elif name == 'process_resident_memory_bytes':
            s['rss'] = value
        elif name == 'process_start_time_seconds':
            s['start'] = value
    return s


def scrape_once(args, context):
    url = urlparse(args.api)
    t0 = time.time()
    try:
        conn = http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=10)
        conn.request('GET', '/metrics')
        response = conn.getresponse()
        body = response.read().decode('utf-8', 'replace')
        conn.close()
        if response.status != 200:
            raise OSError('HTTP %d' % response.status)
        s = parse(body)
    except (OSError, http.client.HTTPException) as e:
        s = {'ok': False, 'error': str(e)[:120]}
    # The time the server answered, about: between the request and the end of the body.
    s['t'] = round((t0 + time.time()) / 2, 3)
    s['t0'] = round(t0, 3)
    return s


def cmd_scrape(args):
    context = ssl.create_default_context(cafile=args.ca)
    context.load_cert_chain(args.cert, args.key)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(args.out, 'a') as out:
        while not stop:
            start = time.time()
            out.write(json.dumps(scrape_once(args, context), separators=(',', ':')) + '\n')
            out.flush()
            if not args.every:
                break
            time.sleep(max(0.05, args.every - (time.time() - start)))


# ---- analysis ---------------------------------------------------------------------------------

def started(s):
    """Requests started up to this sample, of this process (watches open count as started)."""
    return s['list'] + s['watch'] + s['open'] + s['term']


def window(series, a, b):
    """The samples of [a, b] and the baseline just before a."""
    before = [s for s in series if s['t'] <= a and s['ok']]
    base = before[-1] if before else None
    inside = [s for s in series if a < s['t'] <= b]
    return base, inside


ZERO = {'list': 0, 'watch': 0, 'open': 0, 'term': 0, 'rejected': 0, 'cpu': 0, 'rss': 0,
        'rejected_by': {}, 'dispatched': {}, 'list_codes': {}, 'watch_codes': {}}


def measure(series, a, b, nodes, base_open, restarted):
    base, inside = window(series, a, b)
    r = {'lists': 0.0, 'watches': 0.0, 'completed_watches': 0.0, 'terminations': 0.0,
         'rejected': 0.0, 'cpu_s': 0.0, 'rss_max_mib': 0.0, 'peak_rps': 0.0, 'peak_at_s': 0.0,
         'restarts': 0, 'watching_all_s': -1.0, 'peak_dt_s': 0.0, 'rejected_by': {}, 'list_codes': {}}
    prev, prev_attempt = base, base['t'] if base else a
    seg0 = base
    last = None
    all_at = None
    for s in inside:
        if not s['ok']:
            prev_attempt = s['t']
            continue
        if seg0 is None or s.get('start') != seg0.get('start'):
            # A new apiserver process: its counters start at 0. Close the old one's part.
            if seg0 is not None and last is not None and last.get('start') == seg0.get('start'):
                accumulate(r, seg0, last)
            if seg0 is not None:
                r['restarts'] += 1
            seg0, prev = dict(ZERO, start=s.get('start'), t=s['t']), None
        if prev is None:
            dt, delta = max(0.5, s['t'] - prev_attempt), started(s)
        else:
            dt, delta = max(0.5, s['t'] - prev['t']), started(s) - started(prev)
        rate = delta / dt
        if rate > r['peak_rps']:
            r['peak_rps'], r['peak_at_s'], r['peak_dt_s'] = rate, s['t'] - a, dt
        r['rss_max_mib'] = max(r['rss_max_mib'], s.get('rss', 0) / 2**20)
        # Every node watching: as many watches open as nodes (and the apiserver's own); after a
        # restart, in the new process only.
        if all_at is None and nodes and s['open'] >= nodes + base_open and (r['restarts'] or not restarted):
            all_at = s['t'] - a
        prev, prev_attempt, last = s, s['t'], s
    if seg0 is not None and last is not None and last.get('start') == seg0.get('start'):
        accumulate(r, seg0, last)
    r['watching_all_s'] = all_at if all_at is not None else -1.0
    r['requests'] = r['lists'] + r['watches'] + r['terminations']
    return r


def accumulate(r, first, last):
    r['lists'] += last['list'] - first['list']
    r['completed_watches'] += last['watch'] - first['watch']
    r['watches'] += last['watch'] - first['watch'] + last['open'] - first['open']
    r['terminations'] += last['term'] - first['term']
    r['rejected'] += last['rejected'] - first['rejected']
    r['cpu_s'] += last.get('cpu', 0) - first.get('cpu', 0)
    for pl, v in last['rejected_by'].items():
        d = v - first['rejected_by'].get(pl, 0)
        if d:
            r['rejected_by'][pl] = r['rejected_by'].get(pl, 0) + d
    for code, v in last['list_codes'].items():
        d = v - first['list_codes'].get(code, 0)
        if d:
            r['list_codes'][code] = r['list_codes'].get(code, 0) + d


def cmd_analyze(args):
    series = []
    with open(args.series) as f:
        for line in f:
            try:
                series.append(json.loads(line))
            except ValueError:
                pass
    series.sort(key=lambda s: s['t'])
    marks, clients, params = {}, {}, {}
    order = []
    with open(args.marks) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4:
                continue
            t, who, event, what = float(parts[0]), parts[1], parts[2], parts[3]
            if what == 'client':
                clients[(who, event)] = dict(p.split('=', 1) for p in parts[4:] if '=' in p)
                continue
            if what == 'params':
                params.update(dict(p.split('=', 1) for p in parts[4:] if '=' in p))
                continue
            key = (who, event)
            if key not in marks:
                marks[key] = {}
                order.append(key)
            marks[key][what] = t
    nodes = int(params.get('nodes', 0))
    base_open = float(params.get('base_open', 0))
    print('fleet params: ' + ' '.join('%s=%s' % kv for kv in sorted(params.items())))
    control = {}
    prev_client = {}
    for who, event in order:
        m = marks[(who, event)]
        if 'begin' not in m or 'end' not in m:
            continue
        n = nodes if who != 'none' else 0
        r = measure(series, m['begin'], m['end'], n, base_open, event in ('restart', 'compaction'))
        if who == 'none':
            control[event] = r
        # Per node: less what the apiserver asks of itself in the same event with no fleet.
        ctl = control.get(event, control.get('restart')) if event in ('restart', 'compaction') else None
        less = lambda k: r[k] - (ctl[k] if ctl else 0)
        per = (lambda k: less(k) / n) if n else (lambda k: 0.0)
        ready = m.get('ready', m['begin']) - m['begin']
        c = clients.get((who, event), {})
        pc = prev_client.get(who, {})
        cdelta = ' '.join('client_%s=%d' % (k, int(c[k]) - int(pc.get(k, 0)))
                          for k in ('lists', 'relists', 'watches', 'failures', 'list_errors', 'watch_errors')
                          if k in c)
        if c:
            prev_client[who] = c
        print('fleet %s %s: nodes=%d window_s=%.0f requests=%.0f lists=%.0f watches=%.0f terminations=%.0f '
              'requests_per_node=%.2f lists_per_node=%.2f watches_per_node=%.2f peak_rps=%.0f peak_at_s=%.1f peak_over_s=%.1f '
              'rejected=%.0f rejected_by=%s list_codes=%s apiserver_cpu_s=%.1f apiserver_rss_max_mib=%.0f '
              'restarts=%d ready_s=%.1f watching_all_s=%.1f control_lists=%.0f control_watches=%.0f %s'
              % (event, who, n, m['end'] - m['begin'], r['requests'], r['lists'], r['watches'],
                 r['terminations'], per('requests'), per('lists'), per('watches'), r['peak_rps'],
                 r['peak_at_s'], r['peak_dt_s'], r['rejected'],
                 ','.join('%s:%d' % kv for kv in sorted(r['rejected_by'].items())) or '-',
                 ','.join('%s:%d' % kv for kv in sorted(r['list_codes'].items())) or '-',
                 r['cpu_s'], r['rss_max_mib'], r['restarts'], ready, r['watching_all_s'],
                 ctl['lists'] if ctl else 0, ctl['watches'] if ctl else 0, cdelta))


# ---- the results.md section ------------------------------------------------------------------

def val(line, key):
    m = re.search(r'(?:^| )%s=(\S+)' % re.escape(key), line)
    return m.group(1) if m else ''


def cmd_table(args):
    lines = [l.rstrip('\n') for l in open(args.raw) if l.startswith('fleet ')]
    params = next((l for l in lines if l.startswith('fleet params:')), '')
    rows = {}
    for l in lines:
        m = re.match(r'fleet (\S+) (\S+): ', l)
        if m and m.group(1) in ('start', 'steady', 'restart', 'compaction'):
            rows[(m.group(1), m.group(2))] = l
    run = next((l for l in lines if l.startswith('fleet run:')), '')
    nodes = val(params, 'nodes')
    out = []
    out.append('## Fleet: %s nodes against a real kube-apiserver' % nodes)
    out.append('')
    out.append('Measured on commit %s (user/kube as of that commit), Kubernetes %s (tests/cluster: etcd, '
               'kube-apiserver, a controller manager with only the serviceaccount controller, no scheduler), '
               '%s. evictd: %s. client-go: %s.' % (
                   val(run, 'built_from'), val(params, 'kube'), val(run, 'took') and
                   'the run took %s s' % val(run, 'took') or '', val(params, 'evictd_identity').replace('_', ' '),
                   val(params, 'clientgo').replace('_', ' ')))
    feet = [l for l in lines if l.startswith('fleet footprint ')]
    if feet:
        out.append('')
        out.append('The fleets\' own processes over the run: ' + '; '.join(
            '%s %s CPU s, RSS max %s MiB, %s threads' % (re.match(r'fleet footprint (\S+):', l).group(1),
                                                       val(l, 'cpu_s'), val(l, 'rss_max_mib'), val(l, 'threads'))
            for l in feet) + '. Host load (1 min) %s at the start, %s at the end, %s CPUs.' % (
                val(run, 'load_start'), val(run, 'load_end'), val(run, 'cpus')))
        out.append('')
    churn = val(params, 'churn_s')
    out.append('Pods elsewhere in the cluster: %s.' % (
        'none change (a quiet cluster: the pods watch cache\'s resourceVersion moves only with the fleets\' own pods, which never change)'
        if churn in ('', '0') else 'a pod of a node outside the fleet changes every %s s (as pods somewhere in a real cluster do)' % churn))
    out.append('')
    out.append('Per node: less what the apiserver asks of itself in the same event with no fleet (its Node authorizer\'s pod informer, the *no fleet* row). '
               '*requests* = LISTs + WATCHes started (completed ones, `apiserver_request_total`, plus the change in open ones, `apiserver_longrunning_requests`) + requests ended by a filter (`apiserver_request_terminations_total`: APF\'s 429s), resource pods; *peak* = the most of those started in one scrape interval, per second, at its end (s from the event\'s start) and over how long (scrapes are 1 s apart, but a starting apiserver answers `/metrics` late: right after a restart an interval can span several seconds, and a burst in it is averaged over them); *all watching again* = from the kill (the launch for start) until as many pod watches are open as nodes (and the apiserver\'s own); CPU = `process_cpu_seconds_total` of kube-apiserver over the window (a restarted one\'s start-up included), RSS its `process_resident_memory_bytes`. Windows: start = launch to 3 s after every node watched; steady %s s; restart and compaction %s s from the kill.' % (
                   val(params, 'steady_s'), val(params, 'window_s')))
    out.append('')
    out.append('| event | who | requests / node | LISTs / node | WATCHes / node | peak req/s (at s; over s) | APF rejections | '
               'all watching again at s | apiserver CPU s | apiserver RSS MiB (max) |')
    out.append('|---|---|---|---|---|---|---|---|---|---|')
    events = ('start', 'steady', 'restart', 'compaction')
    for event in events:
        for who in ('evictd', 'client-go', 'none'):
            l = rows.get((event, who))
            if not l:
                continue
            if who == 'none':
                out.append('| %s | no fleet (the apiserver\'s own) | %s requests | %s LISTs | %s WATCHes | %s (%s) | %s | — | %s | %s |' % (
                    event, val(l, 'requests'), val(l, 'lists'), val(l, 'watches'), val(l, 'peak_rps'),
                    val(l, 'peak_at_s'), val(l, 'rejected'), val(l, 'apiserver_cpu_s'), val(l, 'apiserver_rss_max_mib')))
                continue
            wa = val(l, 'watching_all_s')
            out.append('| %s | %s | %s | %s | %s | %s (%s; %s) | %s | %s | %s | %s |' % (
                event, who, val(l, 'requests_per_node'), val(l, 'lists_per_node'), val(l, 'watches_per_node'),
                val(l, 'peak_rps'), val(l, 'peak_at_s'), val(l, 'peak_over_s') or '?', val(l, 'rejected'),
                '—' if event == 'steady' else wa if wa != '-1.0' else 'not within the window', val(l, 'apiserver_cpu_s'),
                val(l, 'apiserver_rss_max_mib')))
    out.append('')
    out.append('Goals (evictd against client-go in the same run):')
    out.append('')
    out.append('| goal | evictd | client-go | verdict |')
    out.append('|---|---|---|---|')

    def f(l, k):
        try:
            return float(val(l, k))
        except ValueError:
            return math.nan

    def verdict(ok):
        return 'met' if ok else '**not met**'
    for event in ('restart', 'compaction'):
        e, c = rows.get((event, 'evictd'), ''), rows.get((event, 'client-go'), '')
        out.append('| %s: one LIST per node | %s | %s | %s |' % (
            event, val(e, 'lists_per_node'), val(c, 'lists_per_node'), verdict(f(e, 'lists_per_node') <= 1.02)))
        out.append('| %s: no more requests than client-go | %s / node | %s / node | %s |' % (
            event, val(e, 'requests_per_node'), val(c, 'requests_per_node'),
            verdict(f(e, 'requests') <= f(c, 'requests'))))
        out.append('| %s: peak below client-go\'s | %s req/s | %s req/s | %s |' % (
            event, val(e, 'peak_rps'), val(c, 'peak_rps'), verdict(f(e, 'peak_rps') < f(c, 'peak_rps'))))
    rej_e = sum(f(rows.get((ev, 'evictd'), ''), 'rejected') for ev in events if (ev, 'evictd') in rows)
    rej_c = sum(f(rows.get((ev, 'client-go'), ''), 'rejected') for ev in events if (ev, 'client-go') in rows)
    out.append('| zero APF rejections (every event) | %d | %d | %s |' % (rej_e, rej_c, verdict(rej_e == 0)))
    out.append('')
    print('\n'.join(out))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('scrape')
    for a in ('--api', '--ca', '--cert', '--key', '--out'):
        s.add_argument(a, required=True)
    s.add_argument('--every', type=float, default=0)
    a = sub.add_parser('analyze')
    a.add_argument('--series', required=True)
    a.add_argument('--marks', required=True)
    t = sub.add_parser('table')
    t.add_argument('raw')
    args = p.parse_args()
    {'scrape': cmd_scrape, 'analyze': cmd_analyze, 'table': cmd_table}[args.cmd](args)


if __name__ == '__main__':
    main()
