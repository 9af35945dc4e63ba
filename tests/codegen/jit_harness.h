// Shared by the codegen tests: solve a matmul spec, emit it, run the machine code on seeded
// data with non-tight leading dimensions and guard canaries, and compare against both the
// plan interpreter and the naive reference.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <xbyak/xbyak.h>

#include "interpreter.h"
#include "jit_kernel.h"
#include "memo.h"
#include "plan.h"
#include "solver.h"
#include "support.h"
#include "test_target.h"

namespace tessel::test {

// Debug and sanitizer builds run the solver ~20x slower: they sweep fewer random cases so the
// suite stays under a minute there; release builds run the full counts.
#ifdef NDEBUG
constexpr bool kFullSweeps = true;
#else
constexpr bool kFullSweeps = false;
#endif

// One solver and memo for the whole test binary: tests share solved sub-specs, which is most
// of the time a test spends outside the kernels.
inline Solver &shared_solver() {
  static InMemoryMemo memo;
  static Solver solver(test_target(), memo);
  return solver;
}

// A memo that answers one spec with a chosen action (its cost solved exactly below it) and
// everything else from `base`: a solver over it builds the plan that takes that action first.
class ForcedMemo final : public MemoDb {
 public:
  ForcedMemo(Solver &base, const Spec &spec, const Action &action) : base_(base.memo()) {
    key_ = spec_key(canonical(spec));
    const Expansion x = expand(canonical(spec), action, base.target());
    forced_.exact = forced_.solvable = true;
    forced_.action = action;
    forced_.cost = local_cost(x);
    for (const Child &c : x.children)
      if (c.present) {
        const MemoEntry e = base.solve(c.spec);
        forced_.solvable = forced_.solvable && e.solvable;
        add_child_cost(forced_.cost, e.cost, c.multiplicity, x);
      }
  }
  bool solvable() const { return forced_.solvable; }
  using MemoDb::get;
  using MemoDb::put;
  bool get(const Spec &s, uint64_t hash, MemoEntry *out) override {
    if (spec_key(s) != key_) return base_.get(s, hash, out);
    *out = forced_;
    return true;
  }
  void put(const Spec &s, uint64_t hash, const MemoEntry &e) override {
    if (spec_key(s) != key_) base_.put(s, hash, e);
  }
  size_t size() const override { return base_.size(); }

 private:
  MemoDb &base_;
  SpecKey key_;
  MemoEntry forced_;
};

struct JitCase {
  int64_t m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false, accumulate = false;
  int threads = 1;
  float alpha = 1;
  int64_t ldc = 0;         // 0: n plus a random pad of 0-4
  bool in_memory = false;  // A, B and C in main memory, as operands too big for L3 are
  int64_t ldb = 0;         // 0: tight plus a random pad of 0-4 (the spec is made for tight)
};

inline Spec case_spec(const Solver &solver, const JitCase &c) {
  Spec s = matmul_spec(c.m, c.n, c.k, c.trans_a, c.trans_b, c.accumulate, c.threads,
                       solver.target().limits(), 0, 4 * c.ldb);
  if (c.in_memory)
    for (int i = 0; i < 3; ++i) s.operands[size_t(i)].level = Level::GL;
  return canonical(s);
}

inline std::string describe(const JitCase &c) {
  std::ostringstream os;
  os << c.m << "x" << c.n << "x" << c.k << (c.trans_a ? " trans_a" : "")
     << (c.trans_b ? " trans_b" : "") << (c.accumulate ? " accumulate" : " overwrite")
     << " threads=" << c.threads << " alpha=" << c.alpha;
  return os.str();
}

// Jitted code is invisible to ASan: every buffer the kernel may touch is surrounded by
// canaries, and A and B are checked bit for bit afterwards.
constexpr int64_t kGuard = 64;
constexpr uint32_t kCanaryBits = 0x7fc0dead;  // a NaN no arithmetic produces

inline float canary() {
  float f;
  std::memcpy(&f, &kCanaryBits, 4);
  return f;
}
inline bool is_canary(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u == kCanaryBits;
}

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};

