#pragma once
// Where encore's messages go: warnings (a TinyJit that never replays or thrashes, a captured unit
// dropped by the LRU, a corrupt cache entry, verify skipped), informational notes, capture
// summaries (ENCORE_DEBUG=1) and per-item lines (ENCORE_DEBUG=2).
// By default warnings and errors are printed to stderr ("encore: warning: ..."), each cause once
// where it could repeat (once per TinyJit); ENCORE_LOG=off|error|warn|info|debug sets what is
// printed (ENCORE_DEBUG=1 raises the default to info, 2 to debug). Engines with their own logging
// install a sink, which then receives the messages instead of stderr, each with its level: every
// message when ENCORE_LOG is unset (the sink filters), only those ENCORE_LOG lets through when set.
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

// Says `message` through encore's log, as encore's own messages are (the sink, or stderr where the
// level is shown): for code built over encore, such as the workload harness.
//   encore::log_message(encore::LogLevel::info, "frame.json: binary p0 not used (checksum)");
ENCORE_API void log_message(LogLevel level, std::string_view message);

}  // namespace encore
