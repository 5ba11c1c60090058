// The io backends opened directly (io/backend.hpp), for tests of what they
// do below the Endpoint. FOR_EACH_IO_BACKEND(SocketOptions) runs the rest of
// a test case once per backend, as a doctest SUBCASE each, with `be` open on
// 127.0.0.1 (the io_uring half skipped where the kernel lacks it).
#pragma once

#include <memory>
#include <string>

#include <doctest/doctest.h>

#include "io/backend.hpp"
#include "skip.hpp"

namespace ndm::test {

inline std::unique_ptr<io::Backend> open_backend(bool uring, io::SocketOptions opt) {
    opt.bind = io::Address::parse("127.0.0.1", 0);
    if (!uring) return io::make_epoll_backend(opt);
    try {
        return io::make_uring_backend(opt);
    } catch (const EndpointError& e) {
        skip_test(std::string("no io_uring here: ") + e.what());
        return nullptr;
    }
}

}  // namespace ndm::test

#define FOR_EACH_IO_BACKEND(options)                                             \
    bool uring_under_test = false;                                               \
    SUBCASE("uring") { uring_under_test = true; }                                \
    SUBCASE("epoll") { uring_under_test = false; }                               \
    auto be = ndm::test::open_backend(uring_under_test, options);                \
    if (!be) return
