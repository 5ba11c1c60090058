// ndm-send: the client of an iperf3-style throughput test over ndm (the server
// is ndm-recv). The test parameters travel in each connection's handshake
// application params. Forward (default): we send; the receiver's totals and
// its check of our payload (a hash of -F's file) come back on the test stream
// after our FIN. Reverse (-R): the server sends with the controller we name,
// and reports its totals and hash on a second stream once all data is
// acknowledged. Either way the closing lines show both sides and whether the
// data arrived byte-exact. -P N runs N connections at once (one test on the
// server) with [SUM] rows. --emu and --profile impair this socket's path
// (egress = up, ingress = down), like netem on the client's interface: one
// path, shared by the -P connections.
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndm/cc.hpp"
#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/qlog.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"
#include "tools/cli/connection_flags.hpp"
#include "tools/cli/interrupt.hpp"
#include "tools/cli/logging.hpp"
#include "tools/cli/output.hpp"
#include "tools/cli/provenance.hpp"
#include "tools/cli/tls_flags.hpp"
#include "tools/cli/units.hpp"
#include "tools/perf/iperf_output.hpp"
#include "tools/perf/datagram_client.hpp"
#include "tools/perf/payload_file.hpp"
#include "tools/perf/perf_session.hpp"
#include "tools/perf/send_client.hpp"
#include "tools/perf/send_options.hpp"

using namespace ndm;
using nlohmann::json;
using ndm::tools::send::Options;

namespace {


// iperf3 3.12's general flags, in its --help order.
void add_general_options(CLI::App& app, Options& o) {
    app.add_option("-p,--port", o.port, "server UDP port (1..65535)")
        ->capture_default_str()
        ->check(tools::port_number(false));
    app.add_option("--cport", o.cport, "local UDP port (0..65535; default 0: ephemeral); the -P connections share it, "
                                       "as they share one socket")
        ->check(tools::port_number(true));
    app.add_option("-i,--interval", o.interval, "seconds between interval reports")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0.1, 60, "seconds"));
    app.add_option("-F,--file", o.file,
                   "send this file's bytes instead of generated data (the test ends with the file unless -t/-n/-k "
                   "end it first; a regular file: a FIFO or device is refused, as lost bytes are read again at "
                   "their offset); with -R, write what is received to it (created or truncated; a FIFO is written "
                   "once a reader opens it, waited for up to --connect-timeout). One connection (-P 1) and one "
                   "direction only, as the file has one offset");
    app.add_option("-B,--bind", o.bind,
                   "numeric local address to send from (default: any, dual-stack; unlike iperf3's -B, not a host name)");
    app.add_flag("-V,--verbose", o.verbose,
                 "also print the test parameters, controller and TLS parameters at the start (with which library "
                 "protects the packets, OpenSSL or GnuTLS, and why: docs/packet-protection.md), both sides' CPU "
                 "use and controllers at the end (as iperf3's -V), and this socket's totals (datagrams sent in how many "
                 "send calls, received; service passes)");
    app.add_flag("-J,--json", o.json, "print one JSON document (iperf3's start/intervals/end shape) instead of text");
    tools::add_output_flags(app, o.output);
    tools::add_idle_timeout_option(app, o.conn);
    tools::add_version_flag(app, "ndm-send");
}

