// A thread's own object, kept on the heap. Declared `static thread_local ThreadHeap<T> x;` it
// costs the library's thread-local block one pointer, not sizeof(T): that block must stay a
// few hundred bytes, because the runtime reads its per-thread state with the initial-exec TLS
// model, which puts the whole block in the static TLS that glibc keeps for libraries loaded
// with dlopen (runtime/thread_state.cpp).
#pragma once
#include <memory>

namespace tessel {

template <class T>
class ThreadHeap {
 public:
  // The object, made on the thread's first call (from `make()`, if given) and freed when the
  // thread exits.
  T &get() {
    if (!object_) object_ = std::make_unique<T>();
    return *object_;
  }
  template <class Make>
  T &get(Make &&make) {
    if (!object_) object_ = std::make_unique<T>(make());
    return *object_;
  }

 private:
  std::unique_ptr<T> object_;
};

}  // namespace tessel
