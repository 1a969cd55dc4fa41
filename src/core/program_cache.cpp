// On-disk program cache: binaries keyed by (device name, driver version, source, options, the bytes of
// every #included file), with
// the kernels' argument info (the spec does not promise it for programs made from binaries).
// Writes are atomic (temp file + rename); a corrupt entry is reported and rebuilt, never trusted.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string_view>

#include "core/checksum.hpp"
#include "core/preprocessor.hpp"
#include "core/program_cache.hpp"
#include "core/program_impl.hpp"
#include "trace/trace.hpp"

namespace encore::detail {

namespace fs = std::filesystem;

namespace {
// Version 2: the checksum is sum64 (core/checksum.hpp), not FNV-1a (0.8 ms of a warm start's
// 1.7 ms load of an 860 KB entry). An entry of another version is a miss, rebuilt and replaced.
constexpr char kMagicFamily[] = "ENCORE-PROGRAM-CACHE-";
constexpr char kMagic[] = "ENCORE-PROGRAM-CACHE-2\n";

uint64_t fnv1a(const char* p, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}


struct Writer {
  std::string out;
  void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u64(uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
  void str(const std::string& s) { u64(s.size()); out += s; }
};

// Reads in[pos, end) in place: only what it returns as a string is copied.
struct Reader {
  std::string_view in;
  size_t pos = 0, end = 0;
  void need(size_t n) {
    if (n > end - pos) throw std::runtime_error("truncated");
  }
  uint8_t u8() { need(1); return static_cast<uint8_t>(in[pos++]); }
  uint64_t u64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, in.data() + pos, 8);
    pos += 8;
    return v;
  }
  // the next length-prefixed string, in place
  std::string_view view() {
    uint64_t n = u64();
    need(n);
    std::string_view s(in.data() + pos, n);
    pos += n;
    return s;
  }
  std::string str() { return std::string(view()); }
};
}  // namespace

std::string cache_key_text(const std::string& prefix, const std::string& source, const std::string& options, const std::string& includes) {
  std::string k = prefix + '\0' + options + '\0' + source;
  if (!includes.empty()) k += std::string("\0includes\0", 10) + includes;
  return k;
}

Includes read_includes(const std::string& source, const std::string& options) {
  Includes r;
  if (source.find("include") == std::string::npos) return r;  // the common case: no file system access
  std::error_code ec;
  std::vector<fs::path> search{fs::current_path(ec)};
  for (const BuildOption& o : preprocessor_options(options))
    if (o.flag == 'I') search.push_back(fs::absolute(o.value, ec));
  std::vector<std::string> seen;  // canonical paths read so far
  // (text, its directory, how it was reached) still to scan
  struct Pending {
    std::string text;
    fs::path dir;
    std::string from;
    size_t index = 0;  // 0: the source, i + 1: texts[i]
  };
  std::vector<Pending> todo{{source, fs::path(), "the source", 0}};
  while (!todo.empty() && r.resolved) {
    Pending cur = std::move(todo.back());
    todo.pop_back();
    std::vector<Pending> found;
    for (const IncludeDirective& d : include_directives(cur.text)) {  // the reader's lexer (core/preprocessor.hpp)
      const std::string where = "#include " + (d.computed ? d.name : (d.quoted ? "\"" + d.name + "\"" : "<" + d.name + ">")) + " (" +
                                cur.from + ", line " + std::to_string(d.line) + ")";
      if (d.computed) {
        r.resolved = false;
        r.why = where + " is computed by a macro";
        return r;
      }
      std::vector<fs::path> candidates;
      if (fs::path(d.name).is_absolute()) candidates.push_back(d.name);
      else {
        if (d.quoted && !cur.dir.empty()) candidates.push_back(cur.dir / d.name);
        for (const fs::path& s : search) candidates.push_back(s / d.name);
      }
      fs::path hit;
      for (const fs::path& c : candidates)
        if (fs::is_regular_file(c, ec)) {
          hit = fs::canonical(c, ec);
          break;
        }
      if (hit.empty()) {
        r.resolved = false;
        r.why = where + " was not found in the working directory or the -I directories";
        return r;
      }
      const std::string spelled = d.quoted ? "\"" + d.name + "\"" : "<" + d.name + ">";
      if (auto at = std::find(seen.begin(), seen.end(), hit.string()); at != seen.end()) {  // include guards: its bytes are in already
        r.edges[{cur.index, spelled}] = static_cast<size_t>(at - seen.begin());
        continue;
      }
      r.edges[{cur.index, spelled}] = seen.size();
      std::ifstream f(hit, std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      if (!f && !f.eof()) {
        r.resolved = false;
        r.why = where + ": " + hit.string() + " cannot be read";
        return r;
      }
      seen.push_back(hit.string());
      std::string text = ss.str();
      r.contents += std::to_string(text.size()) + ':' + text;  // length-prefixed: no two file lists give one key
      r.texts.push_back(text);
      found.push_back({std::move(text), hit.parent_path(), hit.string(), seen.size()});
      if (seen.size() > 4096) {
        r.resolved = false;
        r.why = "more than 4096 included files";
        return r;
      }
    }
    for (auto it = found.rbegin(); it != found.rend(); ++it) todo.push_back(std::move(*it));  // depth first, in order
  }
  return r;
}

std::string cache_path(const std::string& dir, const std::string& key_text) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(fnv1a(key_text.data(), key_text.size())));
  return dir + "/" + name;
}

