// qlog output for ndm connections: a trace::ConnectionObserver that writes
// qlog 0.3 in its JSON-SEQ serialisation (RFC 7464: a 0x1E record separator
// before each JSON record, a newline after), with QUIC event names
// (transport:packet_sent, transport:packet_received, recovery:packet_lost,
// recovery:metrics_updated, recovery:congestion_state_updated), times in
// milliseconds relative to the trace's reference time. qvis
// (https://qvis.quictools.info) opens the files.
//
//   ndm::ConnectionConfig cfg;
//   cfg.observer = ndm::qlog::file_observer("qlogs");  // or EndpointConfig::qlog_dir
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "ndm/observer.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::qlog {

// Writes one connection's trace to `out` (which must outlive the writer):
// the qlog header record at construction, then one record per event.
std::unique_ptr<trace::ConnectionObserver> make_writer(std::ostream& out, const trace::ConnectionInfo& info);

// "<original DCID in hex>_<client|server>.sqlog", the name qlog tools expect.
std::string file_name(const trace::ConnectionInfo& info);

// An observer factory that writes each connection to dir/file_name(info).
// Creates dir (with parents) now and throws std::runtime_error naming it when
// that fails; a file that cannot be opened later is logged and leaves that
// connection untraced.
trace::ObserverFactory file_observer(const std::string& dir);

}  // namespace ndm::qlog

#pragma GCC visibility pop
