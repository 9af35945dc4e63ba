// Element types. f32 is implemented; bf16 inputs with f32 accumulation are reserved so the
// spec encoding and database keys need not change when they arrive.
#pragma once
#include <cstdint>

namespace tessel {

enum class Dtype : uint8_t { F32 = 0, BF16 = 1 };

constexpr int dtype_bytes(Dtype d) {
  return d == Dtype::F32 ? 4 : 2;
}
const char *dtype_name(Dtype d);

}  // namespace tessel
