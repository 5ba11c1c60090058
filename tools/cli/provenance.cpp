#include "tools/cli/provenance.hpp"

#include <ctime>
#include <string>

#include "ndm/version.hpp"

namespace ndm::tools {

nlohmann::json provenance_json(std::chrono::system_clock::time_point start) {
    nlohmann::json j = nlohmann::json::object();
    for_each_field(provenance(start), [&](const char* key, const std::string& value) { j[key] = value; });
    return j;
}

nlohmann::json timestamp_json(std::chrono::system_clock::time_point start) {
    const std::time_t secs = std::chrono::system_clock::to_time_t(start);
    std::tm utc{};
    ::gmtime_r(&secs, &utc);
    char text[64];
    const std::size_t n = std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &utc);
    return {{"time", std::string(text, n)}, {"timesecs", static_cast<std::int64_t>(secs)}};
}

}  // namespace ndm::tools