// Calls a kernel with each callee-saved register of the System V ABI (rbx, rbp, r12..r15)
// holding a known value, and tells whether the kernel gave every one back (rsp it must, or
// the probe could not return). Kernels save only the registers they use: this catches one
// that uses more.
class AbiProbe : public Xbyak::CodeGenerator {
 public:
  AbiProbe() : Xbyak::CodeGenerator(4096, Xbyak::DontSetProtectRWE) {
    const Xbyak::Reg64 saved[] = {rbx, rbp, r12, r13, r14, r15};
    for (const Xbyak::Reg64 &r : saved) push(r);
    sub(rsp, 8);    // the return address and six pushes: 8 more align the call
    mov(rax, rdi);  // the kernel
    mov(rdi, rsi);  // its arguments
    for (int i = 0; i < 6; ++i) mov(saved[i], kMarker + uint64_t(i));
    call(rax);
    xor_(eax, eax);  // rax |= marker ^ register, for each
    for (int i = 0; i < 6; ++i) {
      mov(rcx, kMarker + uint64_t(i));
      xor_(rcx, saved[i]);
      or_(rax, rcx);
    }
    add(rsp, 8);
    for (int i = 5; i >= 0; --i) pop(saved[i]);
    ret();
    ready_ = setProtectModeRE(false) && Xbyak::GetError() == 0;
  }
  // True when the kernel ran and left every callee-saved register as it found it.
  bool run(const JitKernel &jit, KernelArgs *args) const {
    REQUIRE(ready_);
    return getCode<uint64_t (*)(KernelFn, KernelArgs *)>()(jit.fn(), args) == 0;
  }

 private:
  static constexpr uint64_t kMarker = 0x5ca1ab1e00c0ffeeull;
  bool ready_ = false;
};

// Runs a kernel through one process-wide AbiProbe.
inline bool call_preserving_registers(const JitKernel &jit, KernelArgs *args) {
  static const AbiProbe probe;
  return probe.run(jit, args);
}

// Runs the kernel over iteration ranges split at `splits` (parallel roots), or once.
using RangeRunner = void (*)(const JitKernel &, KernelArgs);

inline void run_whole(const JitKernel &jit, KernelArgs args) {
  args.begin = 0;
  args.end = jit.parallel_iterations();
  CHECK_MESSAGE(call_preserving_registers(jit, &args), "a callee-saved register changed");
}

