#pragma once
// Where encore's messages go: warnings (a corrupt cache entry, verify skipped), capture summaries
// (ENCORE_DEBUG=1) and per-item lines (ENCORE_DEBUG=2). By default nothing is printed unless
// ENCORE_DEBUG >= 1, then everything goes to stderr. Engines with their own logging install a sink:
//   encore::set_log_sink([](encore::LogLevel l, std::string_view m) { engine_log(int(l), m); });
// The sink is called from whichever thread has something to say, one message at a time.
#include <cstdint>
#include <functional>
#include <string_view>

#include "encore/export.hpp"

namespace encore {

enum class LogLevel : uint8_t { error, warning, info, debug };

using LogSink = std::function<void(LogLevel, std::string_view)>;

// Installs `sink` for every later message (an empty function restores the default).
ENCORE_API void set_log_sink(LogSink sink);

}  // namespace encore
