#include "tools/cli/session_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace ndm::tools {

namespace {

constexpr std::string_view kMagic = "ndm-resume v1\n";
constexpr std::size_t kMaxFile = 256 * 1024;

void put(std::vector<std::uint8_t>& out, const std::vector<std::uint8_t>& bytes) {
    const auto n = static_cast<std::uint32_t>(bytes.size());
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(n >> shift));
    out.insert(out.end(), bytes.begin(), bytes.end());
}

// One length-prefixed field at `at`; false when the bytes end first.
bool field(const std::vector<std::uint8_t>& in, std::size_t& at, std::vector<std::uint8_t>& out) {
    if (in.size() - at < 4) return false;
    std::size_t n = 0;
    for (int k = 0; k < 4; ++k) n = n << 8 | in[at + static_cast<std::size_t>(k)];
    at += 4;
    if (in.size() - at < n) return false;
    out.assign(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    return true;
}

}  // namespace

SessionFile SessionFile::load(const std::string& path) {
    SessionFile s;
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        if (errno == ENOENT) return s;
        throw std::invalid_argument(fmt::format("--session-file {}: {}", path, std::strerror(errno)));
    }
    std::vector<std::uint8_t> in;
    in.reserve(4096);
    for (std::istreambuf_iterator<char> it(f), end; it != end && in.size() <= kMaxFile; ++it)
        in.push_back(static_cast<std::uint8_t>(*it));
    const auto bad = [&](std::string_view why) {
        return std::invalid_argument(fmt::format("--session-file {}: {}", path, why));
    };
    if (in.size() > kMaxFile) throw bad("larger than any session ndm writes");
    if (in.size() < kMagic.size() || std::string_view(reinterpret_cast<const char*>(in.data()), kMagic.size()) != kMagic)
        throw bad("not an ndm session file (no \"ndm-resume v1\" header)");
    std::size_t at = kMagic.size();
    std::vector<std::uint8_t> ticket;
    if (!field(in, at, ticket) || !field(in, at, s.token) || at != in.size()) throw bad("cut short or with bytes after its end");
    if (!ticket.empty()) {
        try {
            s.ticket = tls::ResumptionTicket::parse(ticket);
        } catch (const tls::ResumptionError& e) {
            throw bad(e.what());
        }
    }
    return s;
}

void SessionFile::save(const std::string& path) const {
    std::vector<std::uint8_t> out(kMagic.begin(), kMagic.end());
    put(out, ticket ? ticket->serialize() : std::vector<std::uint8_t>{});
    put(out, token);
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const auto fail = [&](int err) {
        return std::runtime_error(fmt::format("--session-file {}: {}", path, std::strerror(err)));
    };
    if (fd < 0) throw fail(errno);
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            throw fail(err);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw fail(err);
    }
}

void SessionFile::apply(ConnectionConfig& c, bool early_data) const {
    if (ticket && ticket->server_name == c.tls.server_name &&
        std::find(c.tls.alpn.begin(), c.tls.alpn.end(), ticket->alpn) != c.tls.alpn.end()) {
        c.tls.resume = ticket;
        c.tls.early_data = early_data;
    }
    c.address_token = token;
}

bool SessionFile::take(const Event& ev) {
    if (const auto* t = std::get_if<event::SessionTicket>(&ev)) {
        ticket = t->ticket;
        return true;
    }
    if (const auto* t = std::get_if<event::NewToken>(&ev)) {
        token = t->token;
        return true;
    }
    return false;
}

void add_session_flags(CLI::App& app, SessionFlags& flags, const std::string& early_data_help) {
    app.add_option("--session-file", flags.file,
                   "resume with the session ticket this FILE holds and send its NEW_TOKEN token (no Retry), and "
                   "keep the server's newest ones there for the next run (made 0600 if missing; one file where "
                   "ngtcp2's gtlsclient uses --session-file, --tp-file and --token-file). A ticket for another "
                   "server name is not used. Keep it secret: it resumes the session")
        ->type_name("FILE");
    if (!early_data_help.empty()) app.add_flag("--no-early-data", flags.no_early_data, early_data_help);
}

}  // namespace ndm::tools
