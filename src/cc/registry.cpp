// The controller registry: name -> factory, guarded by a mutex.
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "cc/builtin.hpp"
#include "ndm/cc.hpp"

namespace ndm::cc {

namespace {

struct Registry {
    std::mutex mutex;
    std::map<std::string, Registration, std::less<>> entries;

    // Runs inside the thread-safe initialisation of the function-local static
    // below, so it needs no lock and must not call back into registry().
    Registry() {
        register_builtin_controllers([this](Registration reg) {
            auto name = reg.name;
            entries.insert_or_assign(std::move(name), std::move(reg));
        });
    }
};

Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

void register_controller(Registration reg) {
    if (reg.name.empty()) throw std::invalid_argument("register_controller: empty controller name");
    if (!reg.factory) {
        throw std::invalid_argument("register_controller: controller \"" + reg.name +
                                    "\" has no factory");
    }
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    auto name = reg.name;
    r.entries.insert_or_assign(std::move(name), std::move(reg));
}

std::unique_ptr<Controller> make(std::string_view name, const Params& params,
                                 std::string_view options) {
    Factory factory;
    {
        auto& r = registry();
        std::lock_guard lock(r.mutex);
        auto it = r.entries.find(name);
        if (it == r.entries.end()) {
            std::string known;
            for (const auto& [n, reg] : r.entries) {
                if (!known.empty()) known += ", ";
                known += n;
            }
            throw std::invalid_argument("unknown congestion controller \"" + std::string(name) +
                                        "\" (known: " + known + ")");
        }
        factory = it->second.factory;
    }
    // Outside the lock: a factory may be slow, throw, or use the registry itself.
    auto controller = factory(params, parse_options(options));
    if (!controller) {
        throw std::logic_error("congestion controller \"" + std::string(name) +
                               "\": factory returned no controller");
    }
    return controller;
}

std::vector<Info> list() {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    std::vector<Info> out;
    out.reserve(r.entries.size());
    for (const auto& [name, reg] : r.entries) out.push_back({name, reg.description});
    return out;
}

}  // namespace ndm::cc