// iperf3 3.12's client flags, in its --help order, up to -O.
void add_client_options(CLI::App& app, Options& o) {
    app.add_option("-c,--client", o.host,
                   "server: a host name (looked up once; the first address is used, with -4/-6 the first of that "
                   "family: QUIC cannot fall back to the next as iperf3's TCP connect does; one that does not "
                   "resolve exits 1) or a numeric IPv4/IPv6 address")
        ->required();
    app.add_flag("-u,--udp", o.udp,
                 "datagram test, as iperf3 -u: unreliable QUIC DATAGRAM frames (RFC 9221) at -b's rate (default "
                 "1M, as iperf3 -u), each as long as -l's datagram size allows (1408 payload bytes at 1452), "
                 "under the congestion controller (unlike iperf3 -u's raw UDP, the sender cannot exceed what "
                 "the path carries: the rest waits); never resent. The receiver reports jitter, lost/total "
                 "(sequence gaps), out-of-order and duplicate datagrams. -t only, one connection, forward");
    app.add_option("--connect-timeout", o.connect_timeout_ms,
                   "milliseconds the handshake may take, Retries and lost Initials included, before the test "
                   "fails (100..600000; iperf3's default is the kernel's TCP connect timeout)")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(100, 600000, "milliseconds"));
    app.add_option("-b,--bitrate", o.bitrate,
                   "target bitrate per connection in bits/s, K/M/G/T decimal as iperf3's (e.g. 20M), optionally "
                   "/BURST: write BURST blocks of 128 KiB at a time, each once half of it is due (iperf3 writes one "
                   "whenever it is behind at all, a burst ahead of the rate); the application paces its writes, so "
                   "the flow is application-limited, and the connection coalesces them into full datagrams, "
                   "holding a write short of one at most the time RATE takes to write two datagrams, 25 ms at "
                   "most, as TCP's Nagle and autocorking do for iperf3 (default: unlimited, as iperf3's TCP)");
    auto* t = app.add_option("-t,--time", o.seconds, "seconds to send")
                  ->capture_default_str()
                  ->check(ndm::tools::number_in(0.1, 86400, "seconds"));
    auto* n = app.add_option("-n,--bytes", o.bytes, "bytes to send instead of a time (K/M/G/T suffixes, binary; at most 1024T)")
                  ->check(tools::size_in(1, tools::kMaxTestBytes));
    t->excludes(n);
    auto* k = app.add_option("-k,--blockcount", o.blocks,
                             "blocks to send instead of a time; an ndm block is 128 KiB (iperf3's TCP default "
                             "length; ndm's -l is the datagram size, not a block)")
                  ->check(ndm::tools::integer_in(1, tools::kMaxTestBytes / tools::kBlockSize, "blocks of 128 KiB"));
    k->excludes(t);
    k->excludes(n);
    app.add_option("-l,--length", o.packet_size, "max datagram size in bytes (1200..65507)")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(kMinDatagramSize, kMaxDatagramSize, "bytes"));
    app.add_option("-P,--parallel", o.parallel, "parallel connections (1..128), one test on the server")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(1, tools::kMaxParallel));
    auto* rev = app.add_flag("-R,--reverse", o.reverse, "reverse mode: the server sends (with -C's controller), we receive");
    app.add_flag("--bidir", o.bidir,
                 "both directions at once: each connection carries our stream and the server's (QUIC streams "
                 "are bidirectional, so --bidir needs no second connection, unlike iperf3's); both senders run "
                 "-C's controller; rows tagged [TX-C]/[RX-C]")
        ->excludes(rev);
    app.add_option("-w,--window", o.window,
                   "flow-control window (K/M/G binary, 16K..1G): the connection's and each stream's receive "
                   "window (initial_max_data, initial_max_stream_data), fixed (no auto-tuning, as a socket buffer "
                   "iperf3's -w sets), on both sides. The server applies it after the handshake with "
                   "MAX_DATA/MAX_STREAM_DATA: its first flight's credit is 16 KiB (default: 16 MiB a stream, 32 MiB "
                   "a connection, auto-tuned up to 4x)")
        ->check(tools::size_in(tools::kMinWindow, tools::kMaxWindow));
    app.add_flag("-4,--version4", o.ipv4, "IPv4 only: the server address must be IPv4")->excludes(
        app.add_flag("-6,--version6", o.ipv6, "IPv6 only: the server address must be IPv6"));
    auto* omit = app.add_option("-O,--omit", o.omit,
                                "omit the first N seconds from the totals (sent in addition to -t, rows marked "
                                "(omitted)), e.g. to leave out slow start; with -t only, not -n")
                     ->check(ndm::tools::number_in(0, tools::kMaxOmit, "seconds"));
    omit->excludes(n);
    omit->excludes(k);
}

