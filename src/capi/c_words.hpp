#pragma once
// One message source, two vocabularies: the library's messages name the C++ API (buf.as(DType::f32),
// jit(..., v.bind(value)), JitOptions::capture.check_closure); a C caller reads them through
// encore_last_error() with the C API's names instead. Every message reaching C passes through
// in_c_words() (set_error), which rewrites each known C++ phrase with the C one, by one table.
#include <span>
#include <string>

namespace encore::capi {

// A C++ phrase and its C equivalent. "{t}" in both stands for a dtype: its name ("f32") in the C++
// phrase, its enumerator's suffix ("F32", as in ENCORE_F32) in the C one.
struct CPhrase {
  const char* cxx;
  const char* c;
};
// The table, most specific phrases first (tests/internal/test_c_words.cpp checks each C++ phrase still
// occurs in the library's sources, and that every rewrite leaves no C++ spelling).
std::span<const CPhrase> c_phrases();
// `msg` with every C++ phrase of the table replaced by its C phrase.
std::string in_c_words(std::string msg);

}  // namespace encore::capi
