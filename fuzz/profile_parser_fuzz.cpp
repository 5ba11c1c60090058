// libFuzzer target for the emulator's profile parser (src/emu/profile.cpp):
// the first byte picks the form, the rest is the text: a spec string
// ("urban-lte,loss=1%,up.delay=20ms") or a JSON profile file. Any text is
// either rejected with std::invalid_argument ("profile: ..." or a trace's
// own error) or yields a profile whose links can be built and carry traffic.
// Inputs naming a path ('/') are skipped so the target stays hermetic: a
// trace named in the spec is looked up in data/traces only.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "ndm/emu.hpp"

namespace {

// 20 datagrams through one direction's link over a virtual second: it
// delivers each at most a bounded number of times, and never before its send.
void exercise(const ndm::emu::Profile& p, ndm::emu::Direction d) {
    auto link = ndm::emu::make_link(p, d, 1);
    (void)ndm::emu::describe(p[d]);
    const std::vector<std::uint8_t> datagram(1200, 0x5a);
    ndm::Instant now{};
    for (int i = 0; i < 20; ++i) {
        link->send({datagram}, now);
        now += std::chrono::milliseconds(50);
    }
    ndm::Datagram out;
    std::size_t delivered = 0;
    for (int guard = 0; guard < 200; ++guard) {
        const ndm::Instant t = link->next_delivery();
        if (t == ndm::kNever) break;
        now = std::max(now, t);
        while (link->deliver(now, out)) {
            FUZZ_CHECK(out.bytes.size() == datagram.size());
            ++delivered;
        }
    }
    FUZZ_CHECK(delivered <= 40);  // each at most twice (duplicate)
}

std::string json_path() {
    return "/tmp/ndm-profile-fuzz-" + std::to_string(::getpid()) + ".json";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool json = data[0] & 1;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    if (text.find('/') != std::string_view::npos) return 0;
    ndm::emu::Profile p;
    try {
        if (json) {
            const std::string path = json_path();
            std::FILE* f = std::fopen(path.c_str(), "wb");
            FUZZ_CHECK(f != nullptr);
            std::fwrite(text.data(), 1, text.size(), f);
            std::fclose(f);
            p = ndm::emu::load_profile_json(path);
        } else {
            p = ndm::emu::parse_profile(text);
        }
    } catch (const std::invalid_argument& e) {
        FUZZ_CHECK(*e.what() != '\0');
        return 0;
    }
    exercise(p, ndm::emu::Direction::up);
    exercise(p, ndm::emu::Direction::down);
    return 0;
}
