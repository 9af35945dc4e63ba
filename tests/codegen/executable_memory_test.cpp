// W^X: the code of an emitted kernel lives in pages that are readable and executable, never
// writable; and emission failures are statuses, not crashes.
#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "executable_memory.h"
#include "jit_harness.h"

namespace tessel {
namespace {

// The permissions ("r-xp", ...) of the mapping that contains `p`, from /proc/self/maps.
std::string mapping_permissions(const void *p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    std::istringstream is(line);
    std::string range, perms;
    is >> range >> perms;
    const size_t dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (addr >= lo && addr < hi) return perms;
  }
  return "";
}

// Mappings of the process that are writable and executable at once (there must be none).
std::vector<std::string> writable_executable_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> found;
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream is(line);
    std::string range, perms;
    is >> range >> perms;
    if (perms.size() >= 3 && perms[1] == 'w' && perms[2] == 'x') found.push_back(line);
  }
  return found;
}

// `mov eax, value; ret`, then `filler` bytes of int3 (never reached): a function whose result
// tells which code a page holds.
std::vector<uint8_t> returning(uint32_t value, size_t filler) {
  std::vector<uint8_t> code(6 + filler, 0xcc);
  code[0] = 0xb8;
  std::memcpy(&code[1], &value, 4);
  code[5] = 0xc3;
  return code;
}

uint32_t call(const ExecutableCode &code) {
  return reinterpret_cast<uint32_t (*)()>(code.code)();
}

std::unique_ptr<JitKernel> emit_small(Plan *plan, int64_t ld, std::string *error) {
  const Target &target = test::test_target();
  InMemoryMemo memo;
  Solver solver(target, memo);
  REQUIRE(
      build_plan(solver, matmul_spec(17, 19, 23, false, false, false, 1, target.limits()), plan));
  EmitRequest req{plan, ld, ld, ld, "wx"};
  std::unique_ptr<JitKernel> jit;
  if (!emit_kernel(req, &jit, error)) return nullptr;
  return jit;
}

}  // namespace

TEST_CASE("codegen: kernel code pages are read+execute and never writable") {
  Plan plan;
  std::string error;
  std::unique_ptr<JitKernel> jit = emit_small(&plan, 32, &error);
  REQUIRE_MESSAGE(jit, error);
  REQUIRE(jit->code_size() > 0);
  const std::string perms = mapping_permissions(jit->code());
  CHECK(perms.size() >= 3);
  CHECK(perms[0] == 'r');
  CHECK(perms[1] == '-');
  CHECK(perms[2] == 'x');
  // The last byte of code is in the same kind of page.
  const std::string last = mapping_permissions(jit->code() + jit->code_size() - 1);
  CHECK(last.substr(0, 3) == "r-x");
  CHECK(writable_executable_mappings().empty());
}

TEST_CASE("codegen: freed code pages are made read+write before they are handed out again") {
  ExecutablePool pool;
  std::string error;
  ExecutableCode first, neighbour;
  REQUIRE_MESSAGE(pool.make(returning(1, 5000).data(), 5006, &first, &error), error);
  REQUIRE_MESSAGE(pool.make(returning(3, 10).data(), 16, &neighbour, &error), error);
  CHECK(first.mapped == 8192);
  CHECK(neighbour.code == first.code + 8192);  // consecutive kernels are adjacent
  CHECK(mapping_permissions(first.code).substr(0, 3) == "r-x");
  CHECK(mapping_permissions(first.code + first.mapped - 1).substr(0, 3) == "r-x");
  CHECK(call(first) == 1);
  CHECK(pool.stats().used_bytes == 3 * 4096);
  uint8_t *const freed = first.code;
  pool.release(first.code, first.mapped);
  // Still mapped (the pool keeps it), but no longer executable: a stale call faults.
  CHECK(mapping_permissions(freed).substr(0, 3) == "rw-");
  CHECK(mapping_permissions(freed + 8191).substr(0, 3) == "rw-");
  CHECK(mapping_permissions(neighbour.code).substr(0, 3) == "r-x");
  CHECK(pool.stats().used_bytes == 4096);
  // The freed run is the shortest that fits a kernel of its size: it comes back, switched
  // to read+execute again.
  ExecutableCode second;
  REQUIRE_MESSAGE(pool.make(returning(2, 4100).data(), 4106, &second, &error), error);
  CHECK(second.code == freed);
  CHECK(mapping_permissions(second.code).substr(0, 3) == "r-x");
  CHECK(call(second) == 2);
  CHECK(call(neighbour) == 3);
  CHECK(writable_executable_mappings().empty());
  pool.release(second.code, second.mapped);
  pool.release(neighbour.code, neighbour.mapped);
  const ExecutablePoolStats stats = pool.stats();
  CHECK(stats.used_bytes == 0);
  CHECK(stats.mappings == 1);
}

TEST_CASE("codegen: code made and freed by several threads at once stays its own") {
  ExecutablePool pool;
  constexpr int kThreads = 4, kRounds = 300, kLive = 8;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(uint64_t(t) + 1);
      std::vector<std::pair<ExecutableCode, uint32_t>> live;
      for (int r = 0; r < kRounds; ++r) {
        const uint32_t value = uint32_t(t) << 16 | uint32_t(r);
        const std::vector<uint8_t> code = returning(value, rng() % 20000);
        ExecutableCode x;
        std::string error;
        if (!pool.make(code.data(), code.size(), &x, &error)) {
          ++failed;
          continue;
        }
        live.emplace_back(x, value);
        // Every live code still returns its own value: no run was handed out twice.
        for (const auto &[c, v] : live)
          if (call(c) != v) ++wrong;
        if (live.size() > kLive || rng() % 3 == 0) {
          const size_t i = rng() % live.size();
          pool.release(live[i].first.code, live[i].first.mapped);
          live.erase(live.begin() + long(i));
        }
      }
      for (const auto &[c, v] : live) pool.release(c.code, c.mapped);
    });
  for (std::thread &th : threads) th.join();
  CHECK(failed == 0);
  CHECK(wrong == 0);
  CHECK(writable_executable_mappings().empty());
  const ExecutablePoolStats stats = pool.stats();
  CHECK(stats.used_bytes == 0);
  CHECK(stats.free_bytes == stats.mapped_bytes);
  // Freed runs are reused: at most 4 x 9 live runs of at most 5 pages fit in one mapping,
  // fragmentation aside.
  MESSAGE(stats.mappings << " mappings, " << stats.mapped_bytes << " bytes mapped");
  CHECK(stats.mappings <= 2);
}

TEST_CASE("codegen: a leading dimension smaller than the matrix is an error status") {
  Plan plan;
  std::string error;
  std::unique_ptr<JitKernel> jit = emit_small(&plan, 10, &error);
  CHECK(!jit);
  CHECK(error.find("leading dimension") != std::string::npos);
}

TEST_CASE("codegen: emit_kernel rejects a null plan") {
  EmitRequest req;
  std::unique_ptr<JitKernel> jit;
  std::string error;
  CHECK(!emit_kernel(req, &jit, &error));
  CHECK(!error.empty());
}

}  // namespace tessel
