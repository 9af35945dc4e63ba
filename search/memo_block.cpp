#include "memo_block.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace tessel {
namespace {

constexpr uint8_t kFormat = 1;
constexpr uint8_t kPlanFormat = 2;  // 1: a key and a decision per node

uint64_t mix(uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Detects damage, not malice: every byte and the row's key feed a 64-bit mix.
uint64_t checksum(uint64_t h, std::string_view bytes) {
  h = mix(h ^ bytes.size());
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = mix(h ^ w) + 0x9e3779b97f4a7c15ull;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  return mix(h ^ tail ^ 0xa5);
}

uint64_t checksum(const BlockId &id, std::string_view bytes) {
  const uint64_t h = mix(id.class_lo ^ 0x7465737365ull) ^ mix(id.class_hi + 1) ^
                     mix(uint64_t{id.m} | uint64_t{id.n} << 32) ^ mix(uint64_t{id.k} + 7);
  return checksum(h, bytes);
}

uint64_t checksum(const SpecKey &root, std::string_view bytes) {
  uint64_t h = 0x706c616e;  // "plan"
  for (uint64_t w : root) h = mix(h ^ w);
  return checksum(h, bytes);
}

void put_checksum(std::string &out, uint64_t sum) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(sum >> (8 * i)));
}

// Splits a blob into payload and trailing checksum; false when too short or mismatched.
template <class Key>
bool checked_payload(const Key &key, std::string_view blob, std::string_view *payload) {
  if (blob.size() < 9) return false;
  *payload = blob.substr(0, blob.size() - 8);
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i)
    stored |= uint64_t{static_cast<uint8_t>(blob[payload->size() + i])} << (8 * i);
  return stored == checksum(key, *payload);
}

void put_varint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

void put_action(std::string &out, const Action &a) {
  out.push_back(static_cast<char>(a.kind));
  out.push_back(static_cast<char>(a.a));
  out.push_back(static_cast<char>(a.b));
  put_varint(out, zigzag(a.size));
  put_varint(out, zigzag(a.size2));
}

