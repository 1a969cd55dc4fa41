#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/device_impl.hpp"

namespace encore::detail {

struct CacheEntry {
  std::vector<KernelSignature> kernels;
  std::vector<unsigned char> binary;
};

// `includes`: the bytes of every file the source includes (Includes::contents), empty when none.
std::string cache_key_text(const std::string& prefix, const std::string& source, const std::string& options,
                           const std::string& includes = {});

// The files a program's source #includes, found as the OpenCL compiler finds them (PoCL, checked):
// `#include "x"` in the including file's directory first, then both forms in the working directory
// (the main source's directory), then in each -I directory of `options` (relative ones against the
// working directory), transitively. The directives are read by the kernel reader's lexer
// (include_directives, core/preprocessor.hpp): one in a comment or in a group no macro can make
// live (`#if 0`) does not count; one under a condition on a macro does (a superset keys the cache
// safely).
struct Includes {
  bool resolved = true;  // false: an include was not found or is computed by a macro (`why` says which)
  std::string why;
  std::string contents;            // every file's bytes in first-include order, each once: the cache key's part
  std::vector<std::string> texts;  // the same files' texts, for the kernel reader
  IncludeMap edges;                // which directive of which file names which text (the reader's preprocessor)
};
Includes read_includes(const std::string& source, const std::string& options);
std::string cache_path(const std::string& dir, const std::string& key_text);
// 64-bit FNV-1a of `text` as 16 hex digits (the cache's file names, saved binaries' keys; a
// checksum of many bytes is sum64, core/checksum.hpp).
std::string hash_hex(const void* data, size_t n);
// nullopt on a miss; a corrupt entry warns on stderr, is removed, and counts as a miss.
std::optional<CacheEntry> cache_load(const std::string& path, const std::string& key_text);
void cache_store(const std::string& path, const std::string& key_text, const CacheEntry& e) noexcept;

}  // namespace encore::detail
