// workload::BulkWriter: how far the payload runs ahead of the transport.
#include <doctest/doctest.h>

#include "connection_pair.hpp"
#include "ndm/bulk_writer.hpp"

using namespace ndm;
using workload::BulkWriter;

TEST_CASE("BulkWriter writes no more than kLead beyond what was sent, however large the window") {
    test::ConnectionPair p;
    p.start();
    REQUIRE(p.handshake());
    const StreamId id = *p.client->open_stream();
    BulkWriter w(7);
    ConnectionStats st;
    st.cwnd = 64u << 20;  // 2 cwnd would be 128 MiB, the send buffer 16 MiB
    w.write(*p.client, id, st);
    CHECK(w.written() == BulkWriter::kLead);
    w.write(*p.client, id, st);  // nothing sent yet: nothing more
    CHECK(w.written() == BulkWriter::kLead);
    st.stream_bytes_sent = 300000;
    CHECK(w.allowance(st, BulkWriter::kUnlimited) == 300000);
    w.write(*p.client, id, st);
    CHECK(w.written() == BulkWriter::kLead + 300000);
    // The window still bounds what is outstanding beyond the acknowledged.
    st.cwnd = 100000;
    st.stream_bytes_sent = st.stream_bytes_acked = 0;
    CHECK(w.allowance(st, BulkWriter::kUnlimited) == 0);
    st.stream_bytes_sent = st.stream_bytes_acked = w.written();
    CHECK(w.allowance(st, BulkWriter::kUnlimited) == 4 * BulkWriter::kChunk);  // max(2 cwnd, 4 chunks)
    CHECK(w.allowance(st, w.written() + 1000) == 1000);                      // and `upto`
}