void put_decision(std::string &out, const Decision &d) {
  out.push_back(static_cast<char>(d.solvable));
  put_action(out, d.action);
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool varint(uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return false;
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool byte(uint8_t *v) {
    if (pos_ >= bytes_.size()) return false;
    *v = static_cast<uint8_t>(bytes_[pos_++]);
    return true;
  }
  bool done() const { return pos_ == bytes_.size(); }
  bool action(Action *out) {
    uint8_t kind, a, b;
    uint64_t size, size2;
    if (!byte(&kind) || !byte(&a) || !byte(&b) || !varint(&size) || !varint(&size2) ||
        kind > uint8_t(kLastActionKind))
      return false;
    const int64_t s = unzigzag(size), s2 = unzigzag(size2);
    if (s < INT32_MIN || s > INT32_MAX || s2 < INT32_MIN || s2 > INT32_MAX) return false;
    *out = Action{ActionKind(kind), a, b, static_cast<int32_t>(s), static_cast<int32_t>(s2)};
    return true;
  }
  bool decision(Decision *d) {
    uint8_t solvable;
    if (!byte(&solvable) || solvable > 1 || !action(&d->action)) return false;
    d->solvable = solvable;
    return true;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

uint32_t dim(const SpecKey &k, int i) {
  return i == 0 ? uint32_t(k[2]) : i == 1 ? uint32_t(k[2] >> 32) : uint32_t(k[3]);
}
uint64_t limits_a(const SpecKey &k) {
  return k[3] >> 32;
}

// Sort order inside a block: memory limits, then m, n, k.
auto order_key(const SpecKey &k) {
  return std::make_tuple(limits_a(k), k[4], dim(k, 0), dim(k, 1), dim(k, 2));
}

}  // namespace

BlockId block_of(const SpecKey &key) {
  return BlockId{key[0], key[1], dim(key, 0) >> kBlockShift, dim(key, 1) >> kBlockShift,
                 dim(key, 2) >> kBlockShift};
}

size_t BlockIdHash::operator()(const BlockId &b) const {
  return mix(b.class_lo ^
             mix(b.class_hi ^ mix(b.m ^ (uint64_t{b.n} << 21) ^ (uint64_t{b.k} << 42))));
}

std::string encode_block(const BlockId &id, std::vector<StoredEntry> entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const StoredEntry &x, const StoredEntry &y) {
    return order_key(x.key) < order_key(y.key);
  });
  // Keep the last entry of each key (stable sort kept their order).
  std::vector<StoredEntry> unique;
  for (const StoredEntry &e : entries) {
    if (!unique.empty() && unique.back().key == e.key) {
      unique.back() = e;
    } else {
      unique.push_back(e);
    }
  }
  std::vector<Decision> decisions;
  auto decision_index = [&](const Decision &d) {
    const auto it = std::find(decisions.begin(), decisions.end(), d);
    if (it != decisions.end()) return static_cast<uint64_t>(it - decisions.begin());
    decisions.push_back(d);
    return static_cast<uint64_t>(decisions.size() - 1);
  };
  struct Run {
    SpecKey first;
    uint32_t length;
    uint64_t decision;
  };
  std::vector<Run> runs;
  for (const StoredEntry &e : unique) {
    const uint64_t d = decision_index(e.decision);
    if (!runs.empty()) {
      Run &r = runs.back();
      const SpecKey &f = r.first;
      const bool next_k = f[4] == e.key[4] && limits_a(f) == limits_a(e.key) && f[2] == e.key[2] &&
                          dim(f, 2) + r.length == dim(e.key, 2);
      if (next_k && r.decision == d) {
        ++r.length;
        continue;
      }
    }
    runs.push_back({e.key, 1, d});
  }

  std::string out;
  out.push_back(static_cast<char>(kFormat));
  put_varint(out, decisions.size());
  for (const Decision &d : decisions) put_decision(out, d);
  // Groups of runs with equal memory limits.
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) in runs
  for (size_t i = 0; i < runs.size(); ++i) {
    if (groups.empty() || runs[i].first[4] != runs[i - 1].first[4] ||
        limits_a(runs[i].first) != limits_a(runs[i - 1].first)) {
      groups.push_back({i, i});
    }
    groups.back().second = i + 1;
  }
  put_varint(out, groups.size());
  const uint32_t corner[3] = {id.m << kBlockShift, id.n << kBlockShift, id.k << kBlockShift};
  for (const auto &[begin, end] : groups) {
    put_varint(out, limits_a(runs[begin].first));
    put_varint(out, runs[begin].first[4]);
    put_varint(out, end - begin);
    for (size_t i = begin; i < end; ++i) {
      const Run &r = runs[i];
      for (int d = 0; d < 3; ++d) put_varint(out, dim(r.first, d) - corner[d]);
      put_varint(out, r.length - 1);
      put_varint(out, r.decision);
    }
  }
  put_checksum(out, checksum(id, out));
  return out;
}

