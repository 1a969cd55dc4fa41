#include "encore/log.hpp"

#include <cstdio>
#include <mutex>

#include "internal.hpp"

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

namespace detail {

void log(LogLevel level, std::string_view message) {
  std::lock_guard<std::mutex> lock(sink_mu());
  if (sink()) {
    sink()(level, message);
    return;
  }
  if (debug_level() >= 1) std::fprintf(stderr, "encore: %.*s\n", static_cast<int>(message.size()), message.data());
}

}  // namespace detail
}  // namespace encore
