#include "encore/log.hpp"

#include <cstdio>
#include <mutex>

#include "core/env.hpp"
#include "trace/trace.hpp"

namespace encore {

namespace {
std::mutex& sink_mu() {
  static std::mutex mu;
  return mu;
}
LogSink& sink() {
  static LogSink s;
  return s;
}
}  // namespace

void set_log_sink(LogSink s) {
  std::lock_guard<std::mutex> lock(sink_mu());
  sink() = std::move(s);
}

void log_message(LogLevel level, std::string_view message) { detail::log(level, message); }

namespace detail {

void log(LogLevel level, std::string_view message) {
  const env::LogSetting& setting = env::log_setting();
  const bool shown = static_cast<int>(level) <= setting.level;
  std::lock_guard<std::mutex> lock(sink_mu());
  if (sink()) {
    if (shown || !setting.set) sink()(level, message);  // unless ENCORE_LOG says otherwise, a sink sees everything
    return;
  }
  if (!shown) return;
  const char* prefix = level == LogLevel::error ? "error: " : level == LogLevel::warning ? "warning: " : "";
  std::fprintf(stderr, "encore: %s%.*s\n", prefix, static_cast<int>(message.size()), message.data());
}

}  // namespace detail
}  // namespace encore
