// spawn_pattern.hpp: a whole pattern, spawned and addressed like one actor.
//   auto p = troupe::spawn_pattern(sys, troupe::pipeline{troupe::farm{troupe::seq{f}, 4}, troupe::seq{g}});
//   self.request(p, 1s, item).then([](result r) { ... });   // the answer goes to the requester
//   sys.send(p, item);                                       // the result goes to the sender
//   auto q = troupe::spawn_pattern(sys, pattern, collector); // results of plain sends go to `collector`
// The handle is an ordinary actor (its entry): any actor can send to it or
// request from it. An exception in a stage is answered as an error
// (errc::unhandled_exception) and the pattern keeps running. The pattern's
// actors live as long as its handle (or a message in flight) does.
#pragma once

#include <vector>

#include "troupe/pattern/stage.hpp"

namespace troupe {

template <class P>
  requires(!detail::is_stream_pattern<P>::value)
actor spawn_pattern(actor_system& sys, P pattern, actor results_to = {}) {
  using in_type = typename P::in_type;
  using out_type = typename P::out_type;
  // The end of the pattern: answer the requester, or pass the result on.
  detail::router<out_type> sink{[&sys](detail::envelope<out_type>&& e) {
                                  if (!e.value) return;  // failed: already answered
                                  if (e.reply.pending()) e.reply.deliver(std::move(*e.value));
                                  else if (e.results_to)
                                    actor_cell::deliver(e.results_to,
                                                        detail::make_message(actor{}, 0, std::move(*e.value)));
                                  else sys.count_dead_letter();
                                },
                                [] { return std::size_t{0}; }};
  std::vector<actor> spawned;
  auto first = pattern.build(sys, std::move(sink), spawned);
  return sys.spawn([first, results_to](event_actor& self) {
    return behavior{[&self, first, results_to](in_type& item) {
      detail::envelope<in_type> e{std::move(item), {}, {}, {}, 1};
      if (results_to && !self.current_is_request()) e.results_to = results_to;
      else e.reply = self.make_response_promise();
      first.send(std::move(e));
    }};
  });
}

}  // namespace troupe
