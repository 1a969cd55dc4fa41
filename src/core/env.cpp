// The environment, read here only (see env.hpp for the list and when each is read).
#include "core/env.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace encore::detail::env {

namespace {

std::string_view get(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}

// Set, non-empty and not "0".
bool flag(const char* name, bool dflt) {
  std::string_view v = get(name);
  if (v.empty()) return dflt;
  return v != "0";
}

// A non-negative integer; anything else (unset, "", "abc", "-1") is 0. Digits past the number are
// ignored, as atoi did ("2x" is 2).
int count(const char* name) {
  std::string_view v = get(name);
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  (void)end;
  return ec == std::errc() && n > 0 ? n : 0;
}

}  // namespace

std::string device() { return std::string(get("ENCORE_DEVICE")); }

std::string cache_dir() {
  std::string_view e = get("ENCORE_CACHE");
  if (e == "0") return {};
  if (!e.empty()) return std::string(e);
  if (std::string_view xdg = get("XDG_CACHE_HOME"); !xdg.empty()) return std::string(xdg) + "/encore";
  if (std::string_view home = get("HOME"); !home.empty()) return std::string(home) + "/.cache/encore";
  return {};
}

bool jit() { return flag("ENCORE_JIT", true); }
int verify() { return count("ENCORE_VERIFY"); }
bool profiling() { return flag("ENCORE_PROFILING", false) || !get("ENCORE_PROFILE").empty(); }

int debug() {
  static const int level = [] {
    int n = count("ENCORE_DEBUG");
    return n > 2 ? 2 : n;
  }();
  return level;
}

const std::string& profile() {
  static const std::string path(get("ENCORE_PROFILE"));
  return path;
}

bool infer_access() { return flag("ENCORE_INFER_ACCESS", true); }

bool check_signatures() {
  static const bool on = flag("ENCORE_CHECK_SIGNATURES", false);
  return on;
}

LogSetting parse_log(std::string_view v, int debug) {
  LogSetting s;
  s.level = debug >= 2 ? 3 : debug == 1 ? 2 : 1;  // the default: warnings, more under ENCORE_DEBUG
  if (v.empty()) return s;
  static constexpr std::pair<std::string_view, int> names[] = {{"off", -1},    {"none", -1},  {"error", 0}, {"warn", 1},
                                                              {"warning", 1}, {"info", 2}, {"debug", 3}};
  for (const auto& [name, level] : names)
    if (v == name) {
      s.level = level;
      s.set = true;
      return s;
    }
  s.valid = false;
  return s;
}

const LogSetting& log_setting() {
  static const LogSetting s = [] {
    std::string_view v = get("ENCORE_LOG");
    LogSetting r = parse_log(v, debug());
    if (!r.valid)
      std::fprintf(stderr, "encore: warning: ENCORE_LOG=%.*s is not one of off, error, warn, info, debug; using %s\n", static_cast<int>(v.size()),
                   v.data(), r.level >= 3 ? "debug" : r.level == 2 ? "info" : "warn");
    return r;
  }();
  return s;
}

}  // namespace encore::detail::env
