"""What the benchmarks of Kiln's ops beside their peers share: the command
line (the library, the records file, the command to record, a filter), the
library loaded through its Python binding, and the timer: rounds that
alternate every runner, each timed by triton.testing.do_bench (CUDA events,
L2 flushed before every run, median), so that drift in clocks or
temperature hits all of them alike; a runner's time is the median of its
rounds' medians."""
import datetime
import os
import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops", "python"))
import kiln_ops  # noqa: E402

ROUNDS = 3


class PeerRun:
    """`python3 SCRIPT path/to/libkiln_ops.so records.json "command" [filter]`."""

    def __init__(self, argv):
        self.ops = kiln_ops.load(argv[1])
        self.out_path, self.command = argv[2], argv[3]
        self.only = argv[4] if len(argv) > 4 else ""
        self.device = torch.cuda.get_device_name()
        self.date = datetime.date.today().isoformat()


def median_times(runners):
    """{label: ms} for {label: callable}, over ROUNDS alternating rounds."""
    times = {label: [] for label in runners}
    for _ in range(ROUNDS):
        for label, fn in runners.items():
            times[label].append(do_bench(fn, warmup=25, rep=200, return_mode="median"))
    return {label: statistics.median(ms) for label, ms in times.items()}
