#include "fingerprint.h"

#include <cstdio>
#include <cstring>

#include "action.h"

namespace tessel {
namespace {

uint64_t fnv1a(const void *data, size_t size, uint64_t h = 0xcbf29ce484222325ull) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::string memo_fingerprint(const Target &t) {
  // Every number the cost model reads, so a retuned coefficient can never reuse old answers.
  uint64_t h = fnv1a(&t.coef, sizeof t.coef);
  h = fnv1a(&t.usable_cache_share, sizeof t.usable_cache_share, h);
  h = fnv1a(&t.usable_l3_share, sizeof t.usable_l3_share, h);
  for (const std::vector<int> *v : {&t.panel_row_strips, &t.panel_col_strips, &t.tile_bases})
    h = fnv1a(v->data(), v->size() * sizeof(int), h);
  h = fnv1a(&t.register_tile_span, sizeof t.register_tile_span, h);
  h = fnv1a(&t.min_blocking_tile, sizeof t.min_blocking_tile, h);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "schema=%d actions=%d costs=%d isa=%s-fma lanes=%d vregs=%d l1=%lld l2=%lld "
                "l3=%lld coefficients=%016llx",
                kMemoSchemaVersion, kActionOrderVersion, kCostModelVersion, t.name.c_str(), t.lanes,
                t.vregs, static_cast<long long>(t.caches.l1_bytes),
                static_cast<long long>(t.caches.l2_bytes),
                static_cast<long long>(t.caches.l3_bytes), static_cast<unsigned long long>(h));
  return buf;
}

std::string fingerprint_digest(const std::string &fingerprint) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(fnv1a(fingerprint.data(), fingerprint.size())));
  return buf;
}

}  // namespace tessel
