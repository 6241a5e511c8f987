"""One launch each of Kiln's fused pointwise gelu(x * w + b) (w and b
broadcast along the rows) and torch.compile's kernel for the same problem,
between cudaProfilerStart/Stop, for Nsight Compute to compare (issue slots
against memory throughput):

    ncu --profile-from-start off --kernel-name regex:'kiln_|triton_' \\
        --section SpeedOfLight --section ComputeWorkloadAnalysis ... \\
        python3 bench/device/profile_pointwise.py path/to/libkiln_ops.so [bf16|f32] [rows] [cols]

Warm-ups (compiling both) run before profiling starts.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops", "python"))
import kiln_ops  # noqa: E402
from profiling import profile_once, row_problem  # noqa: E402

ops = kiln_ops.load(sys.argv[1])
x, w, b, y = row_problem(sys.argv, 2)
kiln = lambda: ops.pointwise("gelu(in0 * in1 + in2)", [x, w, b], [y])  # noqa: E731
compiled = torch.compile(lambda t: torch.nn.functional.gelu(t * w + b))
profile_once(kiln, lambda: compiled(x))
