#pragma once
#include <optional>
#include <string>
#include <vector>

#include "internal.hpp"

namespace encore::detail {

struct CacheEntry {
  std::vector<KernelSignature> kernels;
  std::vector<unsigned char> binary;
};

std::string cache_dir();  // empty: cache off (ENCORE_CACHE=0)
std::string cache_key_text(const std::string& prefix, const std::string& source, const std::string& options);
std::string cache_path(const std::string& dir, const std::string& key_text);
// nullopt on a miss; a corrupt entry warns on stderr, is removed, and counts as a miss.
std::optional<CacheEntry> cache_load(const std::string& path, const std::string& key_text);
void cache_store(const std::string& path, const std::string& key_text, const CacheEntry& e) noexcept;

}  // namespace encore::detail
