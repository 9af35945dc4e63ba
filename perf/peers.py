#!/usr/bin/python3
"""tessel beside OpenBLAS, BLIS, oneDNN, libxsmm and Eigen, each forced to AVX2.

    perf/peers.py BIN_DIR SHAPES OUT_DIR [--rounds R] [--threads 1,2] [--tessel-lib SO]

For every shape, thread count and round, every library runs in its own fresh process, in an
order that rotates from shape to shape (this machine is noisy: libraries are interleaved, not
run one after the other). A library's number for a shape is the median over rounds of its
per-process median GFLOP/s; tessel's ratio to each peer is also taken round by round (both
runs of a round are minutes closer than the rounds' medians) and its median reported. On one
thread, each peer is also timed against tessel in one process (`peer_<lib> --against`, tessel
from --tessel-lib, by default BIN_DIR/../lib/libtessel.so): batches of the two alternate
~100 us apart, so their ratio is the closest comparison the machine allows.
Writes OUT_DIR/peers.csv (every measurement), OUT_DIR/peers_in_process.csv (the one-process
pairs), OUT_DIR/peers.md (tables: GFLOP/s, tessel over the best peer, percent of the FMA peak
or, for M = 1, of the read bandwidth measured beside it) and OUT_DIR/peers.png (gnuplot, when
installed).
"""
import argparse
import math
import os
import shutil
import statistics
import subprocess
import tempfile

LIBRARIES = ["tessel", "openblas", "blis", "onednn", "libxsmm", "eigen"]


def environment(threads, cache_dir):
    env = dict(os.environ)
    env.update({
        "OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": str(threads),
        "BLIS_ARCH_TYPE": "3",  # BLIS 0.9 reads the arch_t number: BLIS_ARCH_HASWELL
        "BLIS_NUM_THREADS": str(threads),
        "ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2",
        "LIBXSMM_TARGET": "hsw", "OMP_NUM_THREADS": str(threads),
        "TESSEL_NUM_THREADS": str(threads), "TESSEL_CACHE_DIR": cache_dir,
    })
    return env


def read_shapes(path):
    shapes = []
    for line in open(path):
        fields = line.split("#")[0].split()
        if len(fields) >= 3:
            shapes.append(tuple(int(x) for x in fields[:3]))
    return shapes


