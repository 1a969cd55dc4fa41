// The C API of steps that decide (encore/control.hpp): host items, branches and loops with C
// callbacks and a user pointer. A host function or loop condition runs under the native callbacks'
// rules (it may read and set through its context, never issue work: ENCORE_ERROR_JIT); a branch
// alternative or loop body issues the step's work with the ordinary calls.
#include <string>
#include <vector>

#include "capi/handles.hpp"

namespace encore::capi {
namespace {

// The context of the host function running on this thread: a context is usable only while its
// function runs, on its thread (a stale or forged pointer is an error, never a read).
thread_local HostCtx* current_ctx = nullptr;
struct CtxScope {
  HostCtx* outer;
  explicit CtxScope(HostCtx* c) noexcept : outer(current_ctx) { current_ctx = c; }
  ~CtxScope() { current_ctx = outer; }
};

HostCtx& ctx_of(encore_host_ctx ctx) {
  if (!ctx || reinterpret_cast<HostCtx*>(ctx) != current_ctx)
    fail(ENCORE_ERROR_INVALID_ARGUMENT, "ctx is not the context of a host function running on this thread (it is valid only inside that "
                                        "function, as passed to it)");
  return *current_ctx;
}

std::string label(const char* name) { return name ? name : ""; }

// A callback's failure as an exception: its own non-zero return, with the last encore error it saw.
[[noreturn]] void callback_failed(const std::string& what, int rc) {
  const char* last = encore_last_error();
  std::string msg = what + " returned " + std::to_string(rc);
  if (last && *last) msg += std::string(" (the last encore error on this thread: ") + last + ")";
  encore_status s = last_status();
  fail(s == ENCORE_OK ? ENCORE_ERROR_UNKNOWN : s, msg);
}

std::function<void()> body_of(encore_body_fn fn, void* user, std::string what) {
  if (!fn) return {};
  return [fn, user, what] {
    if (int rc = fn(user); rc != 0) callback_failed(what, rc);
  };
}

std::vector<Buffer> buffers(const encore_buffer* reads, size_t n) {
  if (n) need(reads, "reads");
  std::vector<Buffer> out;
  for (size_t i = 0; i < n; ++i) out.push_back(get_at<BufferObj>(reads[i], "reads", i)->buf);
  return out;
}

}  // namespace
}  // namespace encore::capi

using namespace encore;
using namespace encore::capi;

