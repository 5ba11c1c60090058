#include "cc/builtin.hpp"

#include <memory>
#include <string>

#include "cc/bbr.hpp"
#include "cc/bbr1.hpp"
#include "cc/cubic.hpp"
#include "cc/ndm/lkm_controller.hpp"
#include "cc/ndm/ndm_bbr.hpp"
#include "cc/ndm/ndm_controller.hpp"
#include "cc/reno.hpp"

namespace ndm::cc {

void register_builtin_controllers(const std::function<void(Registration)>& add) {
    add({std::string(Reno::kName), std::string(Reno::kDescription),
         [](const Params& p, const Options& o) { return std::make_unique<Reno>(p, o); }});
    add({std::string(Cubic::kName), std::string(Cubic::kDescription),
         [](const Params& p, const Options& o) { return std::make_unique<Cubic>(p, o); }});
    add({std::string(Bbr::kName), std::string(Bbr::kDescription),
         [](const Params& p, const Options& o) { return std::make_unique<Bbr>(p, o); }});
    add({std::string(Bbr1::kName), std::string(Bbr1::kDescription),
         [](const Params& p, const Options& o) { return std::make_unique<Bbr1>(p, o); }});
    add({std::string(lkm::LkmController::kName), std::string(lkm::LkmController::kDescription),
         [](const Params& p, const Options& o) { return std::make_unique<lkm::LkmController>(p, o); }});
    add({std::string(ndm::NdmController::kName), std::string(ndm::NdmController::kDescription),
         [](const Params& p, const Options& o) { return std::make_unique<ndm::NdmController>(p, o); }});
    add({std::string(ndm::NdmBbr::kName), std::string(ndm::NdmBbr::kDescription),
         [](const Params& p, const Options& o) { return std::make_unique<ndm::NdmBbr>(p, o); }});
}

}  // namespace ndm::cc
