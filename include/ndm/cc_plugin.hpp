// Controller plugins: a shared object that adds congestion controllers to the
// registry (ndm/cc.hpp) of a program that loads it, so a researcher's own
// controller runs in ndm-compare, ndm-sim and any program built on the
// library without touching ndm's source tree.
//
// A plugin is C++ built against these headers. Its one entry point has C
// linkage (an unmangled name dlsym finds) and returns a description:
//
//   #include "ndm/cc_plugin.hpp"
//   class Mine final : public ndm::cc::Controller { ... };
//   NDM_CC_PLUGIN("mine-plugin", {
//       {"mine", "my experiment", [](const ndm::cc::Params& p, const ndm::cc::Options& o) {
//            return std::make_unique<Mine>(p, o); }},
//   })
//
// built with `add_library(mine MODULE mine.cpp)` and loaded with
// `--cc-plugin ./libmine.so` (tools) or ndm::cc::load_plugin() (library).
//
// Compatibility: controller objects and the registrations cross the boundary
// as C++ objects, so the plugin must be built with the same compiler family
// and C++ standard library as the program, against the same ndm headers.
// load_plugin() checks what it can: the plugin's NDM_CC_PLUGIN_ABI_VERSION
// (bumped whenever the controller interface changes) and the sizes of the
// event structs it was compiled with; a mismatch is refused with a message
// rather than crashing later. A plugin stays loaded for the life of the
// process (its controllers' code must outlive every controller).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ndm/cc.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

// The controller interface version this header describes.
#define NDM_CC_PLUGIN_ABI_VERSION 1

extern "C" {
// What a plugin's entry point returns (a static object of the plugin's).
struct ndm_cc_plugin {
    std::uint32_t abi_version;  // NDM_CC_PLUGIN_ABI_VERSION the plugin was built with
    std::uint32_t sizes[4];     // sizeof Params, AckEvent, CongestionEvent, Registration there
    const char* name;           // the plugin's name, for messages
    // Appends the plugin's controllers to *out. May throw: the load fails
    // with the exception's message and registers nothing.
    void (*registrations)(std::vector<ndm::cc::Registration>* out);
};
}

// The entry point's name and type.
#define NDM_CC_PLUGIN_ENTRY ndm_cc_plugin_entry
using ndm_cc_plugin_entry_fn = const ndm_cc_plugin* (*)();

// The sizes load_plugin() compares, as this header compiles them.
#define NDM_CC_PLUGIN_SIZES                                                                                        \
    {                                                                                                              \
        static_cast<std::uint32_t>(sizeof(ndm::cc::Params)), static_cast<std::uint32_t>(sizeof(ndm::cc::AckEvent)), \
            static_cast<std::uint32_t>(sizeof(ndm::cc::CongestionEvent)),                                          \
            static_cast<std::uint32_t>(sizeof(ndm::cc::Registration))                                              \
    }

// Defines the entry point: NDM_CC_PLUGIN("name", { registration, ... }).
#define NDM_CC_PLUGIN(plugin_name, ...)                                                                   \
    extern "C" __attribute__((visibility("default"))) const ndm_cc_plugin* NDM_CC_PLUGIN_ENTRY() {       \
        static const ndm_cc_plugin plugin{NDM_CC_PLUGIN_ABI_VERSION, NDM_CC_PLUGIN_SIZES, plugin_name,    \
                                          [](std::vector<ndm::cc::Registration>* out) {                 \
                                              std::vector<ndm::cc::Registration> regs = __VA_ARGS__;    \
                                              for (auto& r : regs) out->push_back(std::move(r));        \
                                          }};                                                           \
        return &plugin;                                                                                   \
    }

namespace ndm::cc {

// Loads the plugin at `path` (dlopen; a name without '/' is searched as
// dlopen searches) and registers its controllers, replacing any of the same
// name. Returns their names. Throws std::invalid_argument with one line
// naming the file and the problem: it cannot be loaded, has no entry point
// (not an ndm controller plugin), was built for another interface version or
// with other event layouts, registers nothing, or its registrations threw.
// Loading the same file twice registers its controllers again.
std::vector<std::string> load_plugin(const std::string& path);

}  // namespace ndm::cc

#pragma GCC visibility pop
