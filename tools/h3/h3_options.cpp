#include "tools/h3/h3_options.hpp"

#include <stdexcept>

#include "ndm/cc.hpp"
#include "ndm/h3.hpp"
#include "ndm/qlog.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/units.hpp"

namespace ndm::tools::h3 {

namespace {
constexpr std::uint64_t kMinSendBuffer = 64 * 1024, kMaxSendBuffer = std::uint64_t{1} << 30;
}

void add_common_options(CLI::App& app, CommonOptions& o) {
    app.add_option("-C,--congestion,--cc", o.cc,
                   "congestion controller of this side: reno, cubic, bbr, bbr1, ndm, ndm-cubic, ndm-lkm or a "
                   "registered name, with options after colons (bbr:beta=0.8)")
        ->capture_default_str();
    auto* e = app.add_option("--emu", o.emu,
                             "impair this socket's path with an emulator spec, e.g. \"delay=25ms,loss=1%\" (keys: "
                             "docs/emulator.md); a client's egress is the spec's up direction, a server's its down");
    auto* p = app.add_option("--profile", o.profile, "impair with an emulator preset (ndm-compare --list-profiles)");
    e->excludes(p);
    app.add_option("--qlog", o.qlog, "write one qlog file (JSON-SEQ, for qvis) per connection into this directory");
    app.add_option("--io", o.io, "socket backend: auto, uring or epoll")->capture_default_str();
    app.add_option("--seed", o.seed, "connection ID and emulator seed")->capture_default_str();
    app.add_option("--send-buffer", o.send_buffer,
                   "bytes each stream buffers for sending, unsent and unacknowledged (K/M/G binary, 64K..1G): what "
                   "one response in progress may hold in memory; more than the path's bandwidth-delay product")
        ->capture_default_str()
        ->check(size_in(kMinSendBuffer, kMaxSendBuffer));
    app.add_flag("-V,--verbose", o.verbose, "one line per request on standard error");
    add_no_gso_flag(app, o.no_gso);
    add_idle_timeout_option(app, o.conn);
    add_loss_detection_option(app, o.conn);
    add_receive_budget_option(app, o.conn);
    add_cc_plugin_option(app, o.conn);
}

std::optional<emu::Profile> check_common(const CommonOptions& o) {
    (void)parse_io_backend(o.io);
    load_cc_plugins(o.conn);
    const cc::Entry entry = cc::parse_entry(o.cc);
    (void)cc::make(entry.name, cc::Params{}, entry.options);
    if (!o.qlog.empty()) (void)qlog::file_observer(o.qlog);  // creates the directory or names the problem
    if (!o.emu.empty()) return emu::parse_profile(o.emu);
    if (!o.profile.empty()) return emu::parse_profile(o.profile);
    return std::nullopt;
}

EndpointConfig endpoint_config(const CommonOptions& o, const std::optional<emu::Profile>& profile, TlsOptions tls,
                               emu::Direction egress, std::optional<SharedEmuPath>& path) {
    EndpointConfig cfg;
    cfg.backend = parse_io_backend(o.io);
    cfg.gso = cfg.gro = !o.no_gso;
    const cc::Entry entry = cc::parse_entry(o.cc);
    cfg.connection.cc = entry.name;
    cfg.connection.cc_options = entry.options;
    cfg.connection.seed = o.seed * 2 + (egress == emu::Direction::up ? 1 : 0);
    tls.alpn = {ndm::h3::kAlpn};
    cfg.connection.tls = std::move(tls);
    // The peer's control and QPACK streams, and room for the unidirectional
    // stream types a peer may add (RFC 9114 §6.2.3: unknown ones are read and ignored).
    cfg.connection.initial_max_streams_uni = 16;
    cfg.connection.stream_send_buffer = parse_size(o.send_buffer);
    apply(o.conn, cfg);  // --idle-timeout, --loss-detection, --receive-budget
    cfg.qlog_dir = o.qlog;
    if (profile) path = share_emulated_path(cfg, *profile, o.seed, egress);
    return cfg;
}

}  // namespace ndm::tools::h3
