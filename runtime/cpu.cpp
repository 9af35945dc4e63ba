#include "cpu.h"

#include <cpuid.h>

#include <cstdint>

namespace tessel::runtime {

static bool detect() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const bool fma = ecx & (1u << 12), osxsave = ecx & (1u << 27), avx = ecx & (1u << 28);
  if (!fma || !osxsave || !avx) return false;
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6) != 0x6) return false;  // the OS saves xmm and ymm state
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return ebx & (1u << 5);  // AVX2
}

bool host_has_avx2_fma() {
  static const bool supported = detect();
  return supported;
}

}  // namespace tessel::runtime
