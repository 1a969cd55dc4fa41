#pragma once
// Every public C++ header of encore includes this one (directly or through buffer.hpp), so the
// language check below is made once, here. From C, include <encore/encore.h> (C11) instead.
// After the #error, the include of a header that does not exist ends the compilation there (a
// missing header is fatal in GCC, Clang and MSVC), so the #error is all one sees, not a hundred
// errors from the C++20 code below it.
#if !defined(__cplusplus)
#error "encore: the encore/*.hpp headers are C++20; a C program includes <encore/encore.h>"
#include <encore/stop_here_encore_hpp_headers_are_cpp20>
#elif (defined(_MSVC_LANG) && _MSVC_LANG < 202002L) || (!defined(_MSVC_LANG) && __cplusplus < 202002L)
#error "encore: the encore/*.hpp headers need C++20: compile with -std=c++20 (CMake: link encore::encore, which requires cxx_std_20; pkg-config: add `pkg-config --variable=cxxflags encore`)"
#include <encore/stop_here_encore_needs_cpp20>
#endif

// ENCORE_API marks the symbols the library exports; everything else is hidden.
#if defined(ENCORE_STATIC)
#define ENCORE_API
#elif defined(_WIN32)
#ifdef ENCORE_BUILDING
#define ENCORE_API __declspec(dllexport)
#else
#define ENCORE_API __declspec(dllimport)
#endif
#else
#define ENCORE_API __attribute__((visibility("default")))
#endif
