// stream_caf.hpp: the CAF 0.17 pieces the streaming pipelines share
// (pipeline3, pipeline9): their atoms, the chunked source, and the sink's
// report of its tally to the main thread.
#pragma once

#include <cstdint>

#include "common/caf_support.hpp"
#include "common/stream_tuple.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bench::stream_tuple::tuple)

namespace bench::stream_caf {

using go_atom = caf::atom_constant<caf::atom("go")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

struct chunk_state {
  std::int64_t next = 0;
};

/// Sends the values 0 .. tuples-1 to `next` in chunks of 1000, re-triggering
/// itself between chunks (so other actors run; mailboxes stay unbounded).
inline caf::behavior chunked_source(caf::stateful_actor<chunk_state>* self, caf::actor next, std::int64_t tuples) {
  return {[=](go_atom) {
    auto& i = self->state.next;
    for (int k = 0; k < 1000 && i < tuples; ++k, ++i) self->send(next, stream_tuple::tuple{i % 1024, i, i});
    if (i < tuples) self->send(self, go_atom::value);
    else self->quit();
  }};
}

/// The sink's report to the main thread.
template <class Self>
void report(Self* self, const caf::actor& main, const stream_tuple::tally& t) {
  self->send(main, done_atom::value, t.count, t.sum, t.out_of_order);
}

/// The main thread's side: waits for the sink's report.
inline stream_tuple::tally await_report(caf::scoped_actor& self) {
  stream_tuple::tally t;
  self->receive([&](done_atom, std::int64_t c, std::int64_t s, std::int64_t b) {
    t.count = c;
    t.sum = s;
    t.out_of_order = b;
  });
  return t;
}

}  // namespace bench::stream_caf
