"""Medians of the repeated sym_probe timings of runs 1, 2 and 4 (their probe.txt lines:
"repN KEY... VARIANT... :: <sym_probe's line>").
  python3 medians.py PROBE_TXT NVARIANT
Groups the lines by KEY (the words after repN but the last NVARIANT), names each variant by its
NVARIANT words plus the blocks and threads sym_probe printed, and prints one line per key: each
variant's median time in us per kernel, then any line's complaint (wrong elements, device error).
(Runs 1, 2 and 4 printed this with a copy of this code each, written into their scripts; it was
gathered here afterwards: on their probe.txt it prints what those calls printed.)"""
import collections
import re
import statistics
import sys

path, nvar = sys.argv[1], int(sys.argv[2])
groups = collections.OrderedDict()
bad = collections.defaultdict(set)
for line in open(path):
    m = re.match(r'rep\d+ (.*?) :: .*blocks=(\d+) threads=(\d+).*?: ([\d.]+) us per kernel(.*)', line)
    if not m:
        print('??', line.strip())
        continue
    words = m[1].split()
    key, var = ' '.join(words[:-nvar]), '/'.join(words[-nvar:]) + '/b%s/t%s' % (m[2], m[3])
    groups.setdefault(key, collections.OrderedDict()).setdefault(var, []).append(float(m[4]))
    if m[5].strip():
        bad[key].add(var + ' ' + m[5].strip())
for key, g in groups.items():
    print(key, ' | '.join('%s %.3f' % (v, statistics.median(t)) for v, t in g.items()), ' '.join(sorted(bad[key])))