// iperf3's last client flags (-C, --get-server-output), then ndm's own.
void add_ndm_options(CLI::App& app, Options& o, std::string& profile_name) {
    app.add_option("-C,--congestion", o.cc,
                   "congestion controller of the sending side: reno, cubic, bbr, bbr1, ndm, ndm-cubic, ndm-lkm or a registered "
                   "name, with options after colons, e.g. bbr:beta=0.8:headroom=0.1 (in -R the server runs it)")
        ->capture_default_str();
    app.add_flag("--get-server-output", o.server_output,
                 "print the server's output (its rows and closing lines; with -J its document, as "
                 "server_output_json) after ours");
    auto* e = app.add_option("--emu", o.emu,
                             "impair this socket's path with an emulator spec, e.g. \"delay=50ms,jitter=20ms,loss=5%\" "
                             "(egress = up, ingress = down; keys: docs/emulator.md, e.g. outage=3s@2s for a 3 s "
                             "blackhole 2 s in); the -P connections share this one path per direction, "
                             "as they would share a bottleneck (-P 2 with rate=20mbit: 20 Mbit/s together)");
    auto* p = app.add_option("--profile", profile_name, "impair with an emulator preset (ndm-compare --list-profiles)");
    e->excludes(p);
    app.add_option("--qlog", o.qlog, "write one qlog file (JSON-SEQ, for qvis) per connection into this directory");
    app.add_option("--seed", o.seed, "payload, connection ID and emulator seed")->capture_default_str();
    app.add_option("--io", o.io, "socket backend: auto, uring or epoll")->capture_default_str();
    tools::add_client_tls_flags(app, o.tls_flags);
    tools::add_session_flags(app, o.session, "");
    tools::add_no_gso_flag(app, o.no_gso);
    tools::add_no_ecn_flag(app, o.no_ecn);
    tools::add_test_connection_flags(app, o.conn, tools::TestSide::client);
}


// The test parameters the hello carries, from the flags and the controller
// they name. Throws std::invalid_argument naming a bad value.
tools::TestParams test_params(const Options& o, const cc::Entry& entry) {
    tools::TestParams params;
    params.omit = o.omit;
    params.cc = entry.name;
    params.cc_options = entry.options;
    params.packet_size = o.packet_size;
    params.interval = o.interval;
    params.seed = o.seed;
    params.reverse = o.reverse;
    params.bidir = o.bidir;
    // Our stream is the generated payload unless -F sends a file: the
    // receiver checks it against the generator, we hash nothing.
    params.check_payload = !o.reverse && o.file.empty() && !o.udp;
    params.datagram = o.udp;
    if (o.udp && o.bitrate.empty()) params.bitrate = 1'000'000;  // iperf3 -u's default
    if (!o.window.empty()) params.window = tools::parse_size(o.window);
    if (o.server_output)
        params.server_output = o.json ? tools::TestParams::ServerOutput::json : tools::TestParams::ServerOutput::text;
    if (!o.bitrate.empty()) {
        const tools::Bitrate b = tools::parse_bitrate(o.bitrate);
        params.bitrate = b.bits_per_second;
        params.burst = b.burst;
    }
    if (o.blocks) {
        params.bytes = o.blocks * tools::kBlockSize;  // within kMaxTestBytes: checked by -k's range
        params.seconds = 0;
    } else if (!o.bytes.empty()) {
        params.bytes = tools::parse_size(o.bytes);  // within 1..kMaxTestBytes: checked by size_in
        params.seconds = 0;
    } else {
        params.seconds = o.seconds;
    }
    params.streams = o.parallel;
    return params;
}

// -F's file, opened before any packet is sent: (-R) the one we write, else
// the one we send. Throws std::invalid_argument (bad input) naming the
// problem, std::runtime_error when a FIFO's reader did not come (a runtime
// failure).
void open_file(Options& o) {
    if (o.parallel > 1) throw std::invalid_argument("-F sends or writes one file: use it with -P 1");
    if (o.bidir) throw std::invalid_argument("-F sends or writes one file: not with --bidir");
    if (!o.reverse) {
        o.send_file = std::make_shared<tools::FileSource>(o.file);
        return;
    }
    // A FIFO is written once its reader opens it: waited for as long as a
    // handshake may take, and said.
    const Duration wait = std::chrono::milliseconds(o.connect_timeout_ms);
    o.recv_file = std::make_shared<tools::FileSink>(o.file, wait, [&] {
        std::cerr << fmt::format("ndm-send: -F {}: waiting up to {:g} s (--connect-timeout) for a reader to open the "
                                 "FIFO\n",
                                 o.file, to_seconds(wait))
                  << std::flush;
    });
}

// -u: a timed test of one connection in our direction; throws
// std::invalid_argument naming the flag that does not apply.
void check_datagram_flags(const Options& o) {
    const char* bad = o.parallel > 1 ? "-P"
                      : o.reverse    ? "-R"
                      : o.bidir      ? "--bidir"
                      : !o.bytes.empty() ? "-n"
                      : o.blocks     ? "-k"
                      : !o.file.empty() ? "-F"
                      : !o.window.empty() ? "-w"
                      : o.omit > 0   ? "-O"
                                     : nullptr;
    if (bad) throw std::invalid_argument(fmt::format("-u: {} does not apply to a datagram test (-t, -b, -l only)", bad));
    if (!o.bitrate.empty() && tools::parse_bitrate(o.bitrate).burst != 0)
        throw std::invalid_argument("-u: -b RATE/BURST: a datagram test is paced datagram by datagram, no bursts");
}

