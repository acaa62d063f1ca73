"""Build solutions/00_tools.ipynb (lesson 00: how to measure, how to look).

Run:  .venv/bin/python tools/build_00_tools_nb.py && \
      .venv/bin/jupyter nbconvert --to notebook --execute --inplace solutions/00_tools.ipynb
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from nbtools import check_cell, code, exercise, md, write  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

cells = [
    md("""
# 00 — Tools: how to measure, how to look

**Goal:** before optimising anything, learn the two habits every later lab relies on:
*measure honestly* (compile time apart, repeats interleaved, ratios not single numbers) and
*look inside* (the LLVM IR and assembly numba produced: did the loop vectorise, how wide, and if
not, why not).

You will finish with two exercises, each checked on hidden random inputs:
1. make a column sum vectorise by changing the loop order (a layout lesson you will meet again
   in lab 01's transposition);
2. break a latency chain with independent partial sums.
"""),
    code("""
import numpy as np
from numba import njit

from labkit import bench, check, hardware, plots, widgets
from labkit import inspect as lk
from labkit import lesson00 as l0
"""),
    md("""
## 1. The machine you measure on

Every number in these labs depends on the CPU: its vector width (SSE 128-bit, AVX2 256-bit,
AVX-512 512-bit), its cores and its caches. `labkit doctor` (also from a terminal) prints this,
with what each feature means for the labs.
"""),
    code("hardware.info()", ignore_output=True),
    md("""
## 2. Timing a numba kernel: compile first, then run

The first call of an `@njit` function *compiles* it (hundreds of milliseconds); only later calls
show its speed. `bench.compare` therefore times the first call apart (`compile`), then repeats
each function enough times to last ≥ `min_time`, **interleaving** the repeats (a, b, a, b, …) so
that a background job slows all candidates alike, and reports the median with its spread (IQR).
Speedups are ratios against a baseline: "4.8×", never "380 %".

Here: one sum over 16 384 doubles, four ways.
"""),
    code("""
def sum_python(x):
    s = 0.0
    for v in x:
        s += v
    return s

inp = l0.make_inputs("seed")
x = inp.x
sums = bench.compare(
    {"python loop": sum_python, "numba": l0.sum_plain,
     "numba fastmath": l0.sum_fastmath, "numpy": np.sum},
    (x,), work=x.size, unit="elements", repeat=5, min_time=0.05)
sums
""", ignore_output=True),
    code("""
print(f"numba compiled in {sums.rows[1]['compile_s']:.2f} s, then ran "
      f"{sums.ratio('numba'):.0f}× faster than the Python loop; "
      f"fastmath gave another {sums.ratio('numba fastmath', 'numba'):.1f}×.")
sums.plot();
""", ignore_output=True),
    md("""
Why does `fastmath` matter for a *sum*? Floating-point addition is not associative:
`(a + b) + c` may differ from `a + (b + c)` in the last bit. Without permission, the compiler
must add the numbers one after another — each addition waits for the previous one
(a *loop-carried dependency*). With `fastmath=True` it may keep 8 or 16 partial sums in vector
registers and combine them at the end. Section 5 asks LLVM itself why.

## 3. Look inside: LLVM IR and assembly

numba turns Python into LLVM IR, which LLVM optimises and turns into machine code.
`lk.show` highlights it and marks the hot loop. Start with the easiest loop there is:
`out[i] = a[i] + b[i]`.
"""),
    code("""
out = np.empty_like(x)
l0.add_arrays(x, x, out)           # compile for float64 arrays
lk.show(l0.add_arrays, kind="asm")
""", ignore_output=True),
    md("""
Look for instructions ending in `pd` (*packed double*: several doubles at once) on `zmm`
registers (512-bit), `ymm` (256-bit) or `xmm` (128-bit); scalar code uses `sd` (*scalar double*).
`vector_report` counts them for you:
"""),
    code("lk.vector_report(l0.add_arrays)", ignore_output=True),
    md("""
## 4. The same loop for three CPUs

`lk.compile_for` recompiles the function's LLVM IR for another CPU, so one machine can show what
an SSE2-only `x86-64`, an AVX2 `haswell`, an Intel AVX-512 `skylake-avx512` and an AMD AVX-512
`znver4` would run.
"""),
    code("""
targets = ["x86-64", "haswell", "skylake-avx512", "znver4"]
widths = {}
for cpu in targets:
    rep = lk.vector_report(l0.add_arrays, cpu=cpu)
    widths[cpu] = rep.max_width_bits
    print(f"{cpu:>15}: widest vector {rep.max_width_bits:3d} bits, "
          f"{rep.max_width_bits // 64} doubles per instruction")
"""),
    code("""
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(5, 2.4))
ax.barh(targets, [widths[t] // 64 for t in targets], color=["#999", "#4c72b0", "#dd8452", "#c44e52"])
ax.set_xlabel("doubles per vector instruction (lanes)")
ax.set_title("add_arrays: lanes by target CPU")
fig.tight_layout()
"""),
    md("""
`skylake-avx512` *has* 512-bit registers, yet LLVM picks 256-bit vectors for it: on Intel's first
AVX-512 cores, heavy 512-bit instructions lowered the clock frequency, so LLVM's tuning for those
CPUs prefers 256 bits (`prefer_vector_width=512` overrides it). For AMD's Zen 4 (`znver4`) it uses
the full width. Side by side, the two inner loops differ in register names (`ymm` vs `zmm`) and in
how far the index moves per iteration:
"""),
    code("""
lk.diff(lk.compile_for(l0.add_arrays, "haswell"), lk.compile_for(l0.add_arrays, "znver4"),
        names=("haswell (AVX2)", "znver4 (AVX-512)"))
""", ignore_output=True),
    md("""
## 5. When a loop does not vectorise, ask why

LLVM's loop vectoriser records a *remark* for every loop: vectorised (with width and
interleave count) or not, and why. `lk.remarks` collects them for one function, with a
plain-language explanation and the usual fix.
"""),
    code("""
l0.sum_plain(x)
lk.remarks(l0.sum_plain)
""", ignore_output=True),
    code("""
l0.sum_fastmath(x)
lk.remarks(l0.sum_fastmath)
""", ignore_output=True),
    md("""
A *recurrence* is different: `out[i] = out[i-1] + x[i]` needs the previous result, and no
permission to reorder can change that.
"""),
    code("""
l0.prefix_sum(x, np.empty_like(x))
lk.remarks(l0.prefix_sum)
""", ignore_output=True),
    md("""
`lk.annotate` puts the verdicts on the source lines and shows, per line, the instructions it
became. Here the column sum of a C-ordered matrix, walking *down* the columns — the starting
point of exercise 1:
"""),
    code("""
l0.colsum_naive(inp.a)
lk.annotate(l0.colsum_naive)
""", ignore_output=True),
    md("""
## 6. Exercise 1 — make the column sums vectorise

`colsum_naive` walks down each column. A C-ordered matrix stores each *row* contiguously, so
consecutive loads are `8·cols` bytes apart, and each column's sum is one serial chain of
additions (a float reduction, which LLVM will not reorder).

Swap the loops: walk along each row and add it into all the column sums at once. The inner loop
then reads contiguous memory, and its iterations are independent (each `out[j]` is its own
sum), so it vectorises *without* `fastmath` — and adds each column top to bottom in the same
order as before, so the result is bit-for-bit the same.

The check runs your function on hidden random matrices, asks the compiler whether it
vectorised (≥ 256-bit), and times it against `colsum_naive`.

*How exercises are graded:* only the exercise cell itself (the one with `# YOUR CODE HERE`) is
taken from your notebook; the grader re-runs everything else from the original and checks your
function with fresh secret inputs. So anything your function needs — a helper, an import — goes
inside that cell. Editing a check cell changes nothing.
"""),
    exercise("colsum", '''
@njit
def colsum(a):
    """Column sums of a C-contiguous 2-D float64 array, walking along rows."""
    n, m = a.shape
    out = np.zeros(m)
    # Hint: put the loop over rows (i) outside and the loop over columns (j) inside,
    # Hint: and accumulate out[j] += a[i, j].
    ### BEGIN SOLUTION
    for i in range(n):
        for j in range(m):
            out[j] += a[i, j]
    ### END SOLUTION
    return out
'''),
    check_cell("colsum", "colsum", 2),
    md("""
## 7. Exercise 2 — break the latency chain

`dot_plain` keeps one accumulator: every `s += x[i] * y[i]` must wait for the previous addition
to finish (about 3–4 cycles of latency on current cores), although the CPU could *start* two
additions per cycle. Independent partial sums remove that wait: with 8 accumulators, 8 chains
run in parallel in the pipeline, and LLVM may pack them into vector registers too.

Write `dot8` with eight partial sums `s0 … s7` over blocks of 8 elements, a scalar loop for the
remaining `n % 8` elements, and return the total. The result differs from `np.dot` only by
rounding (the check allows 1e-10 relative).
"""),
    exercise("dot_partials", '''
@njit
def dot8(x, y):
    """Dot product of two float64 vectors with eight independent partial sums."""
    n = x.size
    # Hint: nb = n - n % 8; loop i over range(0, nb, 8) updating s0 += x[i]*y[i] … s7 += x[i+7]*y[i+7];
    # Hint: then add the tail x[nb:] · y[nb:] and return the sum of everything.
    ### BEGIN SOLUTION
    nb = n - n % 8
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for i in range(0, nb, 8):
        s0 += x[i] * y[i]
        s1 += x[i + 1] * y[i + 1]
        s2 += x[i + 2] * y[i + 2]
        s3 += x[i + 3] * y[i + 3]
        s4 += x[i + 4] * y[i + 4]
        s5 += x[i + 5] * y[i + 5]
        s6 += x[i + 6] * y[i + 6]
        s7 += x[i + 7] * y[i + 7]
    tail = 0.0
    for i in range(nb, n):
        tail += x[i] * y[i]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)) + tail
    ### END SOLUTION
'''),
    check_cell("dot_partials", "dot8", 2),
    md("""
**Predict, then measure.** How much faster should `dot8` be? If one addition takes 4 cycles of
latency and the core can start 2 per cycle, a single chain uses 1/8 of the adder's capacity; 8
chains could approach the limit set by loads instead. The cell below measures all three on the
same data — compare your prediction with the ratios (your own `dot8` was timed by its check).
"""),
    code("""
y = inp.y
dots = bench.compare({"dot_plain": l0.dot_plain, "dot_partials": l0.dot_partials,
                      "dot_plain + fastmath": l0.dot_fastmath},
                     (x, y), work=x.size, unit="elements", repeat=5, min_time=0.05)
dots
""", ignore_output=True),
    md("""
## 8. A tuner: bandwidth against array size

The same `add_arrays` kernel runs at very different speeds depending on where its data lives:
L1, L2, L3 cache or main memory. Move the slider to change the array length; each move re-runs
a short benchmark and adds a point to the plot.
"""),
    code("""
sizes = [2 ** k for k in range(10, 23, 2)]
widgets.tuner(lambda n: {"GB/s": l0.stream_add(n)["GB/s"]}, params={"n": sizes}, metric="GB/s",
              title="add_arrays: GB/s moved (2 loads + 1 store per element)")
""", ignore_output=True),
    md("""
The full curve, with this machine's cache sizes marked (each array is `8·n` bytes; three arrays
are in flight). The kernel repeats the addition inside one call (`add_arrays_repeat`), so the
Python call overhead — about a microsecond — does not hide the small sizes:
"""),
    code("""