def geomean(ratios):
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def summary(ratios):
    return (f"geometric mean **{geomean(ratios):.2f}**, at least 1 on "
            f"{sum(r >= 1 for r in ratios)} of {len(ratios)} shapes")


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr[-400:]}")
    return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("shapes")
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--tessel-lib")
    args = ap.parse_args()
    tessel_lib = os.path.abspath(args.tessel_lib or
                                 os.path.join(args.bin, os.pardir, "lib", "libtessel.so"))
    os.makedirs(args.out, exist_ok=True)
    libs = [l for l in LIBRARIES if os.path.exists(os.path.join(args.bin, "peer_" + l))]
    shapes = read_shapes(args.shapes)
    thread_counts = [int(t) for t in args.threads.split(",")]
    cache = tempfile.mkdtemp(prefix="tessel-peers-")
    md = []

    # What each library really runs, by its own query.
    md.append("## Instruction sets in use (each library's own query)\n")
    for lib in libs:
        md.append("- " + run([os.path.join(args.bin, "peer_" + lib), "--isa"],
                             environment(1, cache)))
    peak = float(run([os.path.join(args.bin, "fma_peak")], {}))
    bandwidth = {t: float(run([os.path.join(args.bin, "bandwidth"), str(t)], {}))
                 for t in thread_counts}
    md.append(f"\nMeasured AVX2 FMA peak (quiet machine): {peak:.1f} GFLOP/s per core. Percent "
              "of the FMA peak below is of the FMA loop run on as many cores right after each "
              "tessel run (median over rounds): what the cores gave meanwhile. Read bandwidth: " +
              ", ".join(f"{bandwidth[t]:.1f} GB/s with {t} thread{'s' if t > 1 else ''}"
                        for t in thread_counts) + " at the start; percent of bandwidth below is "
              "of the bandwidth measured right after each tessel run (median over rounds).\n")

    rows = []  # (lib, threads, m, k, n, median, min, max, error)
    # The FMA loop on t cores, run right after tessel each time: the peak those cores gave
    # meanwhile (the machine's speed drifts by 10-30% from minute to minute).
    loops = {}  # (t, shape) -> GFLOP/s
    # Likewise the read bandwidth after each tessel run of a memory-bound shape: with other
    # tenants on the host it moved between 38 and 82 GB/s (2 threads) from run to run.
    streams = {}  # (t, shape) -> GB/s
    for rnd in range(args.rounds):
        for t in thread_counts:
            for i, (m, k, n) in enumerate(shapes):
                order = libs[i % len(libs):] + libs[:i % len(libs)]
                for lib in order:
                    line = run([os.path.join(args.bin, "peer_" + lib), "--threads", str(t),
                                str(m), str(k), str(n)], environment(t, cache))
                    f = line.split(",")
                    rows.append((lib, t, m, k, n, float(f[5]), float(f[6]), float(f[7]),
                                 float(f[8])))
                    if lib == "tessel":
                        loops.setdefault((t, (m, k, n)), []).append(float(run(
                            [os.path.join(args.bin, "fma_peak"), "--once", "0.1", str(t)], {})))
                        if m == 1:
                            streams.setdefault((t, (m, k, n)), []).append(float(run(
                                [os.path.join(args.bin, "bandwidth"), str(t)], {})))
            print(f"round {rnd + 1}/{args.rounds} done", flush=True)

    # Each peer against tessel in one process, one thread (peer_main.cpp: two libraries' worker
    # threads would contend for the cores): shape -> [(median ratio, q1, q3, peer)].
    in_process = {}
    if 1 in thread_counts and os.path.exists(tessel_lib):
        with open(os.path.join(args.out, "peers_in_process.csv"), "w") as csv:
            csv.write("library,threads,M,K,N,library_gflops,tessel_gflops,median_ratio,q1,q3\n")
            dims = [str(x) for shape in shapes for x in shape]
            for lib in libs:
                if lib == "tessel":
                    continue
                for line in run([os.path.join(args.bin, "peer_" + lib), "--against", tessel_lib] +
                                dims, environment(1, cache)).splitlines():
                    csv.write(line + "\n")
                    f = line.split(",")
                    in_process.setdefault(tuple(int(x) for x in f[2:5]), []).append(
                        (float(f[7]), float(f[8]), float(f[9]), lib))
        print("one-process pairs done", flush=True)

    with open(os.path.join(args.out, "peers.csv"), "w") as csv:
        csv.write("library,threads,M,K,N,median_gflops,min_gflops,max_gflops,max_error\n")
        for r in rows:
            csv.write(",".join(str(x) for x in r) + "\n")

    def median_of(lib, t, shape):
        values = [r[5] for r in rows if r[0] == lib and r[1] == t and r[2:5] == shape]
        return statistics.median(values) if values else float("nan")

    # tessel over one peer, paired by round: each round runs every library back to back, so
    # the ratio of two runs of one round cancels most of the machine's drift between rounds
    # (a ratio of medians over rounds does not). The median over rounds, and its range.
    def paired(peer, t, shape):
        def per_round(lib):
            return [r[5] for r in rows if r[0] == lib and r[1] == t and r[2:5] == shape]
        ratios = [x / y for x, y in zip(per_round("tessel"), per_round(peer)) if y > 0]
        if not ratios:
            return float("nan"), float("nan"), float("nan")
        return statistics.median(ratios), min(ratios), max(ratios)

    plot_rows = []
    for t in thread_counts:
        md.append(f"\n## {t} thread{'s' if t > 1 else ''}: GFLOP/s (median of {args.rounds} "
                  "rounds)\n")
        one_process = t == 1 and bool(in_process)
        md.append("| M | K | N | " + " | ".join(libs) +
                  " | best peer | tessel / best | paired (range) | " +
                  ("in one process (q1-q3) | " if one_process else "") + "tessel % of bound |")
        md.append("|---" * (3 + len(libs) + 4 + one_process) + "|")
        ratios, paired_ratios, process_ratios = [], [], []
        for shape in shapes:
            m, k, n = shape
            values = {lib: median_of(lib, t, shape) for lib in libs}
            peers = {l: v for l, v in values.items() if l != "tessel" and not math.isnan(v)}
            best = max(peers, key=peers.get) if peers else None
            ratio = values["tessel"] / peers[best] if best else float("nan")
            ratios.append(ratio)
            # The peer tessel fares worst against, round by round.
            closest = min((paired(p, t, shape) + (p,) for p in peers), default=None)
            paired_ratios.append(closest[0] if closest else float("nan"))
            if m == 1:  # reads all of B once: 2 flops per 4 bytes
                bound, kind = statistics.median(streams[(t, shape)]) / 2, "bandwidth"
            else:
                bound, kind = statistics.median(loops[(t, shape)]), "FMA peak"
            together = ""
            if one_process:
                # The peer tessel fares worst against, in one process.
                worst = min(in_process.get(shape, []), default=None)
                process_ratios.append(worst[0] if worst else float("nan"))
                together = (f" | {worst[0]:.3f} vs {worst[3]} ({worst[1]:.3f}-{worst[2]:.3f})"
                            if worst else " | -")
            md.append(f"| {m} | {k} | {n} | " +
                      " | ".join(f"{values[l]:.1f}" for l in libs) +
                      f" | {best} {peers[best]:.1f} | {ratio:.2f} | " +
                      (f"{closest[0]:.2f} vs {closest[3]} ({closest[1]:.2f}-{closest[2]:.2f})"
                       if closest else "-") + together +
                      f" | {100 * values['tessel'] / bound:.0f}% of {kind} |")
            plot_rows.append((t, f"{m}x{k}x{n}", [100 * values[l] / bound for l in libs]))
        md.append(f"\nGeometric mean of tessel / best peer: **{geomean(ratios):.2f}**; tessel at "
                  f"least equal to the best peer on {sum(r >= 1 for r in ratios)} of "
                  f"{len(ratios)} shapes. Paired by round (each shape's lowest median ratio to "
                  f"any one peer): {summary(paired_ratios)}.")
        if one_process:
            md.append("In one process (each shape's lowest median ratio to any one peer): " +
                      summary(process_ratios) + ".")

    # First calls in fresh processes: library initialization, code generation and the call.
    md.append("\n## First call in a fresh process (microseconds, 1 thread)\n")
    first_libs = [l for l in ("libxsmm", "onednn") if l in libs]
    md.append("| M | K | N | tessel, cold database | tessel, warm database | " +
              " | ".join(first_libs) + " |")
    md.append("|---" * (5 + len(first_libs)) + "|")
    first_cache = tempfile.mkdtemp(prefix="tessel-first-")
    for m, k, n in shapes:
        dims = [str(m), str(k), str(n)]
        env = environment(1, first_cache)
        cold = run([os.path.join(args.bin, "peer_tessel"), "--first-call"] + dims, env)
        warm = run([os.path.join(args.bin, "peer_tessel"), "--first-call"] + dims, env)
        others = [run([os.path.join(args.bin, "peer_" + l), "--first-call"] + dims, env)
                  for l in first_libs]
        md.append(f"| {m} | {k} | {n} | {float(cold):.0f} | {float(warm):.0f} | " +
                  " | ".join(f"{float(o):.0f}" for o in others) + " |")
    shutil.rmtree(first_cache, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)

    with open(os.path.join(args.out, "peers.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))

    if shutil.which("gnuplot"):
        data = os.path.join(args.out, "peers_plot.dat")
        with open(data, "w") as f:
            for t in thread_counts:
                f.write(f"# threads {t}\nshape " + " ".join(libs) + "\n")
                for tt, name, percents in plot_rows:
                    if tt == t:
                        f.write(name + " " + " ".join(f"{p:.1f}" for p in percents) + "\n")
                f.write("\n\n")
        script = [
            "set terminal pngcairo size 1600,900 noenhanced" if subprocess.run(
                ["gnuplot", "-e", "set terminal pngcairo"], capture_output=True).returncode == 0
            else "set terminal png size 1600,900",
            f"set output '{os.path.join(args.out, 'peers.png')}'",
            f"set multiplot layout {len(thread_counts)},1",
            "set style data histograms", "set style histogram clustered gap 1",
            "set style fill solid 0.8 border -1", "set xtics rotate by -45 scale 0",
            "set ylabel '% of FMA peak (M = 1: of bandwidth bound)'", "set yrange [0:*]",
            "set key outside right", "set grid ytics",
        ]
        for idx, t in enumerate(thread_counts):
            script.append(f"set title '{t} thread{'s' if t > 1 else ''}'")
            script.append("plot " + ", ".join(
                f"'{data}' index {idx} using {c + 2}:xtic(1) title '{lib}'"
                for c, lib in enumerate(libs)))
        script.append("unset multiplot")
        subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=False)


if __name__ == "__main__":
    main()
