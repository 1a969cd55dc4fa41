// The copy kind: dst <- src, whole buffers of equal bytes, on one device, between devices of one
// context (replay orders the two queues: src/unit/sync.cpp), between host memories or through
// host memory. Each copy's variant (CopyPath) is chosen at bind, once.
#include "exec/kind.hpp"
#include "exec/eager.hpp"

#include <string>

namespace encore::detail {

namespace {

// operands: the source (argument 1), then the destination (argument 0)
void operands(const ExecItem& it, std::vector<Operand>& out) {
  out.push_back({const_cast<Buffer*>(&it.src), Access::in, 1});
  out.push_back({const_cast<Buffer*>(&it.dst), Access::out, 0});
}
std::string operand_name(const ExecItem&, uint32_t arg) { return arg == 0 ? "copy's destination" : "copy's source"; }
const std::shared_ptr<DeviceImpl>& queue(const ExecItem& it) { return it.dst.impl()->dev; }
std::string label(const ExecItem& it) { return it.name.empty() ? "copy" : it.name; }
std::string title(const ExecItem&) { return "copy"; }
std::string describe(const ExecItem& it) { return "copy " + it.dst.describe() + " <- " + it.src.describe(); }
bool uses_variables(const ExecItem&) { return false; }

void run_eager(const ExecItem& it) {
  const auto t0 = eager_start();
  BufferImpl& d = *it.dst.impl();
  BufferImpl& s = *it.src.impl();
  d.ensure_allocated();
  s.ensure_allocated();
  enqueue_copy(d, s, d.nbytes, nullptr);
  d.bump();
  after_eager(it, *d.dev, t0);
}

void submit(const ExecItem& it) { it.dst.device().copy(it.dst, it.src); }

// A copy as bound: its ends now (re-pointed on rebinding), its bytes, and for a copy through host
// memory the host bytes it passes through.
struct CopyBound {
  BufferImpl* dst = nullptr;
  BufferImpl* src = nullptr;
  size_t n = 0;
  unsigned char* staging = nullptr;
};

// The replays, one per variant (copy_path): bind picks one, so a replay only enqueues.
void replay_queue(Binding&, BoundItem& x) {
  const CopyBound& k = payload<CopyBound>(x);
  copy_on_queue(*k.dst, *k.src, k.n);
}
void replay_peer(Binding& b, BoundItem& x) {  // its dependencies (sync.cpp) as its wait list, its own event as its signal
  const CopyBound& k = payload<CopyBound>(x);
  enqueue_peer_copy(*k.dst, *k.src, k.n, gather_events(b, &b.wait_slots[x.wait_at], x.wait_n), x.wait_n,
                    x.signal >= 0 ? &b.events[x.signal] : nullptr);
}
void replay_host(Binding&, BoundItem& x) {
  const CopyBound& k = payload<CopyBound>(x);
  copy_host(*k.dst, *k.src, k.n);
}
void replay_staged(Binding&, BoundItem& x) {
  const CopyBound& k = payload<CopyBound>(x);
  copy_staged(*k.dst, *k.src, k.n, k.staging);
}

void bind(BindContext& c, const ExecItem& it, const PlanStep& st, BoundItem& x) {
  Binding& b = c.b;
  CopyBound& k = b.payloads.make<CopyBound>();
  x.payload = &k;
  k.src = b.current[st.ops[0]].impl();
  k.dst = b.current[st.ops[1]].impl();
  k.n = it.dst.nbytes();
  b.uses[st.ops[0]].push_back({c.bound, 0, 1});
  b.uses[st.ops[1]].push_back({c.bound, 1, 0});
  // a rebinding keeps each operand's device (bind_input refuses another), so the pair's variant holds
  const CopyPath path = copy_path(*k.dst->dev, *k.src->dev);
  if ((path == CopyPath::peer) != (c.p.peer.size() > x.item && c.p.peer[x.item]))
    throw Error("internal error: the plan's cross-device order and the copy's variant (" + std::string(name(path)) + ") disagree for " +
                it.describe());
  switch (path) {
    case CopyPath::queue:
      x.replay = replay_queue;
      x.replay_after = [](BoundItem& y, uint32_t lane, NativeEvent* const* waits, uint32_t n, NativeEvent** done) {
        const CopyBound& q = payload<CopyBound>(y);
        y.dev->copy_after(lane, q.dst->root()->mem, q.dst->offset, q.src->root()->mem, q.src->offset, q.n, waits, n, done);
      };
      break;
    case CopyPath::peer:
      x.replay = replay_peer;
      x.orders_itself = true;  // the generic order around an item (a barrier, a marker) would add commands
      break;
    case CopyPath::host: x.replay = replay_host; break;
    case CopyPath::staged:
      b.staging.push_back(std::make_unique<unsigned char[]>(k.n));
      k.staging = b.staging.back().get();
      x.replay = replay_staged;
      break;
  }
}

void point(BoundItem& x, uint32_t, uint32_t arg, BufferImpl* to, NativeMem*) {
  CopyBound& k = payload<CopyBound>(x);
  (arg == 0 ? k.dst : k.src) = to;
}

}  // namespace

std::optional<CopyPath> bound_copy_path(const BoundItem& x) {
  if (x.replay == replay_queue) return CopyPath::queue;
  if (x.replay == replay_peer) return CopyPath::peer;
  if (x.replay == replay_host) return CopyPath::host;
  if (x.replay == replay_staged) return CopyPath::staged;
  return std::nullopt;
}

const KindOps copy_kind{"copy", operands, operand_name, queue, label, title, describe, uses_variables, false, false,
                        run_eager, submit, bind, point, replay_queue, nullptr};  // bind sets each copy's variant

}  // namespace encore::detail

namespace encore {

using namespace detail;

void Device::copy(const Buffer& dst, const Buffer& src) const {
  if (!dst || !src) throw ArgumentError("copy: null buffer");
  if (dst.impl()->dev != shared_impl()) throw ArgumentError("copy: destination " + dst.describe() + " is not on " + id());
  if (dst.nbytes() != src.nbytes())
    throw ArgumentError("copy: sizes differ: destination " + dst.describe() + " has " + std::to_string(dst.nbytes()) + " bytes, source " +
                        src.describe() + " has " + std::to_string(src.nbytes()));
  // OpenCL rejects overlapping copies (CL_MEM_COPY_OVERLAP) where the NULL device would memmove:
  // one clear error on every device instead
  if (dst.overlaps(src))
    throw ArgumentError("copy: destination " + dst.describe() + " and source " + src.describe() + " overlap");
  ExecItem item;
  item.kind = ItemKind::copy;
  item.dst = dst;
  item.src = src;
  run_item_eager(item);
  record_item(std::move(item));
}

}  // namespace encore
