#include "common/provenance.hpp"

#include <string>

#include "ndm/version.hpp"

namespace ndm::tools {

nlohmann::json provenance_json(std::chrono::system_clock::time_point start) {
    nlohmann::json j = nlohmann::json::object();
    for_each_field(provenance(start), [&](const char* key, const std::string& value) { j[key] = value; });
    return j;
}

}  // namespace ndm::tools
