// ZeroedArray: a fixed-size array whose bytes start zero, for the search's hash tables (an
// all-zero slot is an empty one). Large arrays come straight from the kernel: its pages are
// zero already, so nothing is written until a slot is used, and they are advised to be 2 MiB
// pages. The memo of one cold 1000^3 search doubles its way to ~13 MiB; as vectors of 4 KiB
// pages, zeroing each new table and ~6900 page faults were a quarter of that search (128 ms
// against 95 with these arrays, ~1400 faults). Linux backs
// a madvise(MADV_HUGEPAGE) range with huge pages when transparent huge pages are "always" or
// "madvise" (Debian's default); elsewhere the advice changes nothing.
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

namespace tessel {

// The untyped part: `bytes` zero bytes aligned to at least 64, and their release.
void *allocate_zeroed(size_t bytes);
void free_zeroed(void *p, size_t bytes);

template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 64,
                "slots are created by zeroing bytes and moved by copying them");

 public:
  ZeroedArray() = default;
  explicit ZeroedArray(size_t n)
      : data_(static_cast<T *>(allocate_zeroed(n * sizeof(T)))), size_(n) {}
  ZeroedArray(ZeroedArray &&o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  ZeroedArray &operator=(ZeroedArray &&o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~ZeroedArray() {
    if (data_) free_zeroed(data_, size_ * sizeof(T));
  }

  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  T *data_ = nullptr;
  size_t size_ = 0;
};

// A std allocator over the same memory, for vectors that grow to megabytes. A search's list
// of solved decisions (LayeredMemo) doubled its way to ~5 MiB through 4 KiB pages, at ~11 us
// a fault on the VMs measured: ~2800 faults, half of a cold 512x768x3072 search (`tessel
// plan`, one thread, database off: 262 ms, 139 with this allocator).
template <class T>
struct ZeroedAllocator {
  using value_type = T;
  ZeroedAllocator() = default;
  template <class U>
  ZeroedAllocator(const ZeroedAllocator<U> &) {}
  T *allocate(size_t n) { return static_cast<T *>(allocate_zeroed(n * sizeof(T))); }
  void deallocate(T *p, size_t n) { free_zeroed(p, n * sizeof(T)); }
  friend bool operator==(const ZeroedAllocator &, const ZeroedAllocator &) { return true; }
};

}  // namespace tessel
