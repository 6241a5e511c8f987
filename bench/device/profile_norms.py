"""One launch each of Kiln's normalization and torch.compile's kernel for the
same problem, between cudaProfilerStart/Stop, for Nsight Compute to compare
(stall reasons, instructions, memory throughput):

    ncu --profile-from-start off --kernel-name regex:'kiln_|triton_' \\
        --section SpeedOfLight --section WarpStateStats ... \\
        python3 bench/device/profile_norms.py path/to/libkiln_ops.so [layer_norm|rms_norm] [bf16|f32] [rows] [cols]

Warm-ups (compiling both) run before profiling starts.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops", "python"))
import kiln_ops  # noqa: E402
from profiling import profile_once, row_problem  # noqa: E402

ops = kiln_ops.load(sys.argv[1])
op = sys.argv[2] if len(sys.argv) > 2 else "layer_norm"
x, w, b, y = row_problem(sys.argv, 3)
cols = x.shape[1]
if op == "layer_norm":
    kiln = lambda: ops.layer_norm(x, w, b, 1e-5, y)  # noqa: E731
    compiled = torch.compile(lambda t: torch.nn.functional.layer_norm(t, (cols,), w, b, 1e-5))
else:
    kiln = lambda: ops.rms_norm(x, w, 1e-5, y)  # noqa: E731
    compiled = torch.compile(lambda t: torch.nn.functional.rms_norm(t, (cols,), w, 1e-5))
profile_once(kiln, lambda: compiled(x))
