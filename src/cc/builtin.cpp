#include "cc/builtin.hpp"

#include <memory>
#include <string>

#include "cc/reno.hpp"

namespace ndm::cc {

void register_builtin_controllers(const std::function<void(Registration)>& add) {
    add({std::string(Reno::kName), std::string(Reno::kDescription),
         [](const Params& p, const Options& o) { return std::make_unique<Reno>(p, o); }});
}

}  // namespace ndm::cc
