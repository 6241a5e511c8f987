"""Summarizes the loops of a SASS listing (cuobjdump -sass or nvdisasm):
for each backward branch, the instructions between its target and itself,
counted by opcode (the part before the first '.'), largest loop first.

    python3 bench/device/sass_loops.py LISTING [--top N]

Used to compare the weight of two kernels' K loops (Kiln's and a peer's)
without a GPU: the tensor-core instructions against everything else.
"""
import re
import sys
from collections import Counter

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)[^;]*;")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
TARGET = re.compile(r"\bBRA\b[^;]*?(?:`\((\.L_x_\d+)\)|0x([0-9a-f]+))")


def parse(lines):
    """The listing's labels (name -> address) and instructions (address, opcode, line)."""
    labels, instructions, pending = {}, [], []
    for line in lines:
        if m := LABEL.match(line):
            pending.append(m.group(1))
            continue
        if m := INSTRUCTION.search(line):
            address = int(m.group(1), 16)
            for label in pending:
                labels[label] = address
            pending = []
            instructions.append((address, m.group(3), line))
    return labels, instructions


def loops(labels, instructions):
    found = []
    for address, opcode, line in instructions:
        if not opcode.startswith("BRA"):
            continue
        m = TARGET.search(line)
        if not m:
            continue
        target = labels.get(m.group(1)) if m.group(1) else int(m.group(2), 16)
        if target is None or target >= address:  # forward, or the self-branch after EXIT
            continue
        body = [op for a, op, _ in instructions if target <= a <= address]
        found.append((target, address, Counter(o.split(".")[0] for o in body), len(body)))
    return sorted(found, key=lambda loop: -loop[3])


def main():
    path = sys.argv[1]
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 2
    with open(path) as f:
        labels, instructions = parse(f)
    print(f"{path}: {len(instructions)} instructions")
    for target, end, counts, size in loops(labels, instructions)[:top]:
        tensor = counts["HMMA"] + counts["HGMMA"]
        print(f"  loop {target:#06x}-{end:#06x}: {size} instructions, {tensor} tensor-core, "
              f"{size - tensor} others")
        print("    " + ", ".join(f"{op} {n}" for op, n in counts.most_common()))


if __name__ == "__main__":
    main()
