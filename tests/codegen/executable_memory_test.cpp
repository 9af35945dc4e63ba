// W^X: the code of an emitted kernel lives in pages that are readable and executable, never
// writable; and emission failures are statuses, not crashes.
#include <fstream>
#include <sstream>

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

std::unique_ptr<JitKernel> emit_small(Plan *plan, int64_t ld, std::string *error) {
  const Target target = avx2_target(read_host_caches());
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
