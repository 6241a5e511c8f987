#!/usr/bin/env python3
"""Prototype (not Kiln code): in a stage-1 matmul kernel's PTX, give each
cp.async source address its own loop-carried register, advanced in place at
the end of the iteration, instead of base + k*2 formed into a temporary
just before the copy (ptxas reuses a few temporaries for the 12 copies, and
each reuse waits for the previous cp.async to read its operands)."""
import re, sys

lines = open(sys.argv[1]).read().split('\n')
first = next(i for i, l in enumerate(lines) if l.strip() == 'cp.async.commit_group;')
commits = [i for i, l in enumerate(lines) if l.strip() == 'cp.async.commit_group;']
head = max(i for i in range(commits[2]) if re.match(r'^\$L__BB\d+_\d+:$', lines[i]))
label = lines[head][:-1]
back = next(i for i in range(head, len(lines)) if re.search(r'bra(\.uni)?\s+' + re.escape(label) + ';', lines[i]))
body = range(head + 1, back)
defs = {}
for i in body:
    m = re.match(r'\s*[\w.]+\s+(%\w+),', lines[i])
    if m: defs.setdefault(m.group(1), []).append(i)
def incr(reg):  # `add.s32 reg, reg, inc` in the loop: inc
    for i in defs.get(reg, []):
        m = re.match(r'\s*add\.s32\s+' + re.escape(reg) + r', ' + re.escape(reg) + r', (\S+);', lines[i])
        if m: return m.group(1)
    return None
pre, post, drop, rename = [], [], set(), {}
n = 0
for i in body:
    m = re.match(r'\s*mul\.wide\.s32\s+(%rd\d+), (%r\d+), 2;', lines[i])
    if not m: continue
    x, s = m.groups()
    users = [j for j in body if re.match(r'\s*add\.s64\s+%rd\d+, %rd\d+, ' + re.escape(x) + ';', lines[j])]
    if not users: continue
    inc = incr(s)
    if inc is not None:
        pre.append(f'\tmul.wide.s32 \t%qx{n}, {s}, 2;')
    else:
        d = [j for j in defs.get(s, [])]
        assert len(d) == 1, (s, d)
        mm = re.match(r'\s*add\.s32\s+' + re.escape(s) + r', (%r\d+), (\d+);', lines[d[0]])
        assert mm, lines[d[0]]
        base, c = mm.groups()
        inc = incr(base)
        assert inc is not None, base
        pre.append(f'\tadd.s32 \t%qs{n}, {base}, {c};')
        pre.append(f'\tmul.wide.s32 \t%qx{n}, %qs{n}, 2;')
    if inc.startswith('%'):
        pre.append(f'\tmul.wide.s32 \t%qi{n}, {inc}, 2;')
        step = f'%qi{n}'
    else:
        step = str(int(inc) * 2)
    for j in users:
        t, b = re.match(r'\s*add\.s64\s+(%rd\d+), (%rd\d+),', lines[j]).groups()
        p = f'%qp{len(rename)}'
        rename[t] = p
        pre.append(f'\tadd.s64 \t{p}, {b}, %qx{n};')
        post.append(f'\tadd.s64 \t{p}, {p}, {step};')
        drop.add(j)
    n += 1
print(f'loop {label}: {len(rename)} addresses carried, {n} offset(s)', file=sys.stderr)
out = []
for i, l in enumerate(lines):
    if l.strip().startswith('.reg .b64'):
        out += [l, '\t.reg .b64 \t%qp<32>;', '\t.reg .b64 \t%qx<4>;', '\t.reg .b64 \t%qi<4>;', '\t.reg .b32 \t%qs<4>;']
        continue
    if i == head: out += pre
    if i == back: out += post
    if i in drop: continue
    if head < i < back:
        l = re.sub(r'%rd\d+', lambda m: rename.get(m.group(0), m.group(0)), l)
    out.append(l)
open(sys.argv[2], 'w').write('\n'.join(out))
