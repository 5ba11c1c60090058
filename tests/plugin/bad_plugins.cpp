// Broken plugins for the loader's error paths, one per BAD_KIND:
//   1 built for another interface version, 2 registrations that throw,
//   3 registers nothing, 4 no entry point at all.
#include <stdexcept>
#include <vector>

#include "ndm/cc_plugin.hpp"

#if BAD_KIND == 1
extern "C" __attribute__((visibility("default"))) const ndm_cc_plugin* ndm_cc_plugin_entry() {
    static const ndm_cc_plugin p{NDM_CC_PLUGIN_ABI_VERSION + 41, NDM_CC_PLUGIN_SIZES, "future",
                                 [](std::vector<ndm::cc::Registration>*) {}};
    return &p;
}
#elif BAD_KIND == 2
extern "C" __attribute__((visibility("default"))) const ndm_cc_plugin* ndm_cc_plugin_entry() {
    static const ndm_cc_plugin p{NDM_CC_PLUGIN_ABI_VERSION, NDM_CC_PLUGIN_SIZES, "throws",
                                 [](std::vector<ndm::cc::Registration>*) {
                                     throw std::runtime_error("cannot find my model file");
                                 }};
    return &p;
}
#elif BAD_KIND == 3
extern "C" __attribute__((visibility("default"))) const ndm_cc_plugin* ndm_cc_plugin_entry() {
    static const ndm_cc_plugin p{NDM_CC_PLUGIN_ABI_VERSION, NDM_CC_PLUGIN_SIZES, "empty",
                                 [](std::vector<ndm::cc::Registration>*) {}};
    return &p;
}
#else
extern "C" __attribute__((visibility("default"))) int not_a_plugin() { return 4; }
#endif
