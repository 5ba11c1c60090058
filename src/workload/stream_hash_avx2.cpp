// XXH3's AVX2 code path for StreamHash (src/workload/workload.cpp), which
// calls it where the CPU has AVX2 (__builtin_cpu_supports). This file alone
// is compiled with -mavx2 (CMakeLists.txt), so that xxHash's header picks its
// AVX2 accumulator: 2.5x its SSE2 speed here (40 against 16 GB/s on 64 KiB
// chunks), the same digests (XXH3's output does not depend on the vector
// path). Nothing else may be defined here: XXH_INLINE_ALL makes xxHash's
// functions static, and no other code of this file could be picked by the
// linker for a CPU without AVX2.
#if defined(__x86_64__)

#include <cstddef>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ndm::workload::detail {

void xxh3_update_avx2(void* state, const void* data, std::size_t size) {
    XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

}  // namespace ndm::workload::detail

#endif
