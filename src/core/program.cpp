#include "encore/program.hpp"

#include <future>
#include <optional>
#include <iostream>

#include "encore/device.hpp"
#include "core/async_beside.hpp"
#include "core/env.hpp"
#include "core/program_impl.hpp"
#include "trace/trace.hpp"
#include "core/program_cache.hpp"

namespace encore {

using detail::KernelImpl;
using detail::ProgramImpl;

const char* name(Access a) {
  switch (a) {
    case Access::in: return "in";
    case Access::out: return "out";
    case Access::inout: return "inout";
    default: return "none";
  }
}

void detail::ProgramImpl::save() noexcept {
  if (disk_path.empty() || !backend) return;
  try {
    CacheEntry e{kernels, backend->binary()};
    if (!e.binary.empty()) cache_store(disk_path, disk_key, e);
  } catch (...) {
  }
}

detail::ProgramImpl::~ProgramImpl() {
  if (!dirty) return;
  try {
    dev->finish();  // the binary holds the launch configurations compiled so far only once they ran
  } catch (...) {
    return;
  }
  save();
}

// A build failure that mentions half on a device without cl_khr_fp16 says so: the compiler's own
// words ("declaring function parameter of type '__private half' is not allowed") do not.
static detail::BuildResult build_explained(const Device& dev, const std::string& source, const std::string& options,
                                           const std::vector<detail::KernelSignature>* signatures) {
  try {
    return dev.impl()->build(source, options, nullptr, signatures);
  } catch (const CompileError& e) {
    const std::string& log = e.log();
    if (dev.supports(DType::f16) || (log.find("half") == std::string::npos && log.find("fp16") == std::string::npos)) throw;
    std::string what = e.what();
    what = what.substr(0, what.find("\n--- build log ---\n"));
    throw CompileError(what + "\nnote: " + dev.id() + " (" + dev.info().name +
                           ") does not report cl_khr_fp16, which half arithmetic, half loads and stores through pointers and "
                           "by-value half parameters need; f16 buffers still work as storage through vload_half / vstore_half "
                           "(Device::supports(DType::f16) tells beforehand)",
                       log);
  }
}

namespace {

// The source of a program built from a binary, read on a second thread beside the driver's build
// (0.45 + 0.44 ms for train_mlp's program on PoCL, against a 2 ms build): its parameter lists, which
// the build checks the binary's kernels against, and those lists resolved (resolve_pointees: pointees
// and inferred access) with its notes. Where the disk cache kept the lists (`known`) only the second
// reading is left. The future is waited for (or destroyed, which waits) before `source`, `inc` and
// `options` go; where no thread can be started the reading runs at get().
struct Aside {
  detail::SignatureRead read;
  std::vector<detail::KernelSignature> kernels;
  std::vector<std::string> notes;
};

std::future<Aside> read_aside(const std::string& source, const detail::Includes& inc, const std::string& options,
                              const std::vector<detail::KernelSignature>* known = nullptr) {
  std::optional<std::vector<detail::KernelSignature>> kept;
  if (known) kept = *known;  // (the cache entry holding them goes before the reading is waited for)
  return detail::async_beside([&source, &inc, &options, kept = std::move(kept)]() mutable {
    Aside r;
    if (kept) {
      r.kernels = std::move(*kept);
    } else {
      r.read = detail::read_signatures(source, inc.texts, options, &inc.edges);
      if (!r.read.ok()) return r;
      r.kernels = r.read.kernels;
    }
    r.notes = detail::resolve_pointees(r.kernels, source, inc.texts, options, &inc.edges);
    return r;
  });
}

// Fills `p`'s kernels' pointees and inferred access: from `aside` where it read the lists the build
// kept (a binary's build keeps the lists it was given), else by reading the source now.
void resolve(detail::ProgramImpl& p, const std::string& source, const detail::Includes& inc, const std::string& options,
             Aside* aside) {
  std::vector<std::string> notes;
  bool done = false;
  if (aside) {
    Aside& r = *aside;
    done = r.kernels.size() == p.kernels.size();
    for (size_t k = 0; done && k < r.kernels.size(); ++k) {
      done = r.kernels[k].name == p.kernels[k].name && r.kernels[k].params.size() == p.kernels[k].params.size();
      for (size_t i = 0; done && i < r.kernels[k].params.size(); ++i) done = r.kernels[k].params[i].type_name == p.kernels[k].params[i].type_name;
    }
    if (done) {
      p.kernels = std::move(r.kernels);
      notes = std::move(r.notes);
    }
  }
  if (!done) notes = detail::resolve_pointees(p.kernels, source, inc.texts, options, &inc.edges);
  for (const std::string& note : notes) detail::log(LogLevel::info, note);
}

}  // namespace

Program Device::compile(const std::string& source, const std::string& options) const {
  detail::DeviceImpl& d = *shared_impl();
  // the headers key both caches (an edited header is another program) and hold typedefs
  const detail::Includes inc = detail::read_includes(source, options);
  std::lock_guard<std::mutex> lock(d.programs_mu);
  // in memory: (source, options and the headers' bytes); a header that could not be read makes a
  // program that is never shared, since a later compile could not tell whether it changed
  auto key = std::make_pair(source, options + std::string("\0includes\0", 10) + inc.contents);
  if (inc.resolved)
    if (auto it = d.programs.find(key); it != d.programs.end())
      if (auto live = it->second.lock()) return Program(live);

  auto p = std::make_shared<ProgramImpl>();
  p->dev = shared_impl();
  p->source = source;
  p->options = options;
  std::string dir = d.is_null() ? std::string() : detail::env::cache_dir();
  std::future<Aside> aside;  // (after what it reads: waited for before they go)
  if (!dir.empty() && !inc.resolved) {
    detail::log(LogLevel::info, "program not cached on disk: " + inc.why + ", so the cache could not tell an edited header");
    dir.clear();
  }
  if (!dir.empty()) {
    p->disk_key = detail::cache_key_text(d.cache_key_prefix(), source, options, inc.contents);
    p->disk_path = detail::cache_path(dir, p->disk_key);
    if (auto entry = detail::cache_load(p->disk_path, p->disk_key)) {
      aside = read_aside(source, inc, options, &entry->kernels);
      try {
        detail::BuildResult r = d.build(source, options, &entry->binary, &entry->kernels);
        p->backend = std::move(r.program);
        p->kernels = std::move(r.kernels);
        p->from_disk = true;
      } catch (const Error& e) {
        detail::log(LogLevel::warning, "cached binary " + p->disk_path + " was rejected (" + e.what() + "); recompiling");
      }
    }
  }
  if (!p->backend) {
    // parameter types from the source: OpenCL then builds without -cl-kernel-arg-info (slower code
    // on PoCL); what the reader cannot follow the OpenCL backend asks the driver about instead
    detail::SignatureRead read = detail::read_signatures(source, inc.texts, options, &inc.edges);
    if (!read.ok() && d.is_null() && !read.unchecked.empty()) {
      detail::log(LogLevel::info, "NULL device: " + read.unreadable + "; such types are not checked (the NULL device has no compiler to ask)");
      read.kernels = std::move(read.unchecked);
      read.unreadable.clear();
    } else if (!read.ok()) {
      if (d.is_null()) throw CompileError("NULL device: " + read.unreadable + " (the NULL device has no compiler to ask)", "");
      detail::log(LogLevel::info, read.unreadable + "; its parameter types come from a separate metadata build");
    } else if (d.is_null() && read.kernels.empty() && source.find("kernel") == std::string::npos) {
      throw CompileError("NULL device: the source defines no __kernel function", "");
    }
    detail::BuildResult r = build_explained(*this, source, options, read.ok() ? &read.kernels : nullptr);
    p->backend = std::move(r.program);
    p->kernels = std::move(r.kernels);
    p->save();
  }
  // one place for both backends and for binaries from the disk cache: every launch checks buffers
  // against these (src/exec/eager.cpp)
  Aside cached;
  if (p->from_disk) cached = aside.get();
  resolve(*p, source, inc, options, p->from_disk ? &cached : nullptr);
  std::erase_if(d.programs, [](const auto& kv) { return kv.second.expired(); });
  if (inc.resolved) d.programs[std::move(key)] = p;
  return Program(p);
}

// The key a saved binary must carry (Device::binary_key): the device's cache prefix (name, driver,
// version), the options, and a hash of the source with every header it includes; empty where an
// include cannot be followed (a header could then change unseen).
static std::string binary_key_of(detail::DeviceImpl& d, const std::string& source, const std::string& options, const detail::Includes& inc) {
  if (!inc.resolved) return {};
  std::string prefix = d.cache_key_prefix();
  for (size_t at; (at = prefix.find('\0')) != std::string::npos;) prefix.replace(at, 1, " | ");
  const std::string body = source + '\0' + inc.contents;
  return prefix + " | options: " + options + " | source: " + detail::hash_hex(body.data(), body.size());
}

std::string Device::binary_key(const std::string& source, const std::string& options) const {
  return binary_key_of(*shared_impl(), source, options, detail::read_includes(source, options));
}

Program Device::compile_binary(const std::string& source, const std::string& options, const std::vector<unsigned char>& binary,
                               const std::string& key) const {
  detail::DeviceImpl& d = *shared_impl();
  if (d.is_null()) return compile(source, options);  // nothing to build: the NULL device never has binaries
  const detail::Includes inc = detail::read_includes(source, options);
  auto from_source = [&](const std::string& why) {
    detail::log(LogLevel::info, "saved binary not used, compiling from source: " + why);
    return compile(source, options);
  };
  const std::string here = binary_key_of(d, source, options, inc);
  if (here.empty()) return from_source(inc.why + ", so the key cannot tell an edited header");
  if (binary.empty()) return from_source("the binary is empty");
  if (key != here) return from_source("it was built for \"" + key + "\", this device and program need \"" + here + "\"");
  auto mem_key = std::make_pair(source, options + std::string("\0includes\0", 10) + inc.contents);
  {
    std::lock_guard<std::mutex> lock(d.programs_mu);
    if (auto it = d.programs.find(mem_key); it != d.programs.end())
      if (auto live = it->second.lock()) return Program(live);  // built already in this process
  }
  // parameter types from the source, as for a compile (the spec does not promise argument info for
  // a program made from a binary), read beside the driver's build
  std::future<Aside> aside = read_aside(source, inc, options);
  std::optional<Aside> read;
  auto reading = [&]() -> Aside& { return read ? *read : read.emplace(aside.get()); };
  auto lists = [&]() -> const std::vector<detail::KernelSignature>* { return reading().read.ok() ? &read->read.kernels : nullptr; };
  auto p = std::make_shared<ProgramImpl>();
  p->dev = shared_impl();
  p->source = source;
  p->options = options;
  try {
    detail::BuildResult r = d.build(source, options, &binary, detail::BuildSignatures(lists));
    p->backend = std::move(r.program);
    p->kernels = std::move(r.kernels);
  } catch (const Error& e) {
    // (the reading throws nothing of its own but std::bad_alloc, which passes this catch; an
    // unreadable source is what the binary cannot be used for, whatever the driver said)
    if (!lists()) return from_source(read->read.unreadable + ", and a program built from a binary takes its parameter types from the source");
    return from_source(std::string("the driver rejected it (") + e.what() + ")");
  }
  p->from_binary = true;
  resolve(*p, source, inc, options, &reading());
  std::lock_guard<std::mutex> lock(d.programs_mu);
  std::erase_if(d.programs, [](const auto& kv) { return kv.second.expired(); });
  if (!d.programs.count(mem_key)) d.programs[std::move(mem_key)] = p;
  return Program(p);
}

static ProgramImpl& need(const std::shared_ptr<ProgramImpl>& p) {
  if (!p) throw ArgumentError("use of a null Program");
  return *p;
}

Device Program::device() const { return Device(need(impl_).dev); }
const std::string& Program::source() const { return need(impl_).source; }
const std::string& Program::options() const { return need(impl_).options; }
bool Program::from_disk_cache() const { return need(impl_).from_disk; }
bool Program::from_binary() const { return need(impl_).from_binary; }
std::string Program::binary_key() const { return device().binary_key(source(), options()); }
void Program::save_cache() const { need(impl_).save(); }
std::vector<unsigned char> Program::binary() const {
  ProgramImpl& p = need(impl_);
  std::lock_guard<std::mutex> lock(p.mu);
  return p.backend->binary();
}

std::vector<std::string> Program::kernel_names() const {
  std::vector<std::string> v;
  for (const auto& k : need(impl_).kernels) v.push_back(k.name);
  return v;
}

Kernel Program::kernel(const std::string& name) const {
  ProgramImpl& p = need(impl_);
  for (const auto& sig : p.kernels) {
    if (sig.name != name) continue;
    auto k = std::make_shared<KernelImpl>();
    k->program = impl_;
    k->sig = &sig;
    std::lock_guard<std::mutex> lock(p.mu);
    k->eager = p.backend->create_kernel(name);
    return Kernel(std::move(k));
  }
  std::string names;
  for (const auto& sig : p.kernels) names += (names.empty() ? "" : ", ") + sig.name;
  throw ArgumentError("program has no kernel \"" + name + "\" (kernels: " + (names.empty() ? "none" : names) +
                      "; a kernel named like an OpenCL C built-in such as step or clamp cannot be created)");
}

static KernelImpl& need(const std::shared_ptr<KernelImpl>& k) {
  if (!k) throw ArgumentError("use of a null Kernel");
  return *k;
}

const std::string& Kernel::name() const { return need(impl_).sig->name; }
const std::vector<KernelParam>& Kernel::params() const { return need(impl_).sig->params; }
Program Kernel::program() const { return Program(need(impl_).program); }
Device Kernel::device() const { return Device(need(impl_).program->dev); }
WorkGroupInfo Kernel::work_group_info() const {
  KernelImpl& k = need(impl_);
  std::lock_guard<std::mutex> lock(k.mu);
  return k.eager->work_group_info();
}

}  // namespace encore