// Everything a test needs, checked before any packet is sent: the addresses,
// the controller, the path, the qlog directory, TLS, the parameters, -F's
// file. Empty when the test can start, else the exit code after one line on
// standard error: 2 for bad input, 1 when a FIFO's reader did not come.
std::optional<int> prepare(Options& o, const std::string& profile_name, tools::TestParams& params,
                           std::optional<emu::Profile>& profile) {
    try {
        (void)parse_io_backend(o.io);
        tools::apply_address_family(o.ipv4, o.ipv6, o.host, o.bind);
        check_host(o.host, "--client");
        if (!o.bind.empty()) check_numeric_address(o.bind, "--bind");
        tools::load_cc_plugins(o.conn);
        cc::Params cp;
        cp.max_datagram_size = o.packet_size;
        const cc::Entry entry = cc::parse_entry(o.cc);
        (void)cc::make(entry.name, cp, entry.options);
        if (!o.emu.empty()) profile = emu::parse_profile(o.emu);
        if (!profile_name.empty()) profile = emu::parse_profile(profile_name);
        if (!o.qlog.empty()) (void)qlog::file_observer(o.qlog);  // creates the directory or names the problem
        o.tls = tools::client_tls(o.tls_flags);
        if (o.udp) check_datagram_flags(o);
        if (!o.session.file.empty()) o.kept = tools::SessionFile::load(o.session.file);
        params = test_params(o, entry);
        if (!o.file.empty()) {
            try {
                open_file(o);
            } catch (const std::runtime_error& e) {  // no reader came: a runtime failure
                std::cerr << "ndm-send: " << e.what() << '\n';
                return 1;
            }
        }
        tools::validate(params);  // the bounds ndm-recv applies to what arrives in the hello
    } catch (const std::exception& ex) {
        std::cerr << "ndm-send: " << ex.what() << '\n';
        return 2;
    }
    return std::nullopt;
}

// Runs the test; a failure is one line on standard error (with -J also a
// document with an "error" key, as iperf3's: docs/ndm-send-json.md) and exit code 1.
int run(Options& o, const tools::TestParams& params, const std::optional<emu::Profile>& profile) {
    o.started = std::chrono::system_clock::now();
    tools::catch_interrupts();
    json intervals = json::array();
    try {
        if (params.datagram) return tools::send::run_datagram_client(o, params, profile, intervals);
        return tools::send::run_client(o, params, profile, intervals);
    } catch (const std::exception& ex) {  // connection failures, EndpointError
        if (o.json) {
            json doc = tools::failure_json(tools::provenance_json(o.started), intervals, ex.what());
            if (!o.output.title.empty()) doc["title"] = o.output.title;
            std::cout << doc.dump(2) << '\n';
        }
        std::cerr << "ndm-send: " << ex.what() << '\n';
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    Options o;
    std::string profile_name;
    CLI::App app{
        "ndm-send: the client of an iperf3-style throughput test over ndm (the server is ndm-recv).\n"
        "Prints per-interval Transfer/Bitrate/Retr/Cwnd rows and the closing sender and receiver lines; the\n"
        "other side's totals and its check of the data come back over the connection (byte-exactness: the\n"
        "receiver compares the generated payload with its generator, or a hash of -F's file or -R's data).\n"
        "Exit status: 0 when the test completed byte-exact; 1 when it failed or was interrupted (Ctrl-C or\n"
        "SIGTERM close the connections with a reason, so ndm-recv ends the test at once); 2 for bad input.",
        "ndm-send"};
    add_general_options(app, o);
    add_client_options(app, o);
    add_ndm_options(app, o, profile_name);
    if (const auto rc = ndm::tools::parse_command_line(app, argc, argv, "ndm-send")) return *rc;
    std::optional<tools::OutputRedirect> output;  // std::cout's lines go through it until the end of main
    try {
        output.emplace(o.json ? "" : o.output.title, o.output.logfile, o.output.force_flush);
    } catch (const std::exception& ex) {  // bad input: one line, exit code 2, before any packet is sent
        std::cerr << "ndm-send: " << ex.what() << '\n';
        return 2;
    }
    tools::TestParams params;
    std::optional<emu::Profile> profile;
    if (const auto rc = prepare(o, profile_name, params, profile)) return *rc;
    return run(o, params, profile);
}
