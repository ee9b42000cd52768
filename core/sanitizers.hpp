#pragma once

// Whether this translation unit is compiled with AddressSanitizer. GCC defines __SANITIZE_ADDRESS__;
// clang 16 (the sanitize preset's and ci/fuzz's compiler) does not, and answers only
// __has_feature(address_sanitizer). Code that sizes itself for ASan (larger stack frames, slower runs,
// a runtime that refuses a preloaded library) asks SCHEDLAB_ASAN, which both compilers set.
#if defined(__SANITIZE_ADDRESS__)
#define SCHEDLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SCHEDLAB_ASAN 1
#endif
#endif
