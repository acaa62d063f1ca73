"""Benchmark spec and runner for `labkit bench pcc` (filled in below)."""
BENCHMARK = {}


def run_benchmark(size=None, repeat=5):
    """Run the lab's benchmark."""
    raise NotImplementedError
