// What the host CPU and OS support. Emitted kernels need AVX2 and FMA, and the OS must save
// the ymm registers (XCR0); without them tessel reports TESSEL_UNSUPPORTED_CPU instead of
// dying of SIGILL.
#pragma once

namespace tessel::runtime {

bool host_has_avx2_fma();

}  // namespace tessel::runtime