extern "C" {

encore_status encore_host(encore_device dev, const encore_buffer* reads, size_t n_reads, const encore_variable* sets, size_t n_sets,
                          encore_host_fn fn, void* user, const char* name) {
  return guard(__func__, [&] {
    check_not_in_native("add a host item");
    auto d = get<DeviceObj>(dev, "dev");
    if (!fn) fail(ENCORE_ERROR_INVALID_ARGUMENT, "fn is NULL");
    std::vector<Buffer> rb = buffers(reads, n_reads);
    if (n_sets) need(sets, "sets");
    std::vector<Variable> vs;
    for (size_t i = 0; i < n_sets; ++i) vs.push_back(get_at<VariableObj>(sets[i], "sets", i)->var);
    std::string what = "host function " + label(name);
    d->dev.host(std::move(rb), std::move(vs), [fn, user, what](HostCtx& c) {
      int rc;
      {
        NativeScope scope;  // eagerly, while captured and on every replay alike
        CtxScope cs(&c);
        rc = fn(user, reinterpret_cast<encore_host_ctx>(&c));
      }
      if (rc != 0) callback_failed(what, rc);
    }, label(name));
  });
}

encore_status encore_host_read(encore_host_ctx ctx, size_t r, size_t offset, void* dst, size_t n) {
  return guard(__func__, [&] {
    HostCtx& c = ctx_of(ctx);
    if (n) need(dst, "dst");
    size_t have = c.bytes(r);
    if (offset > have || n > have - offset)
      fail(ENCORE_ERROR_INVALID_ARGUMENT, "bytes [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " + std::to_string(n) +
                                              ") are past the end of read " + std::to_string(r) + " (" + std::to_string(have) + " bytes)");
    if (n) std::memcpy(dst, static_cast<const unsigned char*>(c.data(r)) + offset, n);
  });
}

encore_status encore_host_read_size(encore_host_ctx ctx, size_t r, size_t* bytes) {
  return guard(__func__, [&] {
    need(bytes, "bytes");
    *bytes = ctx_of(ctx).bytes(r);
  });
}

encore_status encore_host_set_i64(encore_host_ctx ctx, encore_variable var, int64_t value) {
  return guard(__func__, [&] {
    HostCtx& c = ctx_of(ctx);
    c.set(get<VariableObj>(var, "var")->var, value);
  });
}

encore_status encore_host_set_f64(encore_host_ctx ctx, encore_variable var, double value) {
  return guard(__func__, [&] {
    HostCtx& c = ctx_of(ctx);
    c.set(get<VariableObj>(var, "var")->var, value);
  });
}

encore_status encore_when(encore_device dev, encore_variable cond, encore_body_fn then_fn, encore_body_fn else_fn, void* user,
                          const char* name) {
  return guard(__func__, [&] {
    check_not_in_native("add a branch");
    auto d = get<DeviceObj>(dev, "dev");
    auto v = get<VariableObj>(cond, "cond");
    d->dev.when(v->var, body_of(then_fn, user, "then_fn of branch " + label(name)), body_of(else_fn, user, "else_fn of branch " + label(name)),
                label(name));
  });
}

encore_status encore_select(encore_device dev, encore_variable index, const encore_body_fn* alternatives, size_t n, void* user,
                            const char* name) {
  return guard(__func__, [&] {
    check_not_in_native("add a branch");
    auto d = get<DeviceObj>(dev, "dev");
    auto v = get<VariableObj>(index, "index");
    if (n == 0) fail(ENCORE_ERROR_INVALID_ARGUMENT, "n is 0: a select needs at least one alternative");
    need(alternatives, "alternatives");
    std::vector<std::function<void()>> alts;
    for (size_t i = 0; i < n; ++i) alts.push_back(body_of(alternatives[i], user, "alternatives[" + std::to_string(i) + "] of select " + label(name)));
    d->dev.select(v->var, alts, label(name));
  });
}

encore_status encore_repeat(encore_device dev, encore_variable count, encore_body_fn body, void* user, const char* name) {
  return guard(__func__, [&] {
    check_not_in_native("add a loop");
    auto d = get<DeviceObj>(dev, "dev");
    auto v = get<VariableObj>(count, "count");
    if (!body) fail(ENCORE_ERROR_INVALID_ARGUMENT, "body is NULL");
    d->dev.repeat(v->var, body_of(body, user, "body of repeat " + label(name)), label(name));
  });
}

encore_status encore_loop_while(encore_device dev, int64_t max_iterations, const encore_buffer* reads, size_t n_reads, encore_body_fn body,
                                encore_cond_fn cond, void* user, const char* name) {
  return guard(__func__, [&] {
    check_not_in_native("add a loop");
    auto d = get<DeviceObj>(dev, "dev");
    if (!body) fail(ENCORE_ERROR_INVALID_ARGUMENT, "body is NULL");
    if (!cond) fail(ENCORE_ERROR_INVALID_ARGUMENT, "cond is NULL");
    std::vector<Buffer> rb = buffers(reads, n_reads);
    std::string what = "condition of loop_while " + label(name);
    d->dev.loop_while(max_iterations, std::move(rb), body_of(body, user, "body of loop_while " + label(name)),
                      [cond, user, what](HostCtx& c) {
                        int again = 0, rc;
                        {
                          NativeScope scope;
                          CtxScope cs(&c);
                          rc = cond(user, reinterpret_cast<encore_host_ctx>(&c), &again);
                        }
                        if (rc != 0) callback_failed(what, rc);
                        return again != 0;
                      },
                      label(name));
  });
}

}  // extern "C"