std::string hash_hex(const void* data, size_t n) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(fnv1a(static_cast<const char*>(data), n)));
  return text;
}

std::optional<CacheEntry> cache_load(const std::string& path, const std::string& key_text) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return std::nullopt;  // a miss
  // read whole in one piece and parsed in place; the binary (hundreds of KB, last before the
  // checksum) then becomes the entry's by moving it to the front: no second buffer to allocate,
  // fault in and copy into (a warm start compiles from here)
  std::vector<unsigned char> buf;
  try {
    const std::streamoff size = f.tellg();
    if (size < 0) throw std::runtime_error("unreadable");
    buf.resize(static_cast<size_t>(size));
    f.seekg(0);
    if (!f.read(reinterpret_cast<char*>(buf.data()), size)) throw std::runtime_error("unreadable");
    const std::string_view data(reinterpret_cast<const char*>(buf.data()), buf.size());
    if (data.size() < sizeof kMagic - 1 + 8 || data.compare(0, sizeof kMagic - 1, kMagic) != 0) {
      const size_t eol = data.find('\n');
      if (data.compare(0, sizeof kMagicFamily - 1, kMagicFamily) == 0 && eol != std::string::npos && eol < 40) {
        log(LogLevel::info, "program cache entry " + path + " is of another version (" + std::string(data.substr(0, eol)) + "); rebuilt");
        return std::nullopt;  // a miss: the store replaces it
      }
      throw std::runtime_error("bad header");
    }
    uint64_t sum;
    std::memcpy(&sum, data.data() + data.size() - 8, 8);
    if (sum != sum64(data.data(), data.size() - 8)) throw std::runtime_error("checksum mismatch");
    Reader r{data, sizeof kMagic - 1, data.size() - 8};
    if (r.view() != key_text) return std::nullopt;  // hash collision: a miss, not corruption
    CacheEntry e;
    uint64_t nk = r.u64();
    if (nk > 100000) throw std::runtime_error("bad kernel count");
    for (uint64_t k = 0; k < nk; ++k) {
      KernelSignature sig;
      sig.name = r.str();
      uint64_t np = r.u64();
      if (np > 10000) throw std::runtime_error("bad parameter count");
      for (uint64_t i = 0; i < np; ++i) {
        KernelParam p;
        p.name = r.str();
        p.type_name = r.str();
        uint8_t space = r.u8();
        if (space > 3) throw std::runtime_error("bad address space");
        p.space = static_cast<AddressSpace>(space);
        p.is_pointer = r.u8() != 0;
        p.const_data = r.u8() != 0;
        uint8_t has = r.u8(), t = r.u8();
        if (has) {
          if (t > static_cast<uint8_t>(DType::bf16)) throw std::runtime_error("bad dtype");  // the last dtype
          p.scalar = static_cast<DType>(t);
        }
        sig.params.push_back(std::move(p));
      }
      e.kernels.push_back(std::move(sig));
    }
    const std::string_view bin = r.view();
    if (r.pos != r.end || bin.empty()) throw std::runtime_error("trailing or missing data");
    const size_t at = static_cast<size_t>(bin.data() - data.data()), n = bin.size();
    buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(at));
    buf.resize(n);
    e.binary = std::move(buf);
    return e;
  } catch (const std::exception& ex) {
    log(LogLevel::warning, "program cache entry " + path + " is corrupt (" + ex.what() + "); recompiling");
    std::error_code ec;
    fs::remove(path, ec);
    return std::nullopt;
  }
}

void cache_store(const std::string& path, const std::string& key_text, const CacheEntry& e) noexcept {
  try {
    Writer w;
    w.str(key_text);
    w.u64(e.kernels.size());
    for (const KernelSignature& s : e.kernels) {
      w.str(s.name);
      w.u64(s.params.size());
      for (const KernelParam& p : s.params) {
        w.str(p.name);
        w.str(p.type_name);
        w.u8(static_cast<uint8_t>(p.space));
        w.u8(p.is_pointer);
        w.u8(p.const_data);
        w.u8(p.scalar.has_value());
        w.u8(p.scalar ? static_cast<uint8_t>(*p.scalar) : 0);
      }
    }
    w.str(std::string(e.binary.begin(), e.binary.end()));
    std::string data = std::string(kMagic) + w.out;
    uint64_t sum = sum64(data.data(), data.size());
    data.append(reinterpret_cast<const char*>(&sum), 8);
    fs::path p(path);
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    // a unique temporary name: the pid for other processes, a counter for this one's threads, and a
    // random start for processes of other pid namespaces sharing the folder (no thread-local: every
    // thread touching one of libencore's pays for its whole TLS block)
    static std::atomic<uint64_t> next_tmp{(uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
    std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(next_tmp.fetch_add(1, std::memory_order_relaxed));
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      if (!f) return;
      f.write(data.data(), static_cast<std::streamsize>(data.size()));
      if (!f) {
        fs::remove(tmp, ec);
        return;
      }
    }
    fs::rename(tmp, p, ec);
    if (ec) fs::remove(tmp, ec);
  } catch (...) {
    // the cache is an optimisation: a failed store costs a compile next time, nothing more
  }
}

}  // namespace encore::detail

namespace encore::detail {

void save_dirty_programs(DeviceImpl& d) {
  if (!d.programs_dirty.exchange(false)) return;
  std::lock_guard<std::mutex> lock(d.programs_mu);
  for (auto& [_, w] : d.programs)
    if (auto p = w.lock(); p && p->dirty.exchange(false)) p->save();
}

}  // namespace encore::detail
