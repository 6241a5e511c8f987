#!/usr/bin/env python3
"""Prototype (not Kiln code): rewrite a stage-1 matmul kernel's PTX so that
the cp.async ring hands slots over through mbarriers (full: 256 async
arrivals from cp.async.mbarrier.arrive.noinc; empty: one arrival per thread
after its last ldmatrix of a slot) instead of cp.async.wait_group + bar.sync.
Assumes 3 stages, 256 threads, an A slot of 16 KB (shl 14)."""
import re, sys

src = open(sys.argv[1]).read().split('\n')
NT = int(sys.argv[3]) if len(sys.argv) > 3 else 256
PER_WARP = len(sys.argv) > 4 and sys.argv[4] == 'warp'
out = []
lines = src
def idx(pred, start=0):
    for i in range(start, len(lines)):
        if pred(lines[i]): return i
    raise SystemExit('pattern not found')

ncnt = [0]
def wait(addr, parity):
    ncnt[0] += 1
    lab = f'$MBW_{ncnt[0]}'
    return [f'{lab}:', f'\tmbarrier.test_wait.parity.shared.b64 %qp2, [{addr}], {parity};', f'\t@!%qp2 bra {lab};']

# locate pieces
ext = idx(lambda l: l.startswith('.extern .shared'))
regs = idx(lambda l: l.strip().startswith('.reg .b64'))
first_cp = idx(lambda l: 'cp.async.cg.shared.global' in l)
commits = [i for i, l in enumerate(lines) if l.strip() == 'cp.async.commit_group;']
waits = [i for i, l in enumerate(lines) if l.strip() == 'cp.async.wait_group 1;']
assert len(commits) == 3 and len(waits) == 2, (len(commits), len(waits))
assert all(lines[w + 2].strip().startswith('bar.sync') for w in waits)
head = max(i for i in range(commits[2]) if re.match(r'^\$L__BB\d+_\d+:$', lines[i]))
label = lines[head][:-1]
back = idx(lambda l: re.search(r'bra\s+' + re.escape(label) + ';', l) is not None, head)
body = lines[head:back]
shl14 = [(i + head, m.group(1)) for i, l in enumerate(body) for m in [re.match(r'\s*shl\.b32\s+%r\d+, (%r\d+), 14;', l)] if m]
R = shl14[0][1]
W = next(r for _, r in shl14 if r != R)
inc = next(m.group(1) for l in body for m in [re.match(r'\s*add\.s32\s+(%r\d+), ' + re.escape(R) + ', 1;', l)] if m)
Rn = next(m.group(1) for l in body for m in [re.match(r'\s*selp\.b32\s+(%r\d+), 0, ' + re.escape(inc) + r', %p\d+;', l)] if m)
loop_cp = idx(lambda l: 'cp.async.cg.shared.global' in l, head)
# the inline-asm comment line before the first copy in the loop
loop_cp -= 1 if '// begin inline asm' in lines[loop_cp - 1] else 0
print(f'loop {label} lines {head}-{back}; read slot {R}, next {Rn}, write slot {W}', file=sys.stderr)

ins = {}  # line index -> (before list, replace?, after list)
def before(i, l): ins.setdefault(i, [[], False, []])[0].extend(l)
def after(i, l): ins.setdefault(i, [[], False, []])[2].extend(l)
def drop(i): ins.setdefault(i, [[], False, []])[1] = True

after(ext, ['.shared .align 8 .b64 kiln_mbar[6];'])
after(regs, ['\t.reg .b32 \t%q<40>;', '\t.reg .pred \t%qp<8>;', '\t.reg .b64 \t%qd<4>;'])
fc = first_cp - (1 if '// begin inline asm' in lines[first_cp - 1] else 0)
init = ['\tmov.u32 \t%q0, kiln_mbar;', '\tmov.u32 \t%q1, %tid.x;', '\tsetp.eq.u32 \t%qp0, %q1, 0;']
for s in range(6):
    init.append(f'\t@%qp0 mbarrier.init.shared.b64 [%q0+{8*s}], {NT // 32 if PER_WARP and s >= 3 else NT};')
init.append('\tbar.sync \t0;')
before(fc, init)
after(commits[0], ['\tcp.async.mbarrier.arrive.noinc.shared.b64 [%q0];'])
after(commits[1], ['\tcp.async.mbarrier.arrive.noinc.shared.b64 [%q0+8];'])
drop(waits[0]); drop(waits[0] + 2)
before(waits[0], ['\tmov.u32 \t%q0, kiln_mbar;'] + wait('%q0', 0))
before(head, ['\tmov.b32 \t%q10, 0;', '\tmov.b32 \t%q11, 1;'])
# empty wait before the loop's copies into slot W
before(loop_cp, ['\tmov.u32 \t%q0, kiln_mbar;', f'\tsetp.eq.u32 \t%qp1, {W}, 0;', '\tselp.b32 \t%q12, 1, 0, %qp1;',
                 '\txor.b32 \t%q11, %q11, %q12;', f'\tshl.b32 \t%q13, {W}, 3;', '\tadd.s32 \t%q14, %q0, %q13;']
       + wait('%q14+24', '%q11'))
after(commits[2], ['\tmov.u32 \t%q0, kiln_mbar;', f'\tshl.b32 \t%q15, {W}, 3;', '\tadd.s32 \t%q16, %q0, %q15;',
                   '\tcp.async.mbarrier.arrive.noinc.shared.b64 [%q16];'])
drop(waits[1]); drop(waits[1] + 2)
before(waits[1], ['\tmov.u32 \t%q0, kiln_mbar;', f'\tshl.b32 \t%q17, {R}, 3;', '\tadd.s32 \t%q18, %q0, %q17;',
                  *(['\tbar.warp.sync \t-1;', '\tmov.u32 \t%q22, %laneid;', '\tsetp.eq.u32 \t%qp4, %q22, 0;',
                     '\t@%qp4 mbarrier.arrive.shared.b64 \t%qd0, [%q18+24];'] if PER_WARP else
                    ['\tmbarrier.arrive.shared.b64 \t%qd0, [%q18+24];']),
                  f'\tsetp.eq.u32 \t%qp3, {Rn}, 0;', '\tselp.b32 \t%q19, 1, 0, %qp3;', '\txor.b32 \t%q10, %q10, %q19;',
                  f'\tshl.b32 \t%q20, {Rn}, 3;', '\tadd.s32 \t%q21, %q0, %q20;'] + wait('%q21', '%q10'))
for i, l in enumerate(lines):
    b, d, a = ins.get(i, [[], False, []])
    out.extend(b)
    if not d: out.append(l)
    out.extend(a)
open(sys.argv[2], 'w').write('\n'.join(out))
