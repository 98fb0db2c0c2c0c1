// map_accelerator.hpp: the map pattern as an actor that many actors use at
// once (the PDP 2019 "software accelerator").
//   auto acc = troupe::spawn_map_accelerator<int, double>(
//       sys, {.workers = 4, .placement = troupe::placement::own_thread("<2-5>")});
//   self.request(acc, 10s, std::function<double(const int&)>{f}, std::move(data))
//       .then([](std::vector<double>& out) { ... });
// By default the accelerator owns a team of worker threads of its own (an
// internal actor_system), optionally pinned to cores apart from the main
// scheduler's, so that the map's threads do not compete with the actors'
// workers; with placement::pool() it has no team and maps on the caller's
// system's workers. Each request is mapped and answered with the results in
// input order; requests run concurrently and never see each other's data.
// The input vector is moved in and read in place. An exception in the
// function is answered as an error (errc::runtime_error, with its message).
// Cost: two messages per request plus the map itself (see map.hpp); the team
// threads park when there is no request.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "troupe/actor/actor_system.hpp"
#include "troupe/pattern/map.hpp"
#include "troupe/pattern/task_group.hpp"
#include "troupe/runtime/placement.hpp"

namespace troupe {

struct map_accelerator_config {
  std::size_t workers = 0;  ///< threads of its team; 0: one per available core
  /// own_thread(cores): a team of threads of its own, pinned to `cores`
  /// ("" = not pinned); pool(): no team, the caller's system maps.
  troupe::placement placement = troupe::placement::own_thread();
  troupe::polling polling = troupe::polling::moderate;  ///< how the team's idle threads wait
  partition part = partition::dynamic();
};

/// Spawns a map accelerator for functions from T to U. Its requests are
/// (std::function<U(const T&)>, std::vector<T>); its responses std::vector<U>.
/// Throws config_error for a bad affinity string or worker count.
template <class T, class U>
actor spawn_map_accelerator(actor_system& sys, const map_accelerator_config& cfg = {}) {
  std::shared_ptr<actor_system> team;
  if (cfg.placement.own_thread_each()) {
    config team_cfg;
    team_cfg.workers = cfg.workers;
    team_cfg.polling = cfg.polling;
    team_cfg.worker_affinity = cfg.placement.cores();
    team = std::make_shared<actor_system>(std::move(team_cfg));
  }
  return sys.spawn([team, part = cfg.part, &sys](event_actor& self) {
    // The team lives as long as this behavior: when the accelerator ends, the
    // team finishes the maps in flight (their answers still go out) and stops.
    return behavior{[&self, team, part, &sys](std::function<U(const T&)>& f, std::vector<T>& data) {
      auto rp = self.make_response_promise();
      actor_system* t = team ? team.get() : &sys;
      post(*t, [t, rp, part, f = std::move(f), data = std::move(data)]() mutable {
        try {
          rp.deliver(map(*t, std::span<const T>{data}, f, part));
        } catch (const std::exception& e) {
          rp.deliver(error{errc::runtime_error, std::string{"map function failed: "} + e.what()});
        } catch (...) {
          rp.deliver(error{errc::runtime_error, "map function failed"});
        }
      });
      return rp;
    }};
  });
}

}  // namespace troupe
