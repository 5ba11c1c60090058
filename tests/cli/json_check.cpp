// ndm_json_check: the CLI tests' JSON checks, so they need no Python.
//   ndm_json_check seq FILE...        every file is JSON-SEQ (RFC 7464) qlog:
//                                     0x1E before each record, each record is
//                                     JSON ending in a newline, the first is a
//                                     qlog header, the rest are events.
// Prints one line per problem and exits 1; exits 0 with a summary when all is well.
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Returns the number of records; throws std::runtime_error naming the problem.
std::size_t check_seq(const std::string& path) {
    const std::string text = slurp(path);
    if (text.empty() || text.front() != '\x1e') throw std::runtime_error(path + ": does not start with 0x1E");
    std::size_t pos = 0, n = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\x1e', pos + 1);
        if (end == std::string::npos) end = text.size();
        const std::string rec = text.substr(pos + 1, end - pos - 1);
        if (rec.empty() || rec.back() != '\n')
            throw std::runtime_error(path + ": record " + std::to_string(n) + " does not end with a newline");
        json j = json::parse(rec, nullptr, false);
        if (j.is_discarded() || !j.is_object())
            throw std::runtime_error(path + ": record " + std::to_string(n) + " is not a JSON object");
        if (n == 0) {
            if (j.value("qlog_format", "") != "JSON-SEQ" || j.value("qlog_version", "") != "0.3" ||
                !j.contains("trace") || !j["trace"].contains("vantage_point") || !j["trace"].contains("common_fields"))
                throw std::runtime_error(path + ": the first record is not a qlog 0.3 JSON-SEQ header");
        } else if (!j.contains("time") || !j["time"].is_number() || !j.contains("name") || !j["name"].is_string() ||
                   !j.contains("data") || !j["data"].is_object()) {
            throw std::runtime_error(path + ": record " + std::to_string(n) + " is not an event (time, name, data)");
        }
        ++n;
        pos = end;
    }
    return n;
}

json get(const std::string& path, const std::string& dotted) {
    json j = json::parse(slurp(path));
    const json* cur = &j;
    std::stringstream parts(dotted);
    for (std::string key; std::getline(parts, key, '.');) {
        if (cur->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
            std::stoul(key) < cur->size()) {
            cur = &(*cur)[std::stoul(key)];
        } else if (cur->is_object() && cur->contains(key)) {
            cur = &(*cur)[key];
        } else {
            throw std::runtime_error(path + ": no " + dotted);
        }
    }
    return *cur;
}

struct KeySpec {
    std::string type;
    bool optional = false;
};
using Shape = std::map<std::string, KeySpec>;  // path ("a.b[].c") -> spec

Shape read_shape(const std::string& doc) {
    Shape shape;
    std::istringstream in(slurp(doc));
    const std::regex row(R"(^\|\s*`([^`]+)`\s*\|\s*(object|document|array|string|integer|number|boolean)(\??)\s*\|)");
    std::smatch m;
    for (std::string line; std::getline(in, line);)
        if (std::regex_search(line, m, row)) shape[m[1]] = {m[2], m[3] == "?"};
    if (shape.empty()) throw std::runtime_error(doc + ": no key table found");
    return shape;
}

bool type_ok(const json& v, const std::string& t) {
    // "document": an object whose contents another document describes (not walked).
    if (t == "object" || t == "document") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    return v.is_boolean();
}

std::string child(const std::string& parent, const std::string& key) { return parent.empty() ? key : parent + "." + key; }

void walk(const json& v, const std::string& path, const Shape& shape, std::vector<std::string>& errors) {
    if (v.is_object()) {
        for (const auto& [key, val] : v.items()) {
            const std::string p = child(path, key);
            auto it = shape.find(p);
            if (it == shape.end()) {
                errors.push_back("undocumented key " + p);
                continue;
            }
            if (!type_ok(val, it->second.type)) {
                errors.push_back(p + " is " + val.type_name() + ", documented as " + it->second.type);
                continue;
            }
            if (it->second.type != "document") walk(val, p, shape, errors);
        }
        // Required keys whose parent is this object.
        const std::string prefix = path.empty() ? "" : path + ".";
        for (const auto& [p, spec] : shape) {
            if (spec.optional || p.compare(0, prefix.size(), prefix) != 0) continue;
            const std::string rest = p.substr(prefix.size());
            if (rest.find('.') != std::string::npos || rest.find('[') != std::string::npos) continue;
            if (!v.contains(rest)) errors.push_back("missing key " + p);
        }
    } else if (v.is_array()) {
        const std::string p = path + "[]";
        auto it = shape.find(p);
        if (it == shape.end()) {
            if (!v.empty()) errors.push_back("undocumented array elements " + p);
            return;
        }
        for (const auto& e : v) {
            if (!type_ok(e, it->second.type)) errors.push_back(p + " element is " + e.type_name());
            else walk(e, p, shape, errors);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "shape" && argc == 4) {
        try {
            const Shape shape = read_shape(argv[2]);
            const json doc = json::parse(slurp(argv[3]));
            if (!doc.is_object()) throw std::runtime_error(std::string(argv[3]) + ": not a JSON object");
            std::vector<std::string> errors;
            walk(doc, "", shape, errors);
            for (const auto& e : errors) std::cerr << "ndm_json_check: " << argv[3] << ": " << e << '\n';
            if (!errors.empty()) return 1;
            std::cout << "ok: " << argv[3] << " matches " << shape.size() << " documented keys\n";
            return 0;
        } catch (const std::exception& e) {
            std::cerr << "ndm_json_check: " << e.what() << '\n';
            return 1;
        }
    }
    if (mode == "get" && argc == 4) {
        try {
            const json v = get(argv[2], argv[3]);
            std::cout << (v.is_string() ? v.get<std::string>() : v.dump()) << '\n';
            return 0;
        } catch (const std::exception& e) {
            std::cerr << "ndm_json_check: " << e.what() << '\n';
            return 1;
        }
    }
    if (argc < 3 || mode != "seq") {
        std::cerr << "usage: ndm_json_check seq FILE... | get FILE PATH | shape DOC.md FILE\n";
        return 2;
    }
    try {
        std::size_t records = 0;
        for (int i = 2; i < argc; ++i) records += check_seq(argv[i]);
        std::cout << "ok: " << argc - 2 << " file(s), " << records << " records\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "ndm_json_check: " << e.what() << '\n';
        return 1;
    }
}
