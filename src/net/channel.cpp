// Remote channels: the cluster's directory, the inlet's senders and credit,
// the outlet's destinations and credit (see include/troupe/net/channel.hpp).
#include "troupe/net/channel.hpp"

#include <algorithm>
#include <map>

namespace troupe::net {

namespace detail {

void register_channel_messages() {
  static const bool once = [] {
    add_type<chan_open_atom>("troupe.chan_open");
    add_type<chan_data_atom>("troupe.chan_data");
    add_type<chan_end_atom>("troupe.chan_end");
    add_type<chan_credit_atom>("troupe.chan_credit");
    add_message<chan_open_atom, std::uint64_t, std::uint32_t, actor>();
    add_message<chan_end_atom, std::uint64_t, std::uint64_t>();
    add_message<chan_credit_atom, std::uint32_t, std::uint64_t, std::uint64_t>();
    return true;
  }();
  (void)once;
}

namespace {
std::string sender_name(std::uint64_t id) {
  return "sender " + std::to_string(id & 0xffffffffU) + " of rank " + std::to_string(id >> 32);
}
std::string reason_of(const error& e) { return e ? e.to_string() : std::string{"ended normally"}; }
}  // namespace

// ----------------------------------------------------------------- inlet

inlet_core::inlet_core(actor_system& sys, std::string name, std::size_t senders, channel_config cfg,
                       std::chrono::milliseconds open_timeout)
    : sys_{sys},
      name_{std::move(name)},
      expected_{senders},
      cfg_{cfg},
      open_deadline_{std::chrono::steady_clock::now() + open_timeout} {
  register_channel_messages();
}

inlet_core::~inlet_core() {
  if (actor_) sys_.send(actor_, chan_close_atom{});
}

inlet_core::sender_rec* inlet_core::find_sender(std::uint64_t id) {
  for (auto& [k, rec] : senders_)
    if (k == id) return &rec;
  return nullptr;
}

void inlet_core::on_open(event_actor& self, std::uint64_t id, std::uint32_t dest, const actor& credit_to) {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    if (find_sender(id) != nullptr || opened_ == expected_) {
      fail("inlet '" + name_ + "': unexpected " + sender_name(id) +
           " (a sender opened twice, or more senders than the " + std::to_string(expected_) + " expected)");
    } else {
      sender_rec rec;
      rec.credit_to = credit_to;
      rec.dest = dest;
      rec.granted = cfg_.window;
      senders_.emplace_back(id, std::move(rec));
      ++opened_;
    }
  }
  cv_.notify_all();
  self.monitor(credit_to);
  self.send(credit_to, chan_credit_atom{}, dest, static_cast<std::uint64_t>(cfg_.window), std::uint64_t{0});
}

bool inlet_core::on_data(std::uint64_t id, std::size_t n) {
  auto* rec = find_sender(id);
  if (rec == nullptr || rec->ended) {
    fail("inlet '" + name_ + "': a batch from " + sender_name(id) +
         (rec ? ", which had ended" : ", which never opened"));
    return false;
  }
  if (rec->received + n > rec->granted) {
    fail("inlet '" + name_ + "': " + sender_name(id) + " sent beyond its credit");
    return false;
  }
  rec->received += n;
  queued_ += n;
  peak_ = std::max(peak_, queued_);
  return true;
}

void inlet_core::on_end(std::uint64_t id, std::uint64_t total) {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    auto* rec = find_sender(id);
    if (rec == nullptr || rec->ended) {
      fail("inlet '" + name_ + "': an end marker from " + sender_name(id) +
           (rec ? ", which had ended" : ", which never opened"));
    } else if (rec->received != total) {
      fail("inlet '" + name_ + "': " + sender_name(id) + " sent " + std::to_string(total) + " elements, " +
           std::to_string(rec->received) + " arrived");
    } else {
      rec->ended = true;
      ++ended_;
    }
  }
  cv_.notify_all();
}

void inlet_core::on_down(const down_msg& d) {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    for (auto& [id, rec] : senders_) {
      if (rec.credit_to != d.source) continue;
      // A sender's credit actor ends normally only once it has every
      // acknowledgement, after its end marker; the marker may still be on
      // its way (a down message can overtake it): it is expected then.
      if (rec.ended || !d.reason) rec.gone = true;
      else
        fail("inlet '" + name_ + "': lost " + sender_name(id) + " after " + std::to_string(rec.received) +
             " elements: " + reason_of(d.reason));
    }
  }
  cv_.notify_all();
}

