// On-disk program cache: binaries keyed by (device name, driver version, source, options), with
// the kernels' argument info (the spec does not promise it for programs made from binaries).
// Writes are atomic (temp file + rename); a corrupt entry is reported and rebuilt, never trusted.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "program_cache.hpp"

namespace encore::detail {

namespace fs = std::filesystem;

namespace {
constexpr char kMagic[] = "ENCORE-PROGRAM-CACHE-1\n";

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

struct Reader {
  const std::string& in;
  size_t pos = 0;
  void need(size_t n) {
    if (n > in.size() - pos) throw std::runtime_error("truncated");
  }
  uint8_t u8() { need(1); return static_cast<uint8_t>(in[pos++]); }
  uint64_t u64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, in.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string str() {
    uint64_t n = u64();
    need(n);
    std::string s = in.substr(pos, n);
    pos += n;
    return s;
  }
};
}  // namespace

std::string cache_dir() {
  const char* e = std::getenv("ENCORE_CACHE");
  if (e && std::string(e) == "0") return {};
  if (e && *e) return e;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/encore";
  const char* home = std::getenv("HOME");
  if (!home || !*home) return {};
  return std::string(home) + "/.cache/encore";
}

std::string cache_key_text(const std::string& prefix, const std::string& source, const std::string& options) {
  return prefix + '\0' + options + '\0' + source;
}

std::string cache_path(const std::string& dir, const std::string& key_text) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(fnv1a(key_text.data(), key_text.size())));
  return dir + "/" + name;
}

std::optional<CacheEntry> cache_load(const std::string& path, const std::string& key_text) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;  // a miss
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string data = ss.str();
  try {
    if (data.size() < sizeof kMagic - 1 + 8 || data.compare(0, sizeof kMagic - 1, kMagic) != 0) throw std::runtime_error("bad header");
    uint64_t sum;
    std::memcpy(&sum, data.data() + data.size() - 8, 8);
    if (sum != fnv1a(data.data(), data.size() - 8)) throw std::runtime_error("checksum mismatch");
    std::string body = data.substr(sizeof kMagic - 1, data.size() - 8 - (sizeof kMagic - 1));
    Reader r{body};
    if (r.str() != key_text) return std::nullopt;  // hash collision: a miss, not corruption
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
          if (t > static_cast<uint8_t>(DType::u64)) throw std::runtime_error("bad dtype");
          p.scalar = static_cast<DType>(t);
        }
        sig.params.push_back(std::move(p));
      }
      e.kernels.push_back(std::move(sig));
    }
    std::string bin = r.str();
    e.binary.assign(bin.begin(), bin.end());
    if (r.pos != body.size() || e.binary.empty()) throw std::runtime_error("trailing or missing data");
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
    uint64_t sum = fnv1a(data.data(), data.size());
    data.append(reinterpret_cast<const char*>(&sum), 8);
    fs::path p(path);
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    thread_local std::mt19937_64 rng(std::random_device{}());
    std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng());
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
