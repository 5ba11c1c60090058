// doctest's main, plus the exit code for skipped cases (tests/support/skip.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "skip.hpp"

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    const int rc = context.run();
    if (context.shouldExit()) return rc;  // --help, --list-test-cases ...
    return ndm::test::exit_code_after_run(rc);
}