bool decode_block(const BlockId &id, std::string_view blob, std::vector<StoredEntry> *out,
                  std::string *why, BlockCounts *counts) {
  const size_t first = out->size();
  auto fail = [&](const char *reason) {
    out->resize(first);
    *why = reason;
    return false;
  };
  std::string_view payload;
  if (!checked_payload(id, blob, &payload)) return fail("block checksum mismatch");

  Reader in(payload);
  uint8_t format = 0;
  if (!in.byte(&format) || format != kFormat) return fail("unknown block format");
  uint64_t n_decisions = 0;
  if (!in.varint(&n_decisions) || n_decisions > payload.size()) return fail("bad decision count");
  std::vector<Decision> decisions(n_decisions);
  for (Decision &d : decisions)
    if (!in.decision(&d)) return fail("bad decision");
  uint64_t n_groups = 0;
  if (!in.varint(&n_groups) || n_groups > payload.size()) return fail("bad group count");
  const uint64_t corner[3] = {uint64_t{id.m} << kBlockShift, uint64_t{id.n} << kBlockShift,
                              uint64_t{id.k} << kBlockShift};
  BlockCounts c;
  c.decisions = decisions.size();
  for (uint64_t g = 0; g < n_groups; ++g) {
    uint64_t la, lb, n_runs;
    if (!in.varint(&la) || !in.varint(&lb) || !in.varint(&n_runs) || la > UINT32_MAX ||
        n_runs > payload.size())
      return fail("bad run group");
    for (uint64_t r = 0; r < n_runs; ++r) {
      uint64_t off[3], length, decision;
      if (!in.varint(&off[0]) || !in.varint(&off[1]) || !in.varint(&off[2]) ||
          !in.varint(&length) || !in.varint(&decision))
        return fail("truncated run");
      ++length;
      if (off[0] >= kBlockSpan || off[1] >= kBlockSpan || off[2] + length > kBlockSpan ||
          decision >= decisions.size())
        return fail("run out of range");
      const uint64_t m = corner[0] + off[0], n = corner[1] + off[1];
      if (m == 0 || n == 0 || m > INT32_MAX || n > INT32_MAX || corner[2] + off[2] == 0 ||
          corner[2] + off[2] + length - 1 > INT32_MAX)
        return fail("run out of range");
      for (uint64_t i = 0; i < length; ++i) {
        StoredEntry e;
        e.key = {id.class_lo, id.class_hi, m | n << 32, (corner[2] + off[2] + i) | la << 32, lb};
        e.decision = decisions[decision];
        out->push_back(e);
      }
      ++c.runs;
    }
  }
  if (!in.done()) return fail("trailing bytes in block");
  c.entries = out->size() - first;
  if (counts) *counts = c;
  return true;
}

std::string encode_plan_record(const PlanRecord &record) {
  std::vector<Action> distinct;
  std::vector<uint64_t> index;
  index.reserve(record.actions.size());
  for (const Action &a : record.actions) {
    const auto it = std::find(distinct.begin(), distinct.end(), a);
    index.push_back(static_cast<uint64_t>(it - distinct.begin()));
    if (it == distinct.end()) distinct.push_back(a);
  }
  std::string out;
  out.push_back(static_cast<char>(kPlanFormat));
  put_varint(out, distinct.size());
  for (const Action &a : distinct) put_action(out, a);
  put_varint(out, index.size());
  for (uint64_t i : index) put_varint(out, i);
  put_checksum(out, checksum(record.root, out));
  return out;
}

bool decode_plan_record(const SpecKey &root, std::string_view blob, PlanRecord *out,
                        std::string *why) {
  out->root = root;
  out->actions.clear();
  auto fail = [&](const char *reason) {
    out->actions.clear();
    *why = reason;
    return false;
  };
  std::string_view payload;
  if (!checked_payload(root, blob, &payload)) return fail("plan record checksum mismatch");
  Reader in(payload);
  uint8_t format = 0;
  uint64_t n_distinct = 0;
  if (!in.byte(&format) || format != kPlanFormat || !in.varint(&n_distinct) ||
      n_distinct > payload.size())
    return fail("bad plan record header");
  // Few distinct actions (23 for 1000^3's 398 nodes): on the stack.
  constexpr size_t kInline = 64;
  Action inline_distinct[kInline];
  std::vector<Action> more;
  Action *distinct = inline_distinct;
  if (n_distinct > kInline) {
    more.resize(n_distinct);
    distinct = more.data();
  }
  for (uint64_t i = 0; i < n_distinct; ++i)
    if (!in.action(&distinct[i])) return fail("truncated plan record");
  uint64_t n = 0;
  if (!in.varint(&n) || n > payload.size()) return fail("bad plan record node count");
  out->actions.resize(n);
  for (Action &a : out->actions) {
    uint64_t i = 0;
    if (!in.varint(&i)) return fail("truncated plan record");
    if (i >= n_distinct) return fail("plan record action out of range");
    a = distinct[i];
  }
  if (!in.done()) return fail("trailing bytes in plan record");
  return true;
}

}  // namespace tessel