void inlet_core::on_exit(const exit_msg& e) {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    fail("inlet '" + name_ + "': ended by a peer: " + reason_of(e.reason));
  }
  cv_.notify_all();
}

void inlet_core::fail(const std::string& why) {
  if (failure_.empty()) failure_ = why;
}

bool inlet_core::wait_ready(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until) {
  for (;;) {
    if (!failure_.empty()) throw channel_error(failure_);
    if (has_batch() || all_ended()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (opened_ < expected_ && now >= open_deadline_) {
      fail("inlet '" + name_ + "': " + std::to_string(opened_) + " of " + std::to_string(expected_) +
           " senders connected within the connect timeout");
      continue;
    }
    if (now >= until) return false;
    cv_.wait_until(lock, opened_ < expected_ ? std::min(until, open_deadline_) : until);
  }
}

void inlet_core::consumed(std::uint64_t sender, std::size_t n) {
  actor to;
  std::uint32_t dest = 0;
  std::uint64_t acked = 0;
  {
    std::lock_guard<std::mutex> lock{mtx_};
    queued_ -= std::min(queued_, n);
    auto* rec = find_sender(sender);
    if (rec == nullptr) return;
    rec->granted += n;
    to = rec->credit_to;
    dest = rec->dest;
    acked = rec->granted - cfg_.window;
  }
  sys_.send(to, chan_credit_atom{}, dest, static_cast<std::uint64_t>(n), acked);
}

void inlet_core::close(std::chrono::milliseconds linger) {
  {
    // A sender's last grant could still be on its way; its process must not
    // see this one's end first (it would call its data lost).
    std::unique_lock<std::mutex> lock{mtx_};
    const auto until = std::chrono::steady_clock::now() + linger;
    cv_.wait_until(lock, until, [&] {
      if (!failure_.empty()) return true;
      for (auto& [id, rec] : senders_)
        if (!rec.gone) return false;
      return true;
    });
  }
  if (actor_) sys_.send(actor_, chan_close_atom{});
}

void inlet_core::abort(const error& why) {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    fail("inlet '" + name_ + "': aborted: " + why.to_string());
  }
  cv_.notify_all();
  if (actor_) sys_.send_exit(actor_, why ? why : error{errc::runtime_error, "channel aborted"});
}

std::size_t inlet_core::peak_queued() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return peak_;
}

void inlet_core::install_hooks(event_actor& self, const std::weak_ptr<inlet_core>& weak) {
  self.set_down_handler([weak](down_msg& d) {
    if (auto s = weak.lock()) s->on_down(d);
  });
  self.set_exit_handler([weak, &self](exit_msg& e) {
    if (auto s = weak.lock()) s->on_exit(e);
    self.quit(e.reason);
  });
}

// ---------------------------------------------------------------- outlet

struct outlet_core::shared {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<std::int64_t> credit;
  std::vector<std::uint64_t> acked;
  std::vector<bool> granted, closed;
  std::vector<actor> inlets;
  std::vector<std::string> where;
  std::string failure;
};

outlet_core::outlet_core(cluster& cl, std::string name, channel_config cfg)
    : cl_{cl}, name_{std::move(name)}, cfg_{cfg}, sh_{std::make_shared<shared>()} {
  register_channel_messages();
}

outlet_core::~outlet_core() {
  if (!credit_actor_ || finished_) return;
  // Gone without its end of stream (a cancelled graph): the receivers fail.
  cl_.system().send_exit(
      credit_actor_, error{errc::runtime_error, "channel '" + name_ + "': a sender ended before its end of stream"});
}

