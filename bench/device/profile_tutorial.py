"""One launch each of a tutorial kernel in Kiln and the same kernel in Triton
(the workloads of bench/tutorial_vs_triton.py whose names hold one of the
given substrings), between cudaProfilerStart/Stop, for Nsight Compute to
compare them instruction by instruction:

    ncu --profile-from-start off --set full --import-source no -o tutorial \\
        python3 bench/device/profile_tutorial.py path/to/libkiln_tutorial.so \\
        "matmul bf16 4096^3, 128x256" "layer norm fwd"
    ncu -i tutorial.ncu-rep --page source --csv --print-source sass > source.csv
    ncu -i tutorial.ncu-rep --page details --csv > details.csv

Warm-ups (compiling both) run before profiling starts; outputs are not
checked here (the benchmark checks them).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tutorial_vs_triton as tutorial  # noqa: E402
from profiling import profile_once  # noqa: E402

tutorial.load_library(sys.argv[1])
wanted = sys.argv[2:]
for workload in tutorial.workloads():
    name, run_kiln, run_triton = workload[0], workload[6], workload[7]
    if any(w in name for w in wanted):
        print("profiling", name, flush=True)
        profile_once(run_kiln, run_triton)
