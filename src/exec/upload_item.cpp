// The upload kind: host bytes recorded at capture (a copyin inside the step) written into a buffer
// on every replay, like any other write.
#include "exec/kind.hpp"

namespace encore::detail {

namespace {

void operands(const ExecItem& it, std::vector<Operand>& out) { out.push_back({const_cast<Buffer*>(&it.dst), Access::out, 0}); }
std::string operand_name(const ExecItem&, uint32_t) { return "destination"; }
const std::shared_ptr<DeviceImpl>& queue(const ExecItem& it) { return it.dst.impl()->dev; }
std::string label(const ExecItem& it) { return it.name.empty() ? "upload" : it.name; }
std::string title(const ExecItem&) { return "upload (copyin)"; }
std::string describe(const ExecItem& it) { return "upload " + std::to_string(it.data ? it.data->size() : 0) + " bytes -> " + it.dst.describe(); }
bool uses_variables(const ExecItem&) { return false; }

void run_eager(const ExecItem& it) {
  auto t0 = std::chrono::steady_clock::now();
  BufferImpl& d = *it.dst.impl();
  d.ensure_allocated();
  enqueue_upload(d, it.data->data(), d.nbytes, true);
  d.bump();
  after_eager(it, *d.dev, t0);
}

void submit(const ExecItem& it) { it.dst.copyin_bytes(it.data->data(), it.data->size()); }

void bind(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x) {
  x.dst = c.b.current[st.ops[0]].impl();
  x.n = it.dst.nbytes();
  x.data = it.data->data();
  c.b.uses[st.ops[0]].push_back({c.bound, 0, 0});
}

void point(BoundItem& x, uint32_t, uint32_t, BufferImpl* to, NativeMem*) { x.dst = to; }
void replay(Binding&, BoundItem& x) { enqueue_upload(*x.dst, x.data, x.n, false); }

}  // namespace

const KindOps upload_kind{"upload", operands, operand_name, queue, label, title, describe, uses_variables, false, false,
                          run_eager, submit, bind, point, replay, nullptr};

}  // namespace encore::detail