void outlet_core::open(std::uint64_t id, const std::vector<std::size_t>& ranks, const std::vector<std::string>& names) {
  id_ = id;
  dests_.resize(ranks.size());
  {
    std::lock_guard<std::mutex> lock{sh_->mtx};
    sh_->credit.assign(ranks.size(), 0);
    sh_->acked.assign(ranks.size(), 0);
    sh_->granted.assign(ranks.size(), false);
    sh_->closed.assign(ranks.size(), false);
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    dests_[i].inlet = cl_.find(ranks[i], names[i]);
    dests_[i].where = "inlet '" + names[i] + "' at " + cl_.describe(ranks[i]);
  }
  sh_->inlets.clear();
  sh_->where.clear();
  for (auto& d : dests_) {
    sh_->inlets.push_back(d.inlet);
    sh_->where.push_back(d.where);
  }
  auto sh = sh_;
  credit_actor_ = cl_.system().spawn([sh](event_actor& self) {
    for (auto& in : sh->inlets) self.monitor(in);
    self.set_down_handler([sh](down_msg& d) {
      {
        std::lock_guard<std::mutex> lock{sh->mtx};
        for (std::size_t i = 0; i < sh->inlets.size(); ++i) {
          if (sh->inlets[i] != d.source) continue;
          sh->closed[i] = true;
          if (d.reason && sh->failure.empty())
            sh->failure = "lost " + sh->where[i] + " after " + std::to_string(sh->acked[i]) +
                          " acknowledged elements: " + d.reason.to_string();
        }
      }
      sh->cv.notify_all();
    });
    return behavior{
        [sh](chan_credit_atom, std::uint32_t dest, std::uint64_t n, std::uint64_t acked) {
          {
            std::lock_guard<std::mutex> lock{sh->mtx};
            if (dest >= sh->credit.size()) return;
            sh->credit[dest] += static_cast<std::int64_t>(n);
            sh->acked[dest] = std::max(sh->acked[dest], acked);
            sh->granted[dest] = true;
          }
          sh->cv.notify_all();
        },
        [&self](chan_close_atom) { self.quit(); },
    };
  });
  for (std::size_t i = 0; i < dests_.size(); ++i)
    cl_.system().send(dests_[i].inlet, chan_open_atom{}, id_, static_cast<std::uint32_t>(i), credit_actor_);
}

std::size_t outlet_core::unacknowledged(std::size_t i) const {
  std::lock_guard<std::mutex> lock{sh_->mtx};
  return static_cast<std::size_t>(dests_[i].sent - sh_->acked[i]);
}

std::uint64_t outlet_core::acknowledged() const {
  std::lock_guard<std::mutex> lock{sh_->mtx};
  std::uint64_t n = 0;
  for (auto a : sh_->acked) n += a;
  return n;
}

void outlet_core::check() const {
  std::lock_guard<std::mutex> lock{sh_->mtx};
  if (!sh_->failure.empty()) throw channel_error("channel '" + name_ + "': " + sh_->failure);
}

void outlet_core::take_credit(std::size_t i, std::size_t n) {
  std::unique_lock<std::mutex> lock{sh_->mtx};
  for (;;) {
    if (!sh_->failure.empty()) throw channel_error("channel '" + name_ + "': " + sh_->failure);
    if (sh_->closed[i])
      throw channel_error("channel '" + name_ + "': " + dests_[i].where + " ended before the stream did");
    if (sh_->credit[i] >= static_cast<std::int64_t>(n)) {
      sh_->credit[i] -= static_cast<std::int64_t>(n);
      return;
    }
    check_cancelled();
    sh_->cv.wait_for(lock, std::chrono::milliseconds{50});
  }
}

void outlet_core::finish_all() {
  for (std::size_t i = 0; i < dests_.size(); ++i)
    cl_.system().send(dests_[i].inlet, chan_end_atom{}, id_, dests_[i].sent);
  std::unique_lock<std::mutex> lock{sh_->mtx};
  // A receiver ends once every sender has ended; its last grant may reach us
  // just after its end: give it a moment before calling the data lost.
  std::optional<std::chrono::steady_clock::time_point> grace;
  for (;;) {
    if (!sh_->failure.empty()) throw channel_error("channel '" + name_ + "': " + sh_->failure);
    bool all = true, closed_short = false;
    for (std::size_t i = 0; i < dests_.size(); ++i) {
      if (sh_->acked[i] < dests_[i].sent) {
        all = false;
        closed_short = closed_short || sh_->closed[i];
      }
    }
    if (all) break;
    if (closed_short) {
      const auto now = std::chrono::steady_clock::now();
      if (!grace) grace = now + std::chrono::seconds{1};
      if (now >= *grace) {
        std::string lost;
        for (std::size_t i = 0; i < dests_.size(); ++i)
          if (sh_->acked[i] < dests_[i].sent)
            lost += (lost.empty() ? "" : "; ") + dests_[i].where + " acknowledged " + std::to_string(sh_->acked[i]) +
                    " of " + std::to_string(dests_[i].sent);
        throw channel_error("channel '" + name_ + "': receivers ended early: " + lost);
      }
      sh_->cv.wait_until(lock, std::min(*grace, std::chrono::steady_clock::now() + std::chrono::milliseconds{50}));
    } else {
      sh_->cv.wait_for(lock, std::chrono::milliseconds{50});
    }
    check_cancelled();
  }
  lock.unlock();
  finished_ = true;
  cl_.system().send(credit_actor_, chan_close_atom{});
}

