// SearchHelper: a second thread for one search. It solves the same root spec through the
// same memo table as the search it helps, but takes each spec's second-best action first near
// the root, so the two threads start in different subtrees and each finds much of what it
// needs already solved by the other. It stores only exact entries and proven bounds, so the
// plan is exactly the one a search alone finds. On the 2-core VM measured, cold searches of
// 129^3 to 1000^3 take 0.55-0.7 of the time alone (perf/search_bench --helpers).
#pragma once
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "memo.h"
#include "target.h"
#include "zeroed_array.h"

namespace tessel {

class SearchHelper {
 public:
  // The entries `table` gets room for first. It grows only while no helper searches it, so
  // each growth stops the helper, which starts again from the root once the table has grown.
  // The benchmark shapes' cold searches store up to 50k entries (1000^3, at one or two
  // threads), 58k in a call's search, which also notes the specs the shared decisions lack.
  // Room reserved is zeroed as it is first used, but a small search spreads over all of it.
  static constexpr size_t kRoom = size_t{96} << 10;

  // Starts helping a search of `root` (canonical) through `table`, which must outlive this.
  // Without a thread to be had, it does nothing.
  SearchHelper(const Target &target, MemoTable &table, const Spec &root, size_t room = kRoom);
  ~SearchHelper();
  SearchHelper(const SearchHelper &) = delete;
  SearchHelper &operator=(const SearchHelper &) = delete;

  // Stops the helper and waits for it. Returns the exact entries it solved.
  using Solved =
      std::vector<std::pair<Spec, MemoEntry>, ZeroedAllocator<std::pair<Spec, MemoEntry>>>;
  Solved finish();

 private:
  class View;
  MemoTable &table_;
  std::unique_ptr<View> view_;
  std::thread thread_;
};

// Whether a search of `root` takes long enough to repay starting a thread (tens of
// microseconds): matmuls of 2^17 multiply-adds and more (cold searches from ~10 ms).
bool worth_a_helper(const Spec &root);

}  // namespace tessel
