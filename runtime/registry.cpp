#include "registry.h"

#include <algorithm>

#include <cstdio>
#include <cstdlib>

#include "config.h"
#include "errors.h"
#include "thread_state.h"

namespace tessel::runtime {

Registry::Registry(size_t capacity)
    : per_shard_capacity_(std::max<size_t>(1, (capacity + kShards - 1) / kShards)) {}

static void print_summary();

Registry &Registry::instance() {
  // Leaked on purpose: kernels may still run from other threads' static destructors.
  static Registry *registry = [] {
    auto *r = new Registry(config().registry_capacity);
    if (config().verbose) std::atexit(print_summary);
    return r;
  }();
  return *registry;
}

static void print_summary() {
  const Registry::Stats s = Registry::instance().stats();
  std::fprintf(stderr,
               "tessel: %lld kernels, %lld hits, %lld misses, %lld evictions, search %.3f s, "
               "emit %.3f s\n",
               static_cast<long long>(s.kernels), static_cast<long long>(s.hits),
               static_cast<long long>(s.misses), static_cast<long long>(s.evictions),
               s.search_seconds, s.emit_seconds);
}

const CompiledKernel *Registry::recent(const KernelKey &key) {
  ThreadState &state = ThreadState::get();
  const CompiledKernel *kernel = state.find_recent(key);
  if (kernel) state.count_hit();
  return kernel;
}

tessel_status Registry::get(const KernelKey &key, std::shared_ptr<const CompiledKernel> *out,
                            bool *hit) {
  const tessel_status status = get_shared(key, out, hit);
  if (status == TESSEL_OK) ThreadState::get().remember(*out);
  return status;
}

tessel_status Registry::get_shared(const KernelKey &key, std::shared_ptr<const CompiledKernel> *out,
                                   bool *hit) {
  Shard &s = shard(key);
  std::shared_ptr<Entry> entry;
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex);
    auto it = s.map.find(key);
    if (it != s.map.end()) entry = it->second;
  }
  bool owner = false;
  if (!entry) {
    std::unique_lock<std::shared_mutex> lock(s.mutex);
    auto [it, inserted] = s.map.try_emplace(key, nullptr);
    if (inserted) {
      it->second = std::make_shared<Entry>();
      s.order.push_back(key);
      owner = true;
    }
    entry = it->second;
  }
  if (owner) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    std::shared_ptr<const CompiledKernel> kernel;
    tessel_status status = TESSEL_INTERNAL_ERROR;
    std::string error;
    try {
      status = compile(key, &kernel);
      if (status != TESSEL_OK) error = last_error();
    } catch (const std::bad_alloc &) {
      status = TESSEL_OUT_OF_MEMORY;
      error = "out of memory while compiling " + kernel_name(key);
    }
    if (status == TESSEL_OK) {
      kernels_.fetch_add(1, std::memory_order_relaxed);
      search_ns_.fetch_add(int64_t(kernel->search_seconds * 1e9), std::memory_order_relaxed);
      emit_ns_.fetch_add(int64_t(kernel->emit_seconds * 1e9), std::memory_order_relaxed);
    }
    {
      std::lock_guard<std::mutex> lock(entry->mutex);
      entry->done = true;
      entry->status = status;
      entry->error = error;
      entry->kernel = kernel;
    }
    entry->ready_cv.notify_all();
    std::unique_lock<std::shared_mutex> lock(s.mutex);
    // A failed compile is not cached: the next call retries (and reports again).
    if (status != TESSEL_OK) {
      s.map.erase(key);
      std::erase(s.order, key);
    } else {
      evict_if_full(s);
    }
  } else {
    std::unique_lock<std::mutex> lock(entry->mutex);
    if (!entry->done) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      entry->ready_cv.wait(lock, [&] { return entry->done; });
    } else {
      hits_.fetch_add(1, std::memory_order_relaxed);
      if (hit) *hit = true;
    }
  }
  std::lock_guard<std::mutex> lock(entry->mutex);
  if (entry->status != TESSEL_OK) return fail(entry->status, entry->error);
  *out = entry->kernel;
  return TESSEL_OK;
}

void Registry::evict_if_full(Shard &s) {
  // Each queued key is looked at once at most; kernels still compiling go to the back.
  for (size_t budget = s.order.size(); s.map.size() > per_shard_capacity_ && budget > 0; --budget) {
    const KernelKey victim = s.order.front();
    s.order.pop_front();
    auto it = s.map.find(victim);
    if (it == s.map.end()) continue;
    bool done;
    {
      std::lock_guard<std::mutex> lock(it->second->mutex);
      done = it->second->done;
    }
    if (!done) {
      s.order.push_back(victim);
      continue;
    }
    s.map.erase(it);
    kernels_.fetch_sub(1, std::memory_order_relaxed);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

Registry::Stats Registry::stats() const {
  Stats st;
  st.kernels = kernels_.load();
  st.hits = hits_.load() + ThreadState::all_hits();
  st.misses = misses_.load();
  st.evictions = evictions_.load();
  st.search_seconds = double(search_ns_.load()) * 1e-9;
  st.emit_seconds = double(emit_ns_.load()) * 1e-9;
  return st;
}

}  // namespace tessel::runtime
