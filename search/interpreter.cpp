#include "interpreter.h"

#include <vector>

#include "check.h"

namespace tessel {
namespace {

struct Origin {
  int64_t row = 0, col = 0;
};

class Interpreter {
 public:
  Interpreter(const Plan &plan, const MatmulArgs &args)
      : plan_(plan), args_(args), origins_(plan.tensors.size()), views_(plan.tensors.size()) {
    workspace_.resize(static_cast<size_t>(plan.workspace_bytes / 4 + 1));
    registers_.resize(plan.tensors.size());
    for (size_t t = 0; t < plan.tensors.size(); ++t)
      if (plan.tensors[t].role == PlanTensor::Role::Registers)
        registers_[t].resize(static_cast<size_t>(plan.tensors[t].rows * plan.tensors[t].cols));
  }

  void run(int id) {
    const PlanNode &n = plan_.nodes[id];
    switch (n.kind) {
      case NodeKind::Loop: {
        const std::vector<Origin> saved = origins_;
        for (int64_t i = 0; i < n.trips; ++i) {
          shift(n, n.dim, i * n.step);
          run(i == 0 && n.children[2] >= 0 ? n.children[2] : n.children[0]);
          origins_ = saved;
        }
        if (n.children[1] >= 0) {
          shift(n, n.dim, n.trips * n.step);
          run(n.children[1]);
          origins_ = saved;
        }
        break;
      }
      case NodeKind::Interleave:
        interleave(n);
        break;
      case NodeKind::Grid: {
        if (n.dim == 2) {
          split_k(n);
          break;
        }
        // Tiles in any order: the threads may run them so.
        const std::vector<Origin> saved = origins_;
        const int64_t rows = n.trips + (n.spec.dims[0] % n.step != 0);
        const int64_t cols = n.trips2 + (n.spec.dims[1] % n.step2 != 0);
        for (int64_t i = rows - 1; i >= 0; --i)
          for (int64_t j = 0; j < cols; ++j) {
            shift(n, 0, i * n.step);
            shift(n, 1, j * n.step2);
            run(n.children[(i < n.trips ? 0 : 1) + (j < n.trips2 ? 0 : 2)]);
            origins_ = saved;
          }
        break;
      }
      case NodeKind::Block:
        for (int c : n.children)
          if (c >= 0) run(c);
        break;
      case NodeKind::Alloc:
        origins_[n.new_tensor] = Origin{};
        for (int c : n.children)
          if (c >= 0) run(c);
        break;
      case NodeKind::Stage:
        run(n.children[0]);
        break;
      case NodeKind::Kernel:
        leaf(n);
        break;
    }
  }

 private:
  // The parts of k last to first (any order is the threads'), each but the first into a copy
  // of C that is then added into C, as the runtime does.
  void split_k(const PlanNode &n) {
    const std::vector<Origin> saved = origins_;
    const int64_t parts = n.trips + (n.spec.dims[2] % n.step != 0);
    const int64_t rows = n.spec.dims[0], cols = n.spec.dims[1];
    float *const c = args_.c;
    std::vector<float> copies(static_cast<size_t>((parts - 1) * rows * args_.ldc));
    for (int64_t p = parts - 1; p >= 0; --p) {
      args_.c = p == 0 ? c : copies.data() + (p - 1) * rows * args_.ldc;
      shift(n, 2, p * n.step);
      run(n.children[p == 0 ? 0 : p < n.trips ? 1 : 2]);
      origins_ = saved;
    }
    args_.c = c;
    for (int64_t p = 1; p < parts; ++p)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          c[i * args_.ldc + j] += copies[static_cast<size_t>(((p - 1) * rows + i) * args_.ldc + j)];
  }

  // Iteration kk multiplies element kk of each chunk: the views of A and B start at the
  // iteration's element of the first chunk, and step a chunk along k.
  void interleave(const PlanNode &n) {
    const std::vector<Origin> saved = origins_;
    for (int64_t kk = 0; kk < n.trips; ++kk) {
      const int child = kk == 0 && n.children[2] >= 0 ? n.children[2] : n.children[0];
      shift(n, 2, kk);
      for (int o = 0; o < 2; ++o) {
        const int view = plan_.nodes[child].tensors[o];
        views_[view] = {n.tensors[o], origins_[n.tensors[o]]};
        origins_[view] = Origin{};
      }
      run(child);
      origins_ = saved;
    }
    if (n.children[1] >= 0) {
      shift(n, 2, int64_t{n.trips} * n.step);
      run(n.children[1]);
      origins_ = saved;
    }
  }