// Returns an empty string on success, else what went wrong (with the plan).
inline std::string run_jit_case(Solver &solver, const JitCase &c, std::mt19937_64 &rng,
                                Plan *plan_out = nullptr, const std::vector<int64_t> &splits = {}) {
  const Spec spec = case_spec(solver, c);
  Plan plan;
  if (!build_plan(solver, spec, &plan)) return "unsolvable spec " + to_string(spec);
  if (plan_out != nullptr) *plan_out = plan;
  const int64_t lda = (c.trans_a ? c.m : c.k) + int64_t(rng() % 5);
  const int64_t ldb = c.ldb > 0 ? c.ldb : (c.trans_b ? c.k : c.n) + int64_t(rng() % 5);
  const int64_t ldc = c.ldc > 0 ? c.ldc : c.n + int64_t(rng() % 5);
  std::vector<float> a(size_t((c.trans_a ? c.k : c.m) * lda + 2 * kGuard));
  std::vector<float> b(size_t((c.trans_b ? c.n : c.k) * ldb + 2 * kGuard));
  std::vector<float> got(size_t(c.m * ldc + 2 * kGuard));
  fill_random(a, rng);
  fill_random(b, rng);
  if (c.accumulate) {
    fill_random(got, rng);
  } else {
    std::fill(got.begin(), got.end(), std::nanf(""));  // a Matmul must never read C
  }
  for (int64_t g = 0; g < kGuard; ++g) {
    got[size_t(g)] = canary();
    got[got.size() - 1 - size_t(g)] = canary();
  }
  const std::vector<float> a0 = a, b0 = b, c0 = got;
  std::vector<float> interp = got, want = got;

  EmitRequest req;
  req.plan = &plan;
  req.lda = lda;
  req.ldb = ldb;
  req.ldc = ldc;
  req.name = describe(c);
  req.l2_bytes = solver.target().caches.l2_bytes;
  std::unique_ptr<JitKernel> jit;
  std::string error;
  if (!emit_kernel(req, &jit, &error)) return "emit failed: " + error + "\n" + format_plan(plan);

  // The kernel's workspace: its plan's buffers and anything the emitter adds (a C copy).
  const int64_t ws_bytes = (jit->workspace_bytes() + 4 * kGuard + 63) / 64 * 64 + 64;
  std::unique_ptr<float, AlignedFree> ws(
      static_cast<float *>(std::aligned_alloc(64, size_t(ws_bytes))));
  const int64_t ws_floats = ws_bytes / 4;
  for (int64_t i = 0; i < ws_floats; ++i) ws.get()[i] = canary();

  // A split of k's copies of C, each filled with NaN (its part must overwrite it), then
  // canaries past the last.
  const int64_t copy_floats = jit->copy_floats(),
                copies = std::max<int64_t>(0, jit->reduction_parts() - 1);
  std::vector<float> copy_memory(size_t(copies * copy_floats + kGuard), std::nanf(""));
  for (int64_t g = 0; g < kGuard; ++g) copy_memory[copy_memory.size() - 1 - size_t(g)] = canary();

  KernelArgs args;
  args.a = a.data() + kGuard;
  args.b = b.data() + kGuard;
  args.c = got.data() + kGuard;
  args.alpha = c.alpha;
  args.workspace = ws.get();
  args.copies = copy_memory.data();
  bool registers_kept = true;
  if (jit->parallel_iterations() > 0 && !splits.empty()) {
    int64_t begin = 0;
    for (int64_t s : splits) {
      args.begin = begin;
      args.end = s;
      registers_kept = call_preserving_registers(*jit, &args) && registers_kept;
      begin = s;
    }
    args.begin = begin;
    args.end = jit->parallel_iterations();
  } else {
    args.begin = 0;
    args.end = jit->parallel_iterations();
  }
  registers_kept = call_preserving_registers(*jit, &args) && registers_kept;
  // What the runtime does after the parts: C += every copy, over C's rows and columns.
  for (int64_t p = 0; p < copies; ++p)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j)
        args.c[i * ldc + j] += copy_memory[size_t(p * copy_floats + i * ldc + j)];

  interpret(plan, MatmulArgs{a0.data() + kGuard, b0.data() + kGuard, interp.data() + kGuard, lda,
                             ldb, ldc, c.alpha});
  reference_sgemm(c.trans_a, c.trans_b, c.m, c.n, c.k, c.alpha, a0.data() + kGuard, lda,
                  b0.data() + kGuard, ldb, c.accumulate ? 1.0f : 0.0f, want.data() + kGuard, ldc);

  std::ostringstream why;
  auto report = [&](const std::string &what) {
    why << what << " for " << describe(c) << " lda=" << lda << " ldb=" << ldb << " ldc=" << ldc
        << "\n"
        << format_plan(plan);
    return why.str();
  };
  if (!registers_kept) return report("a callee-saved register changed");
  if (a != a0) return report("A was modified");
  if (b != b0) return report("B was modified");
  for (int64_t i = (jit->workspace_bytes() + 3) / 4; i < ws_floats; ++i)
    if (!is_canary(ws.get()[i])) return report("write past the workspace");
  for (int64_t g = 0; g < kGuard; ++g)
    if (!is_canary(copy_memory[copy_memory.size() - 1 - size_t(g)]))
      return report("write past the copies of C");
  const float tol = tolerance(c.k) * std::max(1.0f, std::abs(c.alpha));
  for (size_t p = 0; p < got.size(); ++p) {
    const int64_t q = int64_t(p) - kGuard;
    const bool inside = q >= 0 && q < c.m * ldc && q % ldc < c.n;
    if (!inside) {
      const bool same = std::memcmp(&got[p], &c0[p], 4) == 0;
      if (!same) {
        std::ostringstream w;
        w << "write outside C at element offset " << q;
        return report(w.str());
      }
      continue;
    }
    const float g = got[p], r = want[p], in = interp[p];
    if (!(std::abs(g - r) <= tol) || !(std::abs(g - in) <= tol)) {
      std::ostringstream w;
      w << "mismatch at (" << q / ldc << "," << q % ldc << "): jit " << g << " reference " << r
        << " interpreter " << in;
      return report(w.str());
    }
  }
  return "";
}

// Every KernelId a plan uses.
inline std::vector<bool> kernels_in(const Plan &plan) {
  std::vector<bool> used(size_t(kKernelCount), false);
  for (const PlanNode &n : plan.nodes)
    if (n.kind == NodeKind::Kernel) used[size_t(n.kernel)] = true;
  return used;
}

}  // namespace tessel::test
