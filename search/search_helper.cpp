#include "search_helper.h"

#include <system_error>

#include "solver.h"

namespace tessel {
namespace {

// How deep the helper takes second-best actions first. Measured on 1000^3 (cold, 2-core VM,
// median of 9): depth 1 82 ms, 2 74, 3 72, 5 72.5 with the least spread; 118 alone.
constexpr int kHelperDepth = 5;
}  // namespace

// The helper's memo: the shared table, asked to stop by its owner.
class SearchHelper::View final : public MemoDb {
 public:
  explicit View(MemoTable &table) : table_(table) {
    front_ = &table;  // bounding's inline lookups and prefetches
  }
  using MemoDb::get;
  using MemoDb::put;
  bool get(const Spec &s, uint64_t hash, MemoEntry *out) override {
    return table_.find(s, hash, out);
  }
  void put(const Spec &s, uint64_t hash, const MemoEntry &e) override {
    table_.put_from_helper(s, hash, e);
    if (e.exact) solved.emplace_back(s, e);
  }
  size_t size() const override { return table_.size(); }
  bool stopping() const override { return table_.helpers_asked_to_stop(); }

  Solved solved;

 protected:
  bool get_bound_behind(const Spec &, uint64_t, MemoBound *) override { return false; }

 private:
  MemoTable &table_;
};

SearchHelper::SearchHelper(const Target &target, MemoTable &table, const Spec &root, size_t room)
    : table_(table), view_(std::make_unique<View>(table)) {
  table_.reserve(room);
  table_.add_helper();  // before the thread exists: the owner may wait for it from now on
  try {
    thread_ = std::thread([this, &target, root] {
      for (;;) {
        // A helper that fails (out of memory) only stops helping: what it stored is sound,
        // and the search it helped goes on alone.
        bool failed = false;
        try {
          Solver solver(target, *view_, kHelperDepth);
          solver.solve(root);
        } catch (...) {
          failed = true;
        }
        // Read while counted in: the owner neither grows the table nor clears the request.
        const bool stopped = table_.helpers_asked_to_stop();
        const uint32_t growths = table_.growths();
        table_.remove_helper();
        // Asked to stop for the table to grow: once it has, on from the root again (what the
        // helper solved is in the table).
        if (failed || !stopped || !table_.rejoin(growths)) return;
      }
    });
  } catch (const std::system_error &) {
    table_.remove_helper();
  }
}

SearchHelper::~SearchHelper() {
  if (thread_.joinable()) finish();
}

SearchHelper::Solved SearchHelper::finish() {
  table_.end_helpers();
  if (thread_.joinable()) thread_.join();
  return std::move(view_->solved);
}

bool worth_a_helper(const Spec &root) {
  return root.is_matmul() &&
         int64_t{root.dims[0]} * root.dims[1] * root.dims[2] >= (int64_t{1} << 17);
}

}  // namespace tessel