  // Moves every operand spanning `dim` by `by` along it.
  void shift(const PlanNode &n, int dim, int64_t by) {
    for (int o = 0; o < n.spec.operand_count(); ++o) {
      const auto axes = n.spec.operand_dims(o);
      Origin &org = origins_[n.tensors[o]];
      if (axes[0] == dim) org.row += by;
      if (axes[1] == dim) org.col += by;
    }
  }

  float &at(int tensor, int64_t i, int64_t j) {
    const Origin &o = origins_[tensor];
    const View &v = views_[tensor];
    if (v.of < 0) return element(tensor, o.row + i, o.col + j);
    // Element (r, c) of the view, k strided, from where the viewed tensor's origin was.
    const PlanTensor &t = plan_.tensors[tensor];
    const int64_t stride = t.k_stride / plan_.tensors[v.of].k_stride;
    const int64_t r = o.row + i, c = o.col + j;
    return element(v.of, v.base.row + (t.role == PlanTensor::Role::B ? r * stride : r),
                   v.base.col + (t.role == PlanTensor::Role::A ? c * stride : c));
  }

  // Element (r, c) of a tensor, from its top left corner.
  float &element(int tensor, int64_t r, int64_t c) {
    const PlanTensor &t = plan_.tensors[tensor];
    TESSEL_CHECK(r >= 0 && c >= 0 && r < t.rows && c < t.cols, "interpreter: access out of tensor");
    switch (t.role) {
      case PlanTensor::Role::A:
        return const_cast<float &>(args_.a[element_offset(t.spec.layout, args_.lda, r, c)]);
      case PlanTensor::Role::B:
        return const_cast<float &>(args_.b[element_offset(t.spec.layout, args_.ldb, r, c)]);
      case PlanTensor::Role::C:
        return args_.c[element_offset(t.spec.layout, args_.ldc, r, c)];
      case PlanTensor::Role::Buffer:
        return workspace_[static_cast<size_t>(t.workspace_offset / 4 +
                                              element_offset(t.spec.layout, t.ext, r, c))];
      case PlanTensor::Role::Registers:
        return registers_[tensor][static_cast<size_t>(r * t.cols + c)];
    }
    TESSEL_CHECK(false, "interpreter: bad tensor role");
    return workspace_[0];
  }

  void leaf(const PlanNode &n) {
    const Spec &s = n.spec;
    const int64_t rows = s.dims[0], cols = s.dims[1], depth = s.dims[2];
    switch (s.op) {
      case Op::Matmul:
      case Op::MatmulAccum:
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            float acc = s.op == Op::Matmul ? 0.0f : at(n.tensors[2], i, j);
            for (int64_t p = 0; p < depth; ++p)
              acc += at(n.tensors[0], i, p) * at(n.tensors[1], p, j);
            at(n.tensors[2], i, j) = acc;
          }
        break;
      case Op::Zero:
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) at(n.tensors[0], i, j) = 0;
        break;
      case Op::Move: {
        // Moves out of registers store accumulators: they apply alpha.
        const bool store = s.operands[0].layout.is_register();
        const float scale = store ? args_.alpha : 1.0f;
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            const float v = scale * at(n.tensors[0], i, j);
            float &dst = at(n.tensors[1], i, j);
            dst = s.accumulate ? dst + v : v;
          }
        break;
      }
    }
  }

  const Plan &plan_;
  MatmulArgs args_;  // a copy: a split of k points c at copies of C
  std::vector<Origin> origins_;
  // Per tensor: which tensor it views for an Interleave, and where that one's origin was.
  struct View {
    int of = -1;
    Origin base;
  };
  std::vector<View> views_;
  std::vector<float> workspace_;
  std::vector<std::vector<float>> registers_;
};

}  // namespace

void interpret(const Plan &plan, const MatmulArgs &args) {
  Interpreter in(plan, args);
  in.run(plan.root);
}

}  // namespace tessel