hw = hardware.info()
curve = {n: l0.stream_add(n)["GB/s"] for n in sizes}
ax = plots.throughput_vs([3 * 8 * n for n in sizes], {"add_arrays": [curve[n] for n in sizes]},
                         xlabel="bytes touched per call", unit="GB/s", logx=True)
for name in ("l1d", "l2", "l3"):
    size = getattr(hw, name, None)
    if size:
        ax.axvline(size, ls="--", color="grey")
        ax.text(size, ax.get_ylim()[1] * 0.95, f" {name.upper()}", color="grey", va="top")
""", ignore_output=True),
    md("""
## Summary

* Time the first call apart (compile), interleave repeats, report medians with spread, and
  compare by **ratio** (`bench.compare`).
* `lk.vector_report` answers "did it vectorise, how wide"; `lk.compile_for` shows the same code
  for other CPUs; `lk.remarks` and `lk.annotate` say *why* a loop did not vectorise.
* Two classic obstacles: a loop-carried dependency (float reductions need reassociation —
  `fastmath` or partial sums; true recurrences never vectorise) and strided access (change the
  loop order or the data layout).

## Going further

* Try `lk.remarks` on your own `colsum` and on a version with `a[i, j]` replaced by `a[j, i]`.
* Add `fastmath=True` to `dot_plain` and compare with your `dot8`: who wins, and why?
* Re-run the tuner with the other core busy (`yes > /dev/null &` in a terminal): which sizes
  suffer most?
* Next: lab 01 applies the loop-order idea to a whole data structure — transposing a batch of
  sequences so the compiler vectorises across them.
"""),
]

if __name__ == "__main__":
    print(write(cells, ROOT / "solutions" / "00_tools.ipynb"))
