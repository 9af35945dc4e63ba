// Pieces shared by the commands of the tessel tool (cli.cpp, cli_warm.cpp, cli_db.cpp).
#pragma once
#include <cstdint>

namespace tessel::cli {

// Prints the message (if any) and the usage, returns the exit status for bad usage.
int usage(const char *msg);
// A dimension or count from 1 to INT32_MAX.
bool parse_dim(const char *text, int64_t *out);

int cmd_warm(int argc, char **argv);
int cmd_db(int argc, char **argv);

}  // namespace tessel::cli
