// The shared loader process (`colo data serve`): opens the dataset, creates
// the ring (RingMemory), listens on an abstract Unix socket for consumers,
// decodes chunks on `threads` threads and answers consumers as RingBroker
// decides, until SIGTERM or SIGINT (or its parent colo dies). Then it writes
// its statistics, and the ring's name and its ownership record are removed.
//
// Protocol: one JSON object per SOCK_SEQPACKET message (docs/data-sharing.md).
// Only processes of the loader's own user may connect (SO_PEERCRED). The
// socket closing is how the loader learns that a consumer left or died.
// Decoding threads signal finished chunks to the control thread through an
// eventfd; consumers are answered on their sockets when their batch is
// published.
#pragma once

#include <iosfwd>

#include "common/result.h"
#include "data/loader_options.h"

namespace colo {

// Runs a loader until it is told to stop. `log` gets one line per consumer
// event and problems. Errors: the dataset, the ring or the socket could not
// be set up (nothing is left behind then).
Status run_loader(LoaderOptions options, std::ostream& log);

// The names a loader started with `options` uses (filled in when empty).
LoaderOptions with_default_names(LoaderOptions options, int pid);

}  // namespace colo
