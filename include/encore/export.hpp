#pragma once
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
