// ndm-h3's URLs and the files its server answers with (tools/h3/get.hpp,
// serve.hpp): what a URL may be, the name a download gets, and a request path
// that never leaves the served directory.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndm/workload.hpp"
#include "tools/h3/get.hpp"
#include "tools/h3/serve.hpp"

using namespace ndm;
using namespace ndm::tools::h3;
namespace fs = std::filesystem;

namespace {

std::string body(const ::ndm::h3::Response& r) {
    std::string s(r.body.size, '\0');
    if (r.body.size) r.body.fill(0, {reinterpret_cast<std::uint8_t*>(s.data()), s.size()});
    return s;
}

// A served directory with a file, a subdirectory with an index, a link that
// leaves it, and a secret beside it.
struct Tree {
    fs::path base = fs::temp_directory_path() / ("ndm_h3_paths_" + std::to_string(::getpid()));
    std::string root;
    Tree() {
        fs::remove_all(base);
        fs::create_directories(base / "www" / "sub");
        std::ofstream(base / "www" / "a.txt") << "alpha";
        std::ofstream(base / "www" / "sub" / "index.html") << "index";
        std::ofstream(base / "secret") << "secret";
        fs::create_symlink(base / "secret", base / "www" / "out");
        root = fs::canonical(base / "www").string();
    }
    ~Tree() { fs::remove_all(base); }
};

::ndm::h3::Request get(std::string path, std::string method = "GET") {
    return {std::move(method), "https", "localhost", std::move(path), {}};
}

}  // namespace

TEST_CASE("ndm-h3 URLs: https only, host, port, path, and the download's file name") {
    const Url u = parse_url("https://127.0.0.1:4433/dir/file.bin?x=1");
    CHECK(u.host == "127.0.0.1");
    CHECK(u.port == 4433);
    CHECK(u.authority == "127.0.0.1:4433");
    CHECK(u.path == "/dir/file.bin?x=1");
    CHECK(file_name(u) == "file.bin");
    const Url v = parse_url("https://[::1]/");
    CHECK(v.host == "::1");
    CHECK(v.port == 443);
    CHECK(file_name(v) == "index.html");
    CHECK(parse_url("https://example.org").path == "/");
    for (const char* bad : {"http://127.0.0.1/", "https:///x", "https://127.0.0.1:0/", "https://127.0.0.1:65536/",
                            "https://127.0.0.1:/", "https://[::1/", "https://u@127.0.0.1/", "https://a b/",
                            "https://127.0.0.1/a b"})
        CHECK_THROWS_AS(parse_url(bad), std::invalid_argument);
    CHECK_THROWS_AS(file_name(parse_url("https://127.0.0.1/a/..")), std::invalid_argument);
}

TEST_CASE("ndm-h3 serve: files, a directory's index, /N generated, and nothing outside the directory") {
    Tree t;
    CHECK(body(respond(t.root, get("/a.txt"))) == "alpha");
    CHECK(respond(t.root, get("/a.txt")).status == 200);
    CHECK(body(respond(t.root, get("/sub/"))) == "index");
    CHECK(body(respond(t.root, get("/sub"))) == "index");
    const auto head = respond(t.root, get("/a.txt", "HEAD"));
    CHECK(head.status == 200);
    CHECK(head.body.size == 5);  // content-length; the session sends no body for HEAD
    for (const char* outside : {"/../secret", "/sub/../../secret", "/out", "/nothing", "relative", "/sub/missing"}) {
        INFO(outside);
        CHECK(respond(t.root, get(outside)).status == 404);
    }
    CHECK(respond(t.root, get("/a.txt", "POST")).status == 405);
    const auto n = respond(t.root, get("/1000"));
    REQUIRE(n.body.size == 1000);
    std::vector<std::uint8_t> bytes(1000);
    n.body.fill(0, bytes);
    CHECK(workload::Payload(0).mismatch(0, bytes) == bytes.size());
    CHECK(respond(t.root, get("/" + std::to_string(kMaxGenerated + 1))).status == 404);
    CHECK(respond(t.root, get("/12x")).status == 404);
}
