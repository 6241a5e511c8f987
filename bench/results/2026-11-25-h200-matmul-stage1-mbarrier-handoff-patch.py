#!/usr/bin/env python3
# Prototype: rewrite every stage-1 matmul kernel in a Kiln cache through the -rewrite.py beside it, fixing the manifest's digest.
import glob, hashlib, json, os, subprocess, sys
cache, mode = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
n = 0
for meta in glob.glob(cache + '/kernels/*/*/meta.json'):
    d = os.path.dirname(meta)
    ptx = open(d + '/kernel.ptx').read()
    if 'mma.sync' not in ptx or 'kiln_matmul' not in ptx:
        continue
    subprocess.run([sys.executable, here + '/2026-11-25-h200-matmul-stage1-mbarrier-handoff-rewrite.py', d + '/kernel.ptx', d + '/kernel.ptx.new', '256', mode], check=True)
    os.replace(d + '/kernel.ptx.new', d + '/kernel.ptx')
    m = json.load(open(meta))
    m['files']['kernel.ptx'] = hashlib.sha256(open(d + '/kernel.ptx', 'rb').read()).hexdigest()
    json.dump(m, open(meta, 'w'), indent=2)
    n += 1
print(f'patched {n} kernel(s) in {cache} ({mode})')
