// The connection fuzzer's seed corpus and regression inputs
// (fuzz/corpus/connection/, fuzz/regressions/connection/) replayed through
// its driver in the ordinary build: every invariant it checks (bytes in
// flight, flow control, monotone offsets, byte-exact reads, nothing after
// Closed; fuzz/connection_harness.hpp) must hold on each, so a change that
// breaks one fails here and not only under scripts/fuzz.sh.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../fuzz/connection_harness.hpp"

namespace {

std::vector<std::filesystem::path> inputs(const std::string& dir) {
    std::vector<std::filesystem::path> out;
    const std::filesystem::path root = std::filesystem::path(NDM_SOURCE_DIR) / dir;
    if (!std::filesystem::is_directory(root)) return out;
    for (const auto& e : std::filesystem::directory_iterator(root))
        if (e.is_regular_file()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("fuzz: the connection corpus replays with every invariant holding") {
    const auto files = inputs("fuzz/corpus/connection");
    REQUIRE(files.size() >= 20);
    for (const auto& f : files) {
        INFO(f.filename().string());
        const auto bytes = read_file(f);
        ndm::fuzz::run_connection_input(bytes.data(), bytes.size());
    }
}

// The driver reaches what it claims to: a handshake, then a transfer whose
// bytes the server reads checked against the pattern, also when the
// handshake's own datagrams are the input's to deliver.
TEST_CASE("fuzz: the connection driver completes a handshake and a checked transfer") {
    for (const char* name : {"transfer-0", "transfer-1", "handshake-2", "handshake-3"}) {
        INFO(name);
        const auto bytes = read_file(std::filesystem::path(NDM_SOURCE_DIR) / "fuzz/corpus/connection" / name);
        REQUIRE(!bytes.empty());
        const auto s = ndm::fuzz::run_connection_input(bytes.data(), bytes.size());
        CHECK(s.established);
        CHECK(s.bytes_read[1] == 5000);  // the client wrote 5000 bytes with FIN; the server read them all
    }
}

// And cancellation both ways: cancel-0 resets the client's stream (the
// server's application sees StreamReset), cancel-1 stops it from the server
// (the client's sees StreamStopped) and then reprioritizes and writes to it.
TEST_CASE("fuzz: the connection driver reaches stream cancellation both ways") {
    const auto run = [](const char* name) {
        const auto bytes = read_file(std::filesystem::path(NDM_SOURCE_DIR) / "fuzz/corpus/connection" / name);
        REQUIRE(!bytes.empty());
        return ndm::fuzz::run_connection_input(bytes.data(), bytes.size());
    };
    const auto reset = run("cancel-0");
    CHECK(reset.established);
    CHECK(reset.resets_seen[1] == 1);
    CHECK(reset.bytes_read[1] == 0);
    const auto stop = run("cancel-1");
    CHECK(stop.stops_seen[0] == 1);
    CHECK(stop.resets_seen[1] == 0);  // the server stopped it: no event for the reset it asked for
}
