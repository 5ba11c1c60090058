// File inputs (models, traces, profiles, datasets, TLS credentials) go through
// util::read_input_file: only a regular file within the kind's cap is read, and
// anything else is refused at once with what it is. model=/dev/zero used to
// read without end (450 MB/s of memory).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "ndm/emu.hpp"
#include "ndm/ndm_model.hpp"
#include "ndm/train.hpp"
#include "util/input_file.hpp"

namespace fs = std::filesystem;
using ndm::util::read_input_file;

namespace {

struct Scratch {
    fs::path dir = fs::temp_directory_path() / ("ndm_input_file_" + std::to_string(::getpid()));
    Scratch() {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    [[nodiscard]] std::string write(const std::string& name, const std::string& content) const {
        std::ofstream(dir / name, std::ios::binary) << content;
        return (dir / name).string();
    }
    // A sparse file of `size` bytes: costs no disk.
    [[nodiscard]] std::string sparse(const std::string& name, std::uint64_t size) const {
        const std::string p = write(name, "");
        fs::resize_file(p, size);
        return p;
    }
};

std::string error_of(const std::string& path, std::uint64_t cap) {
    try {
        (void)read_input_file(path, cap);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("input file: a regular file within the cap is read whole, to the byte") {
    const Scratch s;
    std::string content(200000, '\0');
    for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
    CHECK(read_input_file(s.write("a", content), content.size()) == content);
    CHECK(read_input_file(s.write("empty", ""), 10).empty());
}

TEST_CASE("input file: devices, directories, FIFOs and files over the cap are refused with what they are") {
    const Scratch s;
    CHECK(error_of("/dev/zero", 1 << 20) == "is not a regular file (a character device)");
    CHECK(error_of("/dev/urandom", 1 << 20) == "is not a regular file (a character device)");
    CHECK(error_of(s.dir.string(), 1 << 20) == "is a directory");
    const std::string fifo = (s.dir / "fifo").string();
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(error_of(fifo, 1 << 20) == "is not a regular file (a FIFO)");  // no writer: must not block
    CHECK(error_of(s.write("b", "12345"), 4) == "is 5 bytes, more than the 4 allowed");
    CHECK(error_of(s.sparse("huge", std::uint64_t{8} << 30), 1 << 20) ==
          "is 8589934592 bytes, more than the 1048576 allowed");
    CHECK(error_of((s.dir / "missing").string(), 10) == "No such file or directory");
}

TEST_CASE("input file: every loader refuses /dev/zero, a directory and a huge file at once, naming the file") {
    const Scratch s;
    const std::string huge = s.sparse("huge.ndmm", std::uint64_t{8} << 30);
    const auto started = std::chrono::steady_clock::now();
    for (const std::string& bad : {std::string("/dev/zero"), s.dir.string(), huge}) {
        CAPTURE(bad);
        const std::string model = "model file \"" + bad + "\": cannot open: ";
        const std::string trace = "cannot read trace '" + bad + "': ";
        const std::string dataset = "cannot read dataset \"" + bad + "\": ";
        CHECK_THROWS_WITH_AS(ndm::cc::ndm::load_model(bad), doctest::Contains(model.c_str()), std::invalid_argument);
        CHECK_THROWS_WITH_AS(ndm::emu::parse_profile("trace=" + bad), doctest::Contains(trace.c_str()),
                             std::invalid_argument);
        CHECK_THROWS_WITH_AS(ndm::train::load_dataset(bad), doctest::Contains(dataset.c_str()), std::invalid_argument);
    }
    const std::string dir_json = (s.dir / "d.json").string();
    fs::create_directories(dir_json);
    CHECK_THROWS_WITH_AS(ndm::emu::parse_profile(dir_json), doctest::Contains("is a directory"), std::invalid_argument);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}
