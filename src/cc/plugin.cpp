// Controller plugins (ndm/cc_plugin.hpp): dlopen, check, register.
#include "ndm/cc_plugin.hpp"

#include <dlfcn.h>

#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace ndm::cc {

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
    throw std::invalid_argument(fmt::format("controller plugin {}: {}", path, why));
}

void check_layout(const std::string& path, const ndm_cc_plugin& p) {
    if (p.abi_version != NDM_CC_PLUGIN_ABI_VERSION)
        refuse(path, fmt::format("built for controller interface version {}, this ndm has version {}: rebuild it "
                                 "against this ndm's headers",
                                 p.abi_version, NDM_CC_PLUGIN_ABI_VERSION));
    const std::uint32_t ours[4] = NDM_CC_PLUGIN_SIZES;
    static constexpr const char* kNames[4] = {"Params", "AckEvent", "CongestionEvent", "Registration"};
    for (int i = 0; i < 4; ++i)
        if (p.sizes[i] != ours[i])
            refuse(path, fmt::format("built with a {}-byte {} where this ndm's is {} bytes (other headers or "
                                     "another standard library): rebuild it against this ndm",
                                     p.sizes[i], kNames[i], ours[i]));
}

}  // namespace

std::vector<std::string> load_plugin(const std::string& path) {
    // RTLD_LOCAL: two plugins may define the same internal names. Never
    // closed: the controllers it makes run code in it until the process ends.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* e = dlerror();
        refuse(path, fmt::format("cannot load: {}", e ? e : "unknown error"));
    }
    dlerror();
    void* sym = dlsym(handle, "ndm_cc_plugin_entry");
    if (!sym) refuse(path, "no ndm_cc_plugin_entry symbol: not an ndm controller plugin (see ndm/cc_plugin.hpp)");
    const ndm_cc_plugin* p = reinterpret_cast<ndm_cc_plugin_entry_fn>(sym)();
    if (!p || !p->registrations) refuse(path, "its entry point returned no plugin description");
    check_layout(path, *p);
    std::vector<Registration> regs;
    try {
        p->registrations(&regs);
    } catch (const std::exception& e) {
        refuse(path, fmt::format("its registrations failed: {}", e.what()));
    } catch (...) {
        refuse(path, "its registrations failed with a non-standard exception");
    }
    if (regs.empty()) refuse(path, "it registers no controller");
    for (const Registration& r : regs)
        if (r.name.empty() || !r.factory) refuse(path, "it registers a controller without a name or a factory");
    std::vector<std::string> names;
    for (Registration& r : regs) {
        names.push_back(r.name);
        register_controller(std::move(r));
    }
    spdlog::debug("ndm: plugin {} ({}) registered {}", path, p->name ? p->name : "unnamed", fmt::join(names, ", "));
    return names;
}

}  // namespace ndm::cc