void outlet_core::check_cancelled() const {
  if (cancelled_ != nullptr && cancelled_->load(std::memory_order_relaxed))
    throw channel_error("channel '" + name_ + "': cancelled");
}

void outlet_core::abort(const error& why) {
  const error e = why ? why : error{errc::runtime_error, "channel '" + name_ + "' aborted"};
  {
    std::lock_guard<std::mutex> lock{sh_->mtx};
    if (sh_->failure.empty()) sh_->failure = "aborted: " + e.to_string();
  }
  sh_->cv.notify_all();
  for (auto& d : dests_)
    if (d.inlet) cl_.system().send_exit(d.inlet, e);
  if (credit_actor_) cl_.system().send_exit(credit_actor_, e);
}

}  // namespace detail

// --------------------------------------------------------------- cluster

struct cluster::directory {
  std::mutex mtx;
  std::condition_variable cv;
  std::map<std::string, actor> inlets;
};

cluster::cluster(actor_system& sys, node& n, cluster_config cfg)
    : sys_{&sys}, node_{&n}, cfg_{std::move(cfg)}, dir_{std::make_unique<directory>()} {
  if (cfg_.peers.empty()) throw net_error("troupe::net::cluster: no peers (one address per rank)");
  if (cfg_.rank >= cfg_.peers.size())
    throw net_error("troupe::net::cluster: rank " + std::to_string(cfg_.rank) + " is not below the " +
                    std::to_string(cfg_.peers.size()) + " peers");
  if (cfg_.peers.size() > 1) cfg_.peers[cfg_.rank].endpoint = n.listen(cfg_.peers[cfg_.rank].endpoint);
}

cluster::~cluster() = default;

std::string cluster::describe(std::size_t r) const {
  std::string s = "rank " + std::to_string(r);
  if (r < cfg_.peers.size()) s += " (" + cfg_.peers[r].endpoint + ")";
  return s;
}

void cluster::set_peer(std::size_t r, remote_address where) {
  if (r >= cfg_.peers.size() || r == cfg_.rank)
    throw net_error("troupe::net::cluster::set_peer: rank " + std::to_string(r) + " is not a peer");
  std::lock_guard<std::mutex> lock{dir_->mtx};
  cfg_.peers[r] = std::move(where);
}

void cluster::publish(const actor& inlet, const std::string& name) {
  {
    std::lock_guard<std::mutex> lock{dir_->mtx};
    dir_->inlets[name] = inlet;
  }
  dir_->cv.notify_all();
  if (cfg_.peers.size() > 1) node_->publish(inlet, name);
}

actor cluster::find(std::size_t r, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + cfg_.connect_timeout;
  if (r == cfg_.rank) {
    std::unique_lock<std::mutex> lock{dir_->mtx};
    for (;;) {
      if (auto it = dir_->inlets.find(name); it != dir_->inlets.end()) return it->second;
      if (dir_->cv.wait_until(lock, deadline) == std::cv_status::timeout)
        throw net_error("troupe::net: no inlet '" + name + "' in this process (" + describe(r) + ") within " +
                        std::to_string(cfg_.connect_timeout.count()) + " ms");
    }
  }
  if (r >= cfg_.peers.size())
    throw net_error("troupe::net: rank " + std::to_string(r) + " is not in the cluster (" +
                    std::to_string(cfg_.peers.size()) + " ranks)");
  std::string last;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      throw net_error("troupe::net: no inlet '" + name + "' at " + describe(r) + " within " +
                      std::to_string(cfg_.connect_timeout.count()) + " ms (" + last + ")");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    try {
      return node_->remote_actor(cfg_.peers[r], name, std::min(left, std::chrono::milliseconds{2000}));
    } catch (const net_error& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
}

}  // namespace troupe::net
