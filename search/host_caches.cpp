// The host's data cache sizes, which the cost model blocks for.
//
// From CPUID's deterministic cache parameters (leaf 4 on Intel, 0x8000001D on AMD): the same
// numbers Linux derives its sysfs cache directories from. Every process pays for this before
// its first call: reading the dozen sysfs files took 100-270 us on the VMs measured, the five
// CPUIDs take 35-40 us. Levels CPUID does not describe are read from sysfs, and failing that
// keep their defaults.
#include <cpuid.h>

#include <cctype>
#include <fstream>
#include <string>

#include "target.h"

namespace tessel {
namespace {

// The size field of cache level 1, 2 or 3; null for any other level.
int64_t *level_bytes(HostCaches *caches, int level) {
  return level == 1   ? &caches->l1_bytes
         : level == 2 ? &caches->l2_bytes
         : level == 3 ? &caches->l3_bytes
                      : nullptr;
}

// Sets the sizes of the data and unified caches that `leaf` describes (subleaf by subleaf,
// until it lists no more or levels 1-3 are all found); false if it describes none. Each
// CPUID traps to the hypervisor on a VM (4.5 us each on the ones measured), so no leaf is
// asked for more than this needs.
bool caches_from_cpuid(unsigned leaf, HostCaches *caches, bool found[4]) {
  bool any = false;
  for (unsigned index = 0; index < 8 && !(found[1] && found[2] && found[3]); ++index) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __cpuid_count(leaf, index, eax, ebx, ecx, edx);
    const unsigned type = eax & 31;  // 0: no more caches, 1: data, 2: instruction, 3: unified
    if (type == 0 || type > 3) break;
    any = true;
    const int level = (eax >> 5) & 7;
    int64_t *size = level_bytes(caches, level);
    if (type == 2 || !size) continue;
    const int64_t ways = (ebx >> 22) + 1, partitions = ((ebx >> 12) & 1023) + 1,
                  line = (ebx & 4095) + 1, sets = int64_t{ecx} + 1;
    const int64_t bytes = ways * partitions * line * sets;
    if (bytes < (int64_t{4} << 10) || bytes > (int64_t{1} << 30)) continue;  // implausible
    *size = bytes;
    found[level] = true;
  }
  return any;
}

int64_t read_sysfs_size(const std::string &path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty()) return 0;
  int64_t value = 0;
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])))
    value = value * 10 + (text[pos++] - '0');
  if (pos < text.size() && (text[pos] == 'K' || text[pos] == 'k')) value *= 1024;
  if (pos < text.size() && text[pos] == 'M') value *= 1024 * 1024;
  return value;
}

void caches_from_sysfs(HostCaches *caches, const bool found[4]) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_in(dir + "/level"), type_in(dir + "/type");
    int level = 0;
    std::string type;
    if (!(level_in >> level) || !(type_in >> type)) break;
    int64_t *size = level_bytes(caches, level);
    if (type == "Instruction" || !size || found[level]) continue;
    const int64_t bytes = read_sysfs_size(dir + "/size");
    if (bytes > 0) *size = bytes;
  }
}

}  // namespace

HostCaches read_host_caches() {
  HostCaches caches;
  bool found[4] = {};
  // Intel's leaf 4 (every CPU with AVX2 has it); AMD returns it empty and describes its
  // caches in 0x8000001D instead (zeros too where it lacks that leaf).
  if (!caches_from_cpuid(4, &caches, found)) caches_from_cpuid(0x8000001D, &caches, found);
  if (!(found[1] && found[2] && found[3])) caches_from_sysfs(&caches, found);
  return caches;
}

}  // namespace tessel
